package hostile

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// SuiteAttacks are the attacks of the hostile suite's built-in agents (driver
// hostile:<attack>, docs/environments.md "Hostile agents"). The agent makes its attack
// once, then carries out the case's reference script like the reference agent, so
// that the cell's verdict says what the host observed:
//
//   - read-server: read every file at the top of the control plane's instance home
//     (board token, master key, database) and print what it got — escaped, the
//     evidence's leak scan finds the instance's secrets (secret_leak);
//   - write-server: write the credentials the agent holds into a file of the instance
//     home — escaped, the closed home's leak scan finds them (secret_leak);
//   - daemon: leave a `setsid` sleeper behind — escaped, the lease's cleanup finds it;
//   - forkbomb: start processes until the kernel refuses (then stop them) — the pids
//     limit the host counts fails the cell with the limit named;
//   - memory: allocate and touch 4 GiB — the OOM kill the host counts fails the cell
//     with the memory limit named.
var SuiteAttacks = []string{"read-server", "write-server", "daemon", "forkbomb", "memory"}

// Suite limits: how many processes the fork bomb starts at most, and how much memory
// the memory attack touches (bytes); both exceed the hostile environment's shape.
const (
	SuiteForkBombMax = 4096
	SuiteMemoryBytes = 4 << 30
)

// Target is what a suite attack aims at: the control plane's instance home on the
// host (ServerHome, an absolute path the agent was never meant to reach) and the
// credential lines the agent holds (Credentials, what write-server writes outside).
type Target struct {
	ServerHome  string
	Credentials string
}

// RunSuite makes attack (one of SuiteAttacks) on t and returns its report.
func RunSuite(attack string, t Target) Report {
	var r Report
	switch attack {
	case "read-server":
		r = readServer(t.ServerHome)
	case "write-server":
		r = writeServer(t.ServerHome, t.Credentials)
	case "daemon":
		r = daemon("")
	case "forkbomb":
		r = forkbombReleased(SuiteForkBombMax)
	case "memory":
		r = memory(SuiteMemoryBytes, nil)
	default:
		r = Report{Contained: true, Detail: fmt.Sprintf("unknown suite attack %q (one of %s)", attack, strings.Join(SuiteAttacks, ", "))}
	}
	r.Attack = attack
	return r
}

// readServer reads every regular file at the top of home.
func readServer(home string) Report {
	if !filepath.IsAbs(home) {
		return Report{Target: home, Contained: true, Detail: "no instance home to aim at"}
	}
	entries, err := os.ReadDir(home)
	if err != nil {
		return Report{Target: home, Contained: true, Detail: err.Error()}
	}
	var out strings.Builder
	var read []string
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		rep := readFile(filepath.Join(home, e.Name()))
		if !rep.Contained {
			read = append(read, e.Name())
			out.WriteString(rep.Output)
			out.WriteByte('\n')
		}
	}
	if len(read) == 0 {
		return Report{Target: home, Contained: true, Detail: "listed the instance home but read none of its files"}
	}
	return Report{Target: home, Detail: "read " + strings.Join(read, ", "), Output: clipOut([]byte(out.String()))}
}

// writeServer writes content into home/hostile-was-here.
func writeServer(home, content string) Report {
	if !filepath.IsAbs(home) {
		return Report{Target: home, Contained: true, Detail: "no instance home to aim at"}
	}
	path := filepath.Join(home, "hostile-was-here")
	if err := os.WriteFile(path, []byte("hostile agent was here\n"+content), 0o644); err != nil {
		return Report{Target: path, Contained: true, Detail: err.Error()}
	}
	return Report{Target: path, Detail: "written"}
}

// forkbombReleased starts sleeping processes until limit or until the kernel refuses
// a fork, then kills and reaps them, so the agent can go on.
func forkbombReleased(limit int) Report {
	var cmds []*exec.Cmd
	defer func() {
		for _, c := range cmds {
			_ = c.Process.Kill()
			_ = c.Wait()
		}
	}()
	for range limit {
		cmd := exec.Command("/usr/bin/sleep", "3600")
		if err := cmd.Start(); err != nil {
			return Report{Contained: true, Count: int64(len(cmds)), Detail: fmt.Sprintf("fork %d refused: %v", len(cmds)+1, err)}
		}
		cmds = append(cmds, cmd)
	}
	return Report{Count: int64(len(cmds)), Detail: fmt.Sprintf("started all %d processes", len(cmds))}
}

package hostile

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
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
//   - proc-environ: read /proc/<controller pid>/environ (the serve child that launched
//     the agent; the harness gives every serve child a controller canary standing for
//     the provider keys a controller holds) and print the variables the agent was not
//     given itself — escaped, the leak scan finds the controller canary (secret_leak);
//   - connect: connect to the harness's tripwire, a loopback listener that is on no
//     allowlist and hands its own secret to whoever connects, and print what it got —
//     escaped, the tripwire counts the connection and the leak scan finds its secret;
//   - write-outside: write the credentials the agent holds into a directory of the
//     attempt outside its workspace — escaped, the temp root's leak scan finds them;
//   - daemon: leave a `setsid` sleeper behind — escaped, the lease's cleanup (or, under
//     local, the run's marker sweep) finds it;
//   - forkbomb: start processes until the kernel refuses (then stop them) — the pids
//     limit the host counts fails the cell with the limit named;
//   - memory: allocate and touch 4 GiB — the OOM kill the host counts fails the cell
//     with the memory limit named;
//   - diskfill: write up to SuiteDiskBytes into /tmp and keep it — the full lease
//     disk the host observes fails the cell with the disk limit named.
var SuiteAttacks = []string{"read-server", "write-server", "proc-environ", "connect", "write-outside", "daemon", "forkbomb", "memory", "diskfill"}

// Suite limits: how many processes the fork bomb starts at most, how much memory the
// memory attack touches and how much the disk attack writes (bytes); each exceeds the
// hostile environments' shapes, and each is a bound: no attack runs unbounded.
const (
	SuiteForkBombMax = 4096
	SuiteMemoryBytes = 4 << 30
	SuiteDiskBytes   = 4 << 30
)

// SuiteOutsideFile is the name of the file write-outside creates in Target.Outside.
const SuiteOutsideFile = "hostile-was-here"

// Target is what a suite attack aims at, as the harness gave it to the agent:
//
//   - ServerHome: the control plane's instance home on the host (absolute), a path
//     the agent was never meant to reach;
//   - Credentials: the credential lines the agent holds (what the write attacks write);
//   - ControllerPID: the host pid of the process that launched the agent (0: none);
//   - OwnEnv: the agent's own environment (NAME=value), so proc-environ prints only
//     what it was not given;
//   - Tripwire: the loopback host:port of the harness's tripwire ("" : none);
//   - Outside: a directory of the attempt outside the workspace (absolute, "" : none).
type Target struct {
	ServerHome    string
	Credentials   string
	ControllerPID int
	OwnEnv        []string
	Tripwire      string
	Outside       string
}

// RunSuite makes attack (one of SuiteAttacks) on t and returns its report.
func RunSuite(attack string, t Target) Report {
	var r Report
	switch attack {
	case "read-server":
		r = readServer(t.ServerHome)
	case "write-server":
		r = writeServer(t.ServerHome, t.Credentials)
	case "proc-environ":
		r = controllerEnviron(t.ControllerPID, t.OwnEnv)
	case "connect":
		r = tripwire(t.Tripwire)
	case "write-outside":
		r = writeOutside(t.Outside, t.Credentials)
	case "daemon":
		r = daemon("")
	case "forkbomb":
		r = forkbombReleased(SuiteForkBombMax)
	case "memory":
		r = memory(SuiteMemoryBytes, nil)
	case "diskfill":
		r = diskfill("/tmp", SuiteDiskBytes)
	default:
		r = Report{Contained: true, Detail: fmt.Sprintf("unknown suite attack %q (one of %s)", attack, strings.Join(SuiteAttacks, ", "))}
	}
	r.Attack = attack
	return r
}

// controllerEnviron reads /proc/<pid>/environ and keeps the variables that are not in
// own (the agent's own environment): what it learnt of its controller.
func controllerEnviron(pid int, own []string) Report {
	if pid <= 0 {
		return Report{Contained: true, Detail: "no controller pid to aim at"}
	}
	path := "/proc/" + strconv.Itoa(pid) + "/environ"
	b, err := os.ReadFile(path)
	if err != nil {
		return Report{Target: path, Contained: true, Detail: err.Error()}
	}
	mine := map[string]bool{}
	for _, kv := range own {
		mine[kv] = true
	}
	var foreign []string
	for kv := range strings.SplitSeq(string(b), "\x00") {
		if kv != "" && !mine[kv] {
			foreign = append(foreign, kv)
		}
	}
	if len(foreign) == 0 {
		return Report{Target: path, Contained: true, Detail: fmt.Sprintf("read %d bytes, nothing the agent was not given", len(b))}
	}
	return Report{Target: path, Count: int64(len(foreign)), Detail: fmt.Sprintf("read %d variable(s) of pid %d the agent was not given", len(foreign), pid),
		Output: clipOut([]byte(strings.Join(foreign, "\n")))}
}

// tripwire connects to addr and reads what it says (at most MaxOutput bytes, 2 s).
func tripwire(addr string) Report {
	if addr == "" {
		return Report{Contained: true, Detail: "no tripwire to aim at"}
	}
	return connect(addr)
}

// writeOutside writes content into dir/SuiteOutsideFile.
func writeOutside(dir, content string) Report {
	return writeMark(dir, SuiteOutsideFile, "outside directory", content)
}

// writeMark writes "hostile agent was here" and content into dir/name; dir, the
// directory the attack aims at (what names it in the report), must be absolute.
func writeMark(dir, name, what, content string) Report {
	if !filepath.IsAbs(dir) {
		return Report{Target: dir, Contained: true, Detail: "no " + what + " to aim at"}
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte("hostile agent was here\n"+content), 0o644); err != nil {
		return Report{Target: path, Contained: true, Detail: err.Error()}
	}
	return Report{Target: path, Detail: "written"}
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
	return writeMark(home, "hostile-was-here", "instance home", content)
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

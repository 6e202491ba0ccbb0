// Package hostile holds the built-in hostile agent: small attacks an untrusted agent
// could make on the machine it runs on (read the server's secrets, read the
// controller's environment through /proc, connect to an address it was not given,
// write outside its workspace, leave a daemon behind, fork-bomb, exhaust memory, fill
// the disk). `agentproof hostile <attack> [args]` runs one; the sandbox provider's
// tests run them inside real sandboxes, and they are the agents of the hostile suite
// (docs/environments.md "Hostile agents").
//
// An attack prints one JSON line (Report) and exits 0 when it was contained (blocked),
// 1 when it succeeded (the environment failed to contain it), 2 for bad arguments.
// What an attack says about itself is only its view: the tests and the suite judge
// containment by what the host observes (the secret absent from the output, no
// connection at the listener, the file absent on the host, the cgroup counters).
package hostile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Exit codes of an attack.
const (
	ExitContained = 0
	ExitEscaped   = 1
	ExitUsage     = 2
)

// Report is an attack's one-line account. Output holds at most MaxOutput bytes of
// what the attack obtained (a file's head, an environment block), so a leak is
// visible to whoever reads the agent's output.
type Report struct {
	Attack    string `json:"attack"`
	Target    string `json:"target,omitempty"`
	Contained bool   `json:"contained"`
	Detail    string `json:"detail"`
	Output    string `json:"output,omitempty"`
	Count     int64  `json:"count,omitempty"`
}

// MaxOutput bounds Report.Output.
const MaxOutput = 4096

// Attacks lists the attack names with their arguments.
var Attacks = []string{
	"read <path>", "proc-environ <pid> <variable-name>", "connect <host:port>", "reach <url> <expected-body-substring>", "post <url>",
	"write <path>", "write-fd <fd>", "daemon [wait <ready-file>]", "forkbomb <max-processes>", "memory <bytes>", "diskfill <dir> <bytes>",
	"facts", "term-grace <ready-file>", "sleeper",
}

// Run runs the attack args[0] with its arguments and returns the exit code.
func Run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintf(stderr, "usage: hostile <attack> [args]; attacks: %s\n", strings.Join(Attacks, ", "))
		return ExitUsage
	}
	var r Report
	if n, run, ok := textAttack(args[0]); ok {
		if len(args)-1 != n {
			fmt.Fprintf(stderr, "hostile %s: want %d argument(s), got %d\n", args[0], n, len(args)-1)
			return ExitUsage
		}
		r = run(args[1:], stdout)
	} else if r, ok = numberAttack(args, stdout, stderr); !ok {
		return ExitUsage
	}
	r.Attack = args[0]
	line, _ := json.Marshal(r)
	fmt.Fprintln(stdout, string(line))
	if r.Contained {
		return ExitContained
	}
	return ExitEscaped
}

// textAttack returns the attack name whose arguments are texts: how many it takes and
// the attack; ok is false for another name.
func textAttack(name string) (n int, run func(args []string, stdout io.Writer) Report, ok bool) {
	switch name {
	case "read":
		return 1, func(a []string, _ io.Writer) Report { return readFile(a[0]) }, true
	case "proc-environ":
		return 2, func(a []string, _ io.Writer) Report { return procEnviron(a[0], a[1]) }, true
	case "connect":
		return 1, func(a []string, _ io.Writer) Report { return connect(a[0]) }, true
	case "reach":
		return 2, func(a []string, _ io.Writer) Report { return reach(a[0], a[1]) }, true
	case "post":
		return 1, func(a []string, _ io.Writer) Report { return post(a[0]) }, true
	case "write":
		return 1, func(a []string, _ io.Writer) Report { return write(a[0]) }, true
	case "facts":
		return 0, func([]string, io.Writer) Report { return facts() }, true
	case "term-grace":
		return 1, func(a []string, w io.Writer) Report { return termGrace(a[0], w) }, true
	}
	return 0, nil, false
}

// numberAttack runs the attacks args[0] that take numbers (and daemon, whose
// arguments have a shape of their own; sleeper never returns). ok is false for bad
// arguments or an unknown attack, which it reports on stderr.
func numberAttack(args []string, stdout, stderr io.Writer) (r Report, ok bool) {
	bad := func() (Report, bool) {
		fmt.Fprintf(stderr, "hostile %s: bad arguments %q\n", args[0], args[1:])
		return Report{}, false
	}
	// last is the last of exactly n arguments, a whole number ≥ min.
	last := func(n int, min int64) (int64, bool) {
		if len(args)-1 != n {
			return 0, false
		}
		v, err := strconv.ParseInt(args[n], 10, 64)
		return v, err == nil && v >= min
	}
	switch args[0] {
	case "write-fd":
		if fd, ok := last(1, 0); ok {
			return writeFD(int(fd)), true
		}
		return bad()
	case "forkbomb":
		if n, ok := last(1, 1); ok {
			return forkbomb(int(n)), true
		}
		return bad()
	case "memory":
		if n, ok := last(1, 1); ok {
			return memory(n, stdout), true
		}
		return bad()
	case "diskfill":
		if n, ok := last(2, 1); ok {
			return diskfill(args[1], n), true
		}
		return bad()
	case "daemon":
		switch {
		case len(args) == 1:
			return daemon(""), true
		case len(args) == 3 && args[1] == "wait":
			return daemon(args[2]), true
		}
		fmt.Fprintln(stderr, "usage: hostile daemon [wait <ready-file>]")
		return r, false
	case "sleeper":
		for {
			time.Sleep(time.Hour)
		}
	}
	fmt.Fprintf(stderr, "hostile: unknown attack %q; attacks: %s\n", args[0], strings.Join(Attacks, ", "))
	return r, false
}

func clipOut(b []byte) string {
	if len(b) > MaxOutput {
		b = b[:MaxOutput]
	}
	return string(b)
}

// readFile tries to read a file (a server's board token, master key, database).
func readFile(path string) Report {
	f, err := os.Open(path)
	if err != nil {
		return Report{Target: path, Contained: true, Detail: err.Error()}
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxOutput))
	if err != nil {
		return Report{Target: path, Contained: true, Detail: err.Error()}
	}
	return Report{Target: path, Detail: fmt.Sprintf("read %d bytes", len(b)), Output: clipOut(b)}
}

// procEnviron tries to read another process's environment (the controller's, where
// --live provider keys live) and looks for variable name in it.
func procEnviron(pid, name string) Report {
	path := "/proc/" + pid + "/environ"
	b, err := os.ReadFile(path)
	if err != nil {
		return Report{Target: path, Contained: true, Detail: err.Error()}
	}
	cmdline, _ := os.ReadFile("/proc/" + pid + "/cmdline")
	found := bytes.Contains(append([]byte{0}, b...), []byte("\x00"+name+"="))
	r := Report{Target: path, Contained: !found, Output: clipOut(bytes.ReplaceAll(b, []byte{0}, []byte{'\n'})),
		Detail: fmt.Sprintf("pid %s is %q; %s %s", pid, strings.ReplaceAll(string(cmdline), "\x00", " "), name, map[bool]string{true: "found", false: "absent"}[found])}
	return r
}

// connect tries a TCP connection to an address it was not given.
func connect(addr string) Report {
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		return Report{Target: addr, Contained: true, Detail: err.Error()}
	}
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	_, _ = c.Write([]byte("GET / HTTP/1.0\r\n\r\n"))
	b, _ := io.ReadAll(io.LimitReader(c, MaxOutput))
	_ = c.Close()
	return Report{Target: addr, Detail: "connected", Output: clipOut(b)}
}

// reach is the positive probe: an allowlisted HTTP endpoint must answer 200 with a
// body containing want. Contained here means "reached as allowed" (exit 0).
func reach(url, want string) Report {
	cl := &http.Client{Timeout: 5 * time.Second}
	resp, err := cl.Get(url)
	if err != nil {
		return Report{Target: url, Detail: err.Error()}
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, MaxOutput))
	ok := resp.StatusCode == http.StatusOK && strings.Contains(string(b), want)
	return Report{Target: url, Contained: ok, Detail: fmt.Sprintf("status %d", resp.StatusCode), Output: clipOut(b)}
}

// post POSTs an empty JSON object to url, a route the agent must not be able to use (a
// harness control route): contained when the request fails or is refused (4xx, 5xx).
func post(url string) Report {
	cl := &http.Client{Timeout: 5 * time.Second}
	resp, err := cl.Post(url, "application/json", strings.NewReader("{}"))
	if err != nil {
		return Report{Target: url, Contained: true, Detail: err.Error()}
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, MaxOutput))
	return Report{Target: url, Contained: resp.StatusCode >= 400, Detail: fmt.Sprintf("status %d", resp.StatusCode), Output: clipOut(b)}
}

// write tries to create a file outside its workspace.
func write(path string) Report {
	err := os.WriteFile(path, []byte("hostile agent was here\n"), 0o644)
	if err != nil {
		return Report{Target: path, Contained: true, Detail: err.Error()}
	}
	return Report{Target: path, Detail: "written"}
}

// writeFD writes a line to an inherited descriptor (contained when there is none).
func writeFD(fd int) Report {
	f := os.NewFile(uintptr(fd), "inherited")
	if _, err := f.Write([]byte("hostile agent was here\n")); err != nil {
		return Report{Target: strconv.Itoa(fd), Contained: true, Detail: err.Error()}
	}
	return Report{Target: strconv.Itoa(fd), Detail: "written"}
}

// daemon starts a sleeper in a new session (setsid: out of the process group the
// worker kills), and exits at once, or, with a ready file, writes that file and keeps
// running beside it.
func daemon(ready string) Report {
	self, err := os.Executable()
	if err != nil {
		return Report{Contained: true, Detail: err.Error()}
	}
	cmd := exec.Command(self, "hostile", "sleeper") // `agentproof hostile sleeper` (test binaries dispatch alike)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return Report{Contained: true, Detail: "starting the daemon: " + err.Error()}
	}
	r := Report{Detail: fmt.Sprintf("daemon pid %d left running in its own session", cmd.Process.Pid), Count: int64(cmd.Process.Pid)}
	if ready != "" {
		if err := os.WriteFile(ready, []byte(strconv.Itoa(cmd.Process.Pid)), 0o644); err != nil {
			return Report{Contained: true, Detail: "writing the ready file: " + err.Error()}
		}
		for {
			time.Sleep(time.Hour)
		}
	}
	return r
}

// forkbomb starts sleeping processes until max or until the kernel refuses a fork.
func forkbomb(limit int) Report {
	sleep := "/usr/bin/sleep"
	var n int64
	for range limit {
		cmd := exec.Command(sleep, "3600")
		if err := cmd.Start(); err != nil {
			return Report{Contained: true, Count: n, Detail: fmt.Sprintf("fork %d refused: %v", n+1, err)}
		}
		n++
	}
	return Report{Count: n, Detail: fmt.Sprintf("started all %d processes", n)}
}

// memory allocates and touches size bytes in 16 MiB chunks. Under a smaller memory
// limit the kernel kills it before it can report (the host counts the OOM kill).
func memory(size int64, progress io.Writer) Report {
	const chunk = 16 << 20
	var keep [][]byte
	var got int64
	for got < size {
		b := make([]byte, chunk)
		for i := 0; i < len(b); i += 4096 {
			b[i] = 1
		}
		keep = append(keep, b)
		got += chunk
	}
	_ = keep
	return Report{Count: got, Detail: fmt.Sprintf("allocated and touched %d bytes", got)}
}

// diskfill writes size bytes into dir/fill; contained when the disk fills first.
func diskfill(dir string, size int64) Report {
	path := filepath.Join(dir, "fill")
	f, err := os.Create(path)
	if err != nil {
		return Report{Target: path, Contained: true, Detail: err.Error()}
	}
	defer f.Close()
	buf := make([]byte, 1<<20)
	var n int64
	for n < size {
		w, err := f.Write(buf[:min(int64(len(buf)), size-n)])
		n += int64(w)
		if err != nil {
			return Report{Target: path, Contained: errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT), Count: n, Detail: err.Error()}
		}
	}
	return Report{Target: path, Count: n, Detail: fmt.Sprintf("wrote all %d bytes", n)}
}

// facts reports what the agent sees of its machine: ids, host name, PID 1, the
// processes it can see, its cgroup and network interfaces.
func facts() Report {
	host, _ := os.Hostname()
	pid1, _ := os.ReadFile("/proc/1/cmdline")
	ents, _ := os.ReadDir("/proc")
	var pids []string
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err == nil {
			pids = append(pids, e.Name())
		}
	}
	var ifs []string
	if list, err := net.Interfaces(); err == nil {
		for _, i := range list {
			ifs = append(ifs, i.Name)
		}
	}
	cg, _ := os.ReadFile("/proc/self/cgroup")
	var nnp string
	if st, err := os.ReadFile("/proc/self/status"); err == nil {
		for _, l := range strings.Split(string(st), "\n") {
			if strings.HasPrefix(l, "NoNewPrivs:") || strings.HasPrefix(l, "CapEff:") {
				nnp += strings.Join(strings.Fields(l), " ") + "; "
			}
		}
	}
	var fds []string
	if list, err := os.ReadDir("/proc/self/fd"); err == nil {
		for _, e := range list {
			target, _ := os.Readlink("/proc/self/fd/" + e.Name())
			if strings.HasPrefix(target, "pipe:") {
				target = "pipe"
			}
			fds = append(fds, e.Name()+":"+target)
		}
	}
	out := fmt.Sprintf("uid=%d gid=%d pid=%d host=%s pid1=%q pids=%s ifaces=%s cwd=%s status=%s fds=%s cgroup=%s",
		os.Getuid(), os.Getgid(), os.Getpid(), host, strings.ReplaceAll(string(pid1), "\x00", " "), strings.Join(pids, ","),
		strings.Join(ifs, ","), mustCwd(), nnp, strings.Join(fds, ","), strings.ReplaceAll(strings.TrimSpace(string(cg)), "\n", ","))
	return Report{Contained: true, Detail: "facts", Output: out}
}

func mustCwd() string {
	d, _ := os.Getwd()
	return d
}

// termGrace waits for SIGTERM (writing ready once its handler is in place) and exits
// 0 right after: it proves that a stop signal reaches the agent and that it gets its
// grace period.
func termGrace(ready string, out io.Writer) Report {
	c := make(chan os.Signal, 1)
	signal.Notify(c, syscall.SIGTERM)
	if err := os.WriteFile(ready, nil, 0o644); err != nil {
		return Report{Detail: "writing the ready file: " + err.Error()}
	}
	fmt.Fprintln(out, `{"attack":"term-grace","detail":"waiting for SIGTERM"}`)
	select {
	case <-c:
		return Report{Contained: true, Detail: "got SIGTERM; exiting cleanly"}
	case <-time.After(time.Minute):
		return Report{Detail: "no SIGTERM within a minute"}
	}
}

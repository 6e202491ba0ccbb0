package attempt

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/agentproof/agentproof/api"
	"github.com/agentproof/agentproof/worker"
)

// StopGrace is how long a stopped child (an `agentproof serve` instance) gets between
// SIGTERM and SIGKILL (docs/ARCHITECTURE.md "Cancellation"). A serve child bounds its
// own shutdown (stopping its agents — SIGTERM, SIGKILL, the exit confirmed, escaped
// descendants swept, output closed: up to about 8 s per agent by the worker's
// graces —, draining requests, closing the store) to 10 s (`agentproof serve`'s
// drain timeout); the grace exceeds that, so a server that is shutting down as it
// should on a loaded machine is not killed (docs/processes.md "Stopping the server").
const StopGrace = 15 * time.Second

// serveReadyTimeout bounds how long a serve child may take to print its ready line.
const serveReadyTimeout = 30 * time.Second

// maxServeLog bounds the serve child's stderr kept as evidence, in bytes.
const maxServeLog = 64 << 10

// boardTokenFile is the file in the instance home holding the board token (package
// server's BoardTokenFile; kept as a literal so that campaign does not import server).
const boardTokenFile = api.BoardTokenFile

// serveChild is one running `agentproof serve` process on a loopback port with its own
// instance home. It is not safe for concurrent use.
type serveChild struct {
	cmd    *exec.Cmd
	addr   string
	token  string
	grace  time.Duration // SIGTERM → SIGKILL; StopGrace
	done   chan struct{} // closed when Wait returned
	err    error         // Wait's error, valid after done
	stderr *boundedBuffer
}

// boundedBuffer keeps the first max bytes written to it and counts the rest.
type boundedBuffer struct {
	mu      sync.Mutex
	b       []byte
	max     int
	dropped int64
}

func (w *boundedBuffer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	room := w.max - len(w.b)
	if room > 0 {
		n := min(room, len(p))
		w.b = append(w.b, p[:n]...)
		w.dropped += int64(len(p) - n)
	} else {
		w.dropped += int64(len(p))
	}
	return len(p), nil
}

// Bytes returns a copy of what was kept, with a note of what was dropped.
func (w *boundedBuffer) Bytes() []byte {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := append([]byte(nil), w.b...)
	if w.dropped > 0 {
		out = append(out, fmt.Sprintf("\n[agentproof: %d more bytes dropped]\n", w.dropped)...)
	}
	return out
}

// serveGOGC is the serve child's GOGC: an attempt's server lives for one cell with a
// small heap, which the default (100) collects many times over for nothing; 400
// saves about 8% of a fixture cell's CPU (docs/performance.md) for a few MB of heap.
const serveGOGC = "GOGC=400"

// serveEnv is the explicit environment of a serve child: nothing of the parent's
// (PREAMBLE: child processes get an explicit environment), HOME and TMPDIR inside the
// attempt's private root, serveGOGC (agent processes get an explicit environment of
// their own from the server, without it) and the attempt's controller canary
// (ControllerCanaryKey) when it has one.
func serveEnv(root, controllerCanary string) []string {
	env := []string{"PATH=/usr/bin:/bin", "LANG=C", "TZ=UTC", serveGOGC, "HOME=" + root, "TMPDIR=" + filepath.Join(root, "tmp")}
	if controllerCanary != "" {
		env = append(env, ControllerCanaryKey+"="+controllerCanary)
	}
	return env
}

// startServe starts `<exe> serve --home home --addr 127.0.0.1:0 --ephemeral
// --process-marker marker <flags>` (no shell, its own process group, SIGKILL if this
// process dies; the home is the attempt's, thrown away with it, so nothing in it is
// fsynced; every agent process the server launches carries the attempt's marker, see
// worker.SweepMarked),
// waits for its ready line
// {"addr","pid"} and reads the board token from the home. Errors name what failed;
// their text classifies as transient infrastructure ("server … failed").
func startServe(ctx context.Context, exe, home, root, marker, controllerCanary string, flags []string) (*serveChild, error) {
	args := []string{"serve", "--home", home, "--addr", "127.0.0.1:0", "--ephemeral"}
	if marker != "" {
		args = append(args, "--process-marker", marker)
	}
	args = append(args, flags...)
	cmd := exec.Command(exe, args...)
	cmd.Args[0] = "agentproof" // argv[0] names the command (a test binary dispatches on it)
	cmd.Env = serveEnv(root, controllerCanary)
	cmd.Dir = root
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("server start failed: %w", err)
	}
	s := &serveChild{cmd: cmd, grace: StopGrace, done: make(chan struct{}), stderr: &boundedBuffer{max: maxServeLog}}
	cmd.Stderr = s.stderr
	// Forked from the process's fork thread: its parent-death signal must not fire
	// when some other thread ends (a sandbox launch ends the thread it forked from).
	if err := worker.OnForkThread(cmd.Start); err != nil {
		return nil, fmt.Errorf("server start failed: %w", err)
	}
	lines := make(chan string, 1)
	go func() {
		r := bufio.NewReader(stdout)
		line, _ := r.ReadString('\n')
		lines <- line
		_, _ = io.Copy(io.Discard, r) // keep the pipe drained
	}()
	go func() {
		s.err = cmd.Wait()
		close(s.done)
	}()
	timer := time.NewTimer(serveReadyTimeout)
	defer timer.Stop()
	var line string
	select {
	case line = <-lines:
	case <-ctx.Done():
		_, _ = s.stop()
		return nil, fmt.Errorf("server start interrupted: %w", ctx.Err())
	case <-timer.C:
		_, _ = s.stop()
		return nil, fmt.Errorf("server start timed out after %s", serveReadyTimeout)
	}
	var ready struct {
		Addr string `json:"addr"`
		PID  int    `json:"pid"`
	}
	if err := json.Unmarshal([]byte(line), &ready); err != nil || ready.Addr == "" {
		_, _ = s.stop()
		<-s.done
		return nil, fmt.Errorf("server start failed: no ready line (stderr: %s)", strings.TrimSpace(string(s.stderr.Bytes())))
	}
	host, _, err := net.SplitHostPort(ready.Addr)
	if err != nil || !net.ParseIP(host).IsLoopback() {
		_, _ = s.stop()
		return nil, fmt.Errorf("server start failed: ready address %q is not a loopback address", ready.Addr)
	}
	tok, err := os.ReadFile(filepath.Join(home, boardTokenFile))
	if err != nil {
		_, _ = s.stop()
		return nil, fmt.Errorf("server start failed: reading the board token: %w", err)
	}
	s.addr, s.token = ready.Addr, strings.TrimSpace(string(tok))
	return s, nil
}

// URL is the child's base URL.
func (s *serveChild) URL() string { return "http://" + s.addr }

// stop sends SIGTERM to the child's process group, SIGKILL after its grace, and waits
// for the child. It reports whether the child had to be killed (killed: a harness
// note, not a cleanup failure, once its exit is confirmed — the agent processes it
// may have left are the attempt's marker sweep's) and returns an error when processes
// of its group survived it; a second call returns the first call's error and no kill.
func (s *serveChild) stop() (killed bool, err error) {
	pgid := s.cmd.Process.Pid
	select {
	case <-s.done:
		return false, s.survivors(pgid)
	default:
	}
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	timer := time.NewTimer(s.grace)
	defer timer.Stop()
	select {
	case <-s.done:
	case <-timer.C:
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		killed = true
		<-s.done
		// The whole group was sent SIGKILL: its members are dying, not surviving.
		groupGone(pgid, groupKillConfirm)
	}
	return killed, s.survivors(pgid)
}

// exited describes how the child ended when it has exited though nobody stopped it
// ("signal: killed", "exit status 2"); "" while it runs.
func (s *serveChild) exited() string {
	select {
	case <-s.done:
	default:
		return ""
	}
	if s.cmd.ProcessState != nil {
		return s.cmd.ProcessState.String()
	}
	if s.err != nil {
		return s.err.Error()
	}
	return "exited"
}

// kill sends SIGKILL to the child alone (kill -9 of the server: no SIGTERM, no
// grace, nothing of its group signalled) and waits for its exit. The agent processes
// it launched die with it (their parent-death signal); what is left of its process
// group after groupKillConfirm is killed and reported. A child that already ended is
// an error (it was not running to be killed).
func (s *serveChild) kill() error {
	select {
	case <-s.done:
		return errors.New("the server had already exited")
	default:
	}
	pid := s.cmd.Process.Pid
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		return fmt.Errorf("SIGKILL to the server (pid %d): %w", pid, err)
	}
	<-s.done
	groupGone(pid, groupKillConfirm)
	return s.survivors(pid)
}

// groupKillConfirm bounds how long stop waits for the members of a process group it
// sent SIGKILL to to be gone (reaped by whoever adopted them).
const groupKillConfirm = 2 * time.Second

// groupGone polls until no live process is left in group pgid (a zombie is dead:
// worker.GroupAlive) or d passed, and reports whether the group is gone.
func groupGone(pgid int, d time.Duration) bool {
	for deadline := time.Now().Add(d); ; time.Sleep(10 * time.Millisecond) {
		if !worker.GroupAlive(pgid) {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
	}
}

// survivors kills what is left alive of the child's process group and reports it;
// zombies waiting to be reaped are not survivors.
func (s *serveChild) survivors(pgid int) error {
	if worker.GroupAlive(pgid) {
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		return fmt.Errorf("processes of the server's group %d outlived it and were killed", pgid)
	}
	return nil
}

// masterKeyFile is the instance home file holding the master key (api.MasterKeyFile).
const masterKeyFile = api.MasterKeyFile

// instanceSecrets returns the instance's own generated secrets once its serve child is
// ready: the board token, the master key read from the home (raw, hex and base64
// forms) and the run-token key derived from it (api.RunTokenKey, same forms). Error:
// the master key cannot be read.
func instanceSecrets(home, boardToken string) ([]string, error) {
	master, err := os.ReadFile(filepath.Join(home, masterKeyFile))
	if err != nil {
		return nil, fmt.Errorf("reading the master key: %w", err)
	}
	out := []string{boardToken}
	for _, k := range [][]byte{master, api.RunTokenKey(master)} {
		out = append(out, string(k), hex.EncodeToString(k), base64.StdEncoding.EncodeToString(k),
			base64.RawStdEncoding.EncodeToString(k), base64.RawURLEncoding.EncodeToString(k))
	}
	return out, nil
}

// ownSecretFile reports whether rel (relative to home) is one of the files holding an
// instance secret by design — board.token or master.key as a regular file of mode
// 0600 — which the persisted-state leak scan does not count.
func ownSecretFile(home, rel string) bool {
	if rel != boardTokenFile && rel != masterKeyFile {
		return false
	}
	fi, err := os.Lstat(filepath.Join(home, rel))
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm() == 0o600
}

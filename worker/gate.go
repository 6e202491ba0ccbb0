package worker

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// The admission gate of the guarded path. A guarded child is
// started as
//
//	agentproof fixture-child --gate <fence-dir> <fixture> <lifetime-ms>
//
// with the fence identity in GateEnv and the write end of the control pipe as fd
// GateControlFD. Before any fixture code runs, RunGate reads and deletes GateEnv, takes
// the fence (an exclusive flock on the fence file, waiting at most GateWaitMS), and
// writes AdmissionRecord(nonce) on the control pipe; the fixture program then writes
// PayloadRecord(nonce) when it starts, and the control pipe is closed. A refusal writes
// GateRefusalPrefix + reason and exits GateRefusedExit. The fence stays held until the
// process ends.

// Gate constants.
const (
	// GateEnv carries the fence identity (its canonical JSON label) to the gate, which
	// deletes it before any fixture code runs.
	GateEnv = "SF_FIXTURE_GATE_FENCE"
	// GateRefusedExit is the gate's exit code on refusal; it is distinct from every Exit*
	// code and is never a fixture outcome.
	GateRefusedExit = 123
	// GateWaitMS is how long the gate waits for the fence, in milliseconds.
	GateWaitMS = 2_000
	// GateFlag selects the gate in `fixture-child`: the gate runs before any
	// fixture code.
	GateFlag = "--gate"
	// GateRefusalPrefix starts a refusal record on the control pipe.
	GateRefusalPrefix = "sf-fixture-gate: refused: "
	// GateControlFD is the control pipe's descriptor in the child.
	GateControlFD = 3
	// MaxControlBytes bounds everything read from the control pipe (MAX_CONTROL_BYTES).
	MaxControlBytes = 256
)

// AdmissionRecord returns "sf-fixture-gate/1 admitted <nonce>\n".
func AdmissionRecord(nonce string) string { return "sf-fixture-gate/1 admitted " + nonce + "\n" }

// PayloadRecord returns "sf-fixture-gate/1 payload <nonce>\n".
func PayloadRecord(nonce string) string { return "sf-fixture-gate/1 payload " + nonce + "\n" }

// RunGate is the guarded child's entry: args are what follows `fixture-child`, starting
// with GateFlag (`--gate <fence-dir> <fixture> <lifetime-ms>`); control is the control
// pipe (fd GateControlFD), or nil when that descriptor is not open. It must run in a
// process of its own: it changes the process environment (deletes GateEnv) and keeps the
// fence locked until the process exits. It returns the exit code: GateRefusedExit on a
// refusal, otherwise RunChild's.
func RunGate(args []string, control *os.File, stdin io.Reader, stdout, stderr io.Writer) int {
	label, hadLabel := os.LookupEnv(GateEnv)
	_ = os.Unsetenv(GateEnv) // deleted before any fixture code runs
	refuse := func(format string, a ...any) int {
		reason := strings.ReplaceAll(fmt.Sprintf(format, a...), "\n", " ")
		rec := GateRefusalPrefix + reason
		if len(rec) > MaxControlBytes-1 {
			rec = rec[:MaxControlBytes-1]
		}
		if control != nil {
			_, _ = io.WriteString(control, rec+"\n")
			_ = control.Close()
		}
		return GateRefusedExit
	}
	if control == nil {
		return refuse("no control pipe on fd %d", GateControlFD)
	}
	if len(args) != 4 || args[0] != GateFlag {
		return refuse("usage: fixture-child %s <fence-dir> <fixture> <lifetime-ms>", GateFlag)
	}
	if !hadLabel {
		return refuse("%s is not set", GateEnv)
	}
	id, err := parseLabel([]byte(label))
	if err != nil {
		return refuse("%s: %v", GateEnv, err)
	}
	grant := args[1]
	if filepath.Dir(id.Path) != grant {
		return refuse("the fence %s is outside the granted directory %s", id.Path, grant)
	}
	if _, err := gateHoldFence(id, GateWaitMS*time.Millisecond); err != nil {
		return refuse("%v", err)
	}
	if _, err := io.WriteString(control, AdmissionRecord(id.Nonce)); err != nil {
		return refuse("writing the admission record: %v", err)
	}
	started := func() {
		_, _ = io.WriteString(control, PayloadRecord(id.Nonce))
		_ = control.Close() // fixture code never sees the control pipe
	}
	return runChild(args[2:], stdin, stdout, stderr, os.Environ(), started)
}

// gateHoldFence takes the execution lock of the fence:
// the fence directory must be dedicated, the fence file's label must equal id, and the
// exclusive flock on it must be free within wait. The returned file stays open (and
// locked) for the rest of the process.
func gateHoldFence(id FenceIdentity, wait time.Duration) (*os.File, error) {
	if err := checkDedicatedFenceDirectory(id); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(id.Path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return nil, fmt.Errorf("opening the fence: %w", err)
	}
	deadline := time.Now().Add(wait)
	for {
		err := flockNB(f)
		if err == nil {
			break
		}
		if err != syscall.EWOULDBLOCK {
			_ = f.Close()
			return nil, fmt.Errorf("locking the fence: %w", err)
		}
		if time.Now().After(deadline) {
			_ = f.Close()
			return nil, fmt.Errorf("the fence is held by another process (waited %d ms)", wait.Milliseconds())
		}
		time.Sleep(20 * time.Millisecond)
	}
	got, err := readLabel(f)
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	if got != id {
		_ = f.Close()
		return nil, fmt.Errorf("the fence is labelled for attempt %s nonce %s, not this identity", clipText(got.AttemptID, 64), got.Nonce)
	}
	return f, nil
}

// controlVerdict reads what the control pipe carried and returns "" when it was exactly
// AdmissionRecord(nonce) + PayloadRecord(nonce), and otherwise the collector error that
// names what happened. overflow means more than MaxControlBytes
// arrived; open means the pipe never reached end-of-file.
func controlVerdict(data []byte, overflow, open bool, nonce string) string {
	admission, payload := AdmissionRecord(nonce), PayloadRecord(nonce)
	switch {
	case overflow:
		return fmt.Sprintf("gate: malformed control records (more than %d bytes)", MaxControlBytes)
	case string(data) == admission+payload && !open:
		return ""
	case bytes.HasPrefix(data, []byte(GateRefusalPrefix)):
		reason := strings.TrimSuffix(string(data[len(GateRefusalPrefix):]), "\n")
		return "gate: refused: " + clipText(strings.ToValidUTF8(reason, "?"), 240)
	case len(data) == 0 && !open:
		return "gate: the process died before admission (no control record)"
	case string(data) == admission && !open:
		return "gate: the fixture program was never confirmed to start (admission without a payload record)"
	case open:
		return fmt.Sprintf("gate: the control pipe stayed open after the run (%d bytes: %q)", len(data), clipText(string(data), 80))
	default:
		return fmt.Sprintf("gate: malformed control records %q", clipText(strings.ToValidUTF8(string(data), "?"), 120))
	}
}

// controlReader collects at most MaxControlBytes+1 bytes from the control pipe's read end.
type controlReader struct {
	data     []byte
	overflow bool
	done     chan struct{}
}

func readControl(r *os.File) *controlReader {
	c := &controlReader{done: make(chan struct{})}
	go func() {
		defer close(c.done)
		buf := make([]byte, MaxControlBytes+1)
		n := 0
		for n < len(buf) {
			k, err := r.Read(buf[n:])
			n += k
			if err != nil {
				break
			}
		}
		if n > MaxControlBytes {
			c.overflow = true
			n = MaxControlBytes
		}
		c.data = buf[:n]
	}()
	return c
}

// ControlPipe returns descriptor GateControlFD of the current process as a file when it
// is an open pipe (as RunGuarded passes it), and nil otherwise.
func ControlPipe() *os.File {
	var st syscall.Stat_t
	if err := syscall.Fstat(GateControlFD, &st); err != nil || st.Mode&syscall.S_IFMT != syscall.S_IFIFO {
		return nil
	}
	return os.NewFile(GateControlFD, "control")
}

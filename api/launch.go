package api

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// LaunchFacts is what the heartbeat runner observed launching one run's agent process
// (docs/ARCHITECTURE.md "Observed facts"), recorded in HeartbeatRun.Launch. Matchers
// and the profile's runtime metadata check grade these facts, never the catalog's
// declarations:
//
//   - Driver: the driver the runner launched (the agent's adapterConfig driver);
//     AdapterType: the adapter kind that driver is (fixture, agentproof_builtin,
//     codex_local, opencode_local, claude_local, exec); Provider: who served the model
//     ("agentproof" for agents without one, "scripted" for the attempt's scripted model
//     on a loopback address, else the host of the live provider's base URL).
//   - CLIName, CLIVersion: the agent CLI's name and its version (major.minor.patch);
//     VersionSource says where the version was read: the package.json of the npm
//     package that ships the binary, found next to or above it ("package.json of
//     <name>: <version as written>"), or, when there is none, "--version": the first
//     version number the binary printed for `<binary> --version`, run bounded with an
//     environment of its own. The binary's SHA-256 pins the file itself.
//   - Binary: the absolute path of the executable launched; BinarySHA256 the SHA-256
//     (lower-case hex) of the file opened before the launch.
//   - Argv: the argv shape: argv[0]'s base name, flags kept up to "=", every other
//     argument replaced by "<value>", so that no secret or prompt text is stored.
//   - RuntimeMode: "native" (the runner opens every run through the native run
//     protocol: a checkout with a session, native events, a native completion).
//   - EnvironmentID: the control-plane environment the run executed in;
//     ExecutionTarget its kind as a target: local (the only kind this runner serves).
//   - PID: the process id; ProcessStartTicks: its start time in clock ticks since boot
//     (/proc/<pid>/stat field 22), read right after the start, so that a pid can be
//     told from a later process reusing it.
//   - Problems: facts that could not be observed, with why (the version probe timed
//     out, /proc could not be read).
type LaunchFacts struct {
	Driver            string   `json:"driver"`
	AdapterType       string   `json:"adapterType"`
	Provider          string   `json:"provider"`
	CLIName           string   `json:"cliName,omitempty"`
	CLIVersion        string   `json:"cliVersion,omitempty"`
	VersionSource     string   `json:"versionSource,omitempty"`
	Binary            string   `json:"binary"`
	BinarySHA256      string   `json:"binarySha256,omitempty"`
	Argv              []string `json:"argv"`
	RuntimeMode       string   `json:"runtimeMode"`
	EnvironmentID     string   `json:"environmentId"`
	ExecutionTarget   string   `json:"executionTarget"`
	PID               int      `json:"pid,omitempty"`
	ProcessStartTicks uint64   `json:"processStartTicks,omitempty"`
	Problems          []string `json:"problems,omitempty"`
}

// KnownDigest is the SHA-256 (lower-case hex) of one executable file version that the
// caller of `agentproof serve` observed by hashing it (`serve --known-digest`): the
// file version is its device, inode, size and modification and change times in
// nanoseconds, as fstat reports them. The runner uses it for LaunchFacts.BinarySHA256
// only when fstat of the file it opened for the launch reports the same version (a
// rewritten or replaced file changes its change time or its inode), and hashes the
// file itself otherwise; `agentproof run` hashes its own executable once per campaign
// instead of once per attempt (docs/performance.md "The launched binary's digest").
type KnownDigest struct {
	Dev, Ino         uint64
	Size             int64
	MtimeNs, CtimeNs int64
	SHA256           string
}

// String is the flag form DEV:INO:SIZE:MTIME_NS:CTIME_NS:SHA256 (decimal integers).
func (k KnownDigest) String() string {
	return fmt.Sprintf("%d:%d:%d:%d:%d:%s", k.Dev, k.Ino, k.Size, k.MtimeNs, k.CtimeNs, k.SHA256)
}

// ParseKnownDigest parses KnownDigest.String's form. Error: not six fields, a field
// that is not a decimal integer, a digest that is not 64 lower-case hex digits.
func ParseKnownDigest(s string) (KnownDigest, error) {
	f := strings.Split(s, ":")
	if len(f) != 6 {
		return KnownDigest{}, fmt.Errorf("known digest %q: want DEV:INO:SIZE:MTIME_NS:CTIME_NS:SHA256", s)
	}
	var k KnownDigest
	var err error
	if k.Dev, err = strconv.ParseUint(f[0], 10, 64); err != nil {
		return KnownDigest{}, fmt.Errorf("known digest %q: device: %w", s, err)
	}
	if k.Ino, err = strconv.ParseUint(f[1], 10, 64); err != nil {
		return KnownDigest{}, fmt.Errorf("known digest %q: inode: %w", s, err)
	}
	for i, p := range []*int64{&k.Size, &k.MtimeNs, &k.CtimeNs} {
		if *p, err = strconv.ParseInt(f[2+i], 10, 64); err != nil {
			return KnownDigest{}, fmt.Errorf("known digest %q: field %d: %w", s, 3+i, err)
		}
	}
	if len(f[5]) != 64 || strings.Trim(f[5], "0123456789abcdef") != "" {
		return KnownDigest{}, fmt.Errorf("known digest %q: the SHA-256 must be 64 lower-case hex digits", s)
	}
	k.SHA256 = f[5]
	return k, nil
}

// HashExecutable opens path, hashes it (SHA-256) and returns the digest with the file
// version fstat reported before and after the hash. Error: the file cannot be opened,
// examined or read, or it changed while it was hashed.
func HashExecutable(path string) (KnownDigest, error) {
	return HashExecutableContext(context.Background(), path)
}

// hashChunk is how much HashExecutableContext reads between looks at its context
// (bytes): about a millisecond of SHA-256.
const hashChunk = 1 << 20

// HashExecutableContext is HashExecutable ending early, with ctx's error, once ctx is
// done.
func HashExecutableContext(ctx context.Context, path string) (KnownDigest, error) {
	f, err := os.Open(path)
	if err != nil {
		return KnownDigest{}, err
	}
	defer f.Close()
	before, err := FileVersion(f)
	if err != nil {
		return KnownDigest{}, err
	}
	h := sha256.New()
	buf := make([]byte, hashChunk)
	for {
		if err := ctx.Err(); err != nil {
			return KnownDigest{}, fmt.Errorf("hashing %s: %w", path, err)
		}
		n, err := io.ReadFull(f, buf)
		h.Write(buf[:n])
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			break
		}
		if err != nil {
			return KnownDigest{}, fmt.Errorf("hashing %s: %w", path, err)
		}
	}
	after, err := FileVersion(f)
	if err != nil {
		return KnownDigest{}, err
	}
	if after != before {
		return KnownDigest{}, fmt.Errorf("hashing %s: the file changed while it was hashed", path)
	}
	before.SHA256 = hex.EncodeToString(h.Sum(nil))
	return before, nil
}

// FileVersion returns the file version of the open file f (fstat: device, inode,
// size, modification and change times) with an empty SHA256. Error: fstat failed.
func FileVersion(f *os.File) (KnownDigest, error) {
	var st syscall.Stat_t
	if err := syscall.Fstat(int(f.Fd()), &st); err != nil {
		return KnownDigest{}, fmt.Errorf("examining %s: %w", f.Name(), err)
	}
	return KnownDigest{Dev: uint64(st.Dev), Ino: st.Ino, Size: st.Size, MtimeNs: st.Mtim.Nano(), CtimeNs: st.Ctim.Nano()}, nil
}

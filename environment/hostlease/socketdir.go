package hostlease

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/agentproof/agentproof/environment"
	"golang.org/x/sys/unix"
)

// MaxSocketPath is the longest bridge socket path a sockaddr_un holds (108 bytes with
// the terminating NUL).
const MaxSocketPath = 107

// A lease's bridge sockets live in a short directory of their own,
// <base>/apf-<16 random hex digits> (mode 0711, root's; removed and confirmed gone by
// RemoveDirs), so that the socket path fits in MaxSocketPath whatever the depth of the
// lease root ($TMPDIR). The base is the first of socketBases that is a directory
// this process can write: /run (root's own tmpfs), else /tmp, /var/tmp or /dev/shm (a
// normal user's; /tmp is not world-writable everywhere). The longest socket path is
// 9+4+16+1+32+5 = 67 bytes.
const socketDirPrefix = "apf-"

var socketBases = []string{"/run", "/tmp", "/var/tmp", "/dev/shm"}

// ValidSocketDir reports whether dir has the shape MakeSocketDir gives.
func ValidSocketDir(dir string) bool {
	name, ok := strings.CutPrefix(filepath.Base(dir), socketDirPrefix)
	if !ok || len(name) != 16 || strings.Trim(name, "0123456789abcdef") != "" || filepath.Clean(dir) != dir {
		return false
	}
	return slices.Contains(socketBases, filepath.Dir(dir))
}

// SocketBase is the directory MakeSocketDir makes socket directories in: the first of
// socketBases this process can write. Errors: there is none.
func SocketBase() (string, error) {
	for _, b := range socketBases {
		if fi, err := os.Stat(b); err == nil && fi.IsDir() && unix.Access(b, unix.W_OK) == nil {
			return b, nil
		}
	}
	return "", fmt.Errorf("no writable directory for the bridge sockets (%s)", strings.Join(socketBases, ", "))
}

// MakeSocketDir creates a fresh lease socket directory (see socketDirPrefix), mode
// 0711. Errors: no base directory, or the directory's creation.
func MakeSocketDir() (string, error) {
	base, err := SocketBase()
	if err != nil {
		return "", err
	}
	id, err := environment.NewLeaseID() // 16 random hex digits after "lease-"
	if err != nil {
		return "", err
	}
	dir := filepath.Join(base, socketDirPrefix+strings.TrimPrefix(id, "lease-"))
	if err := os.Mkdir(dir, 0o700); err != nil { // fails on an existing name: never reuse one
		return "", fmt.Errorf("bridge socket directory: %w", err)
	}
	// The agent user must traverse it to reach its sockets (0600, its own); it can
	// neither list it nor create anything in it.
	if err := os.Chmod(dir, 0o711); err != nil {
		_ = os.Remove(dir)
		return "", fmt.Errorf("bridge socket directory: %w", err)
	}
	return dir, nil
}

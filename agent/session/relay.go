package session

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
)

// The permission relay: a protocol whose agent asks its permissions through a tool of
// the agentproof MCP server (Claude Code's --permission-prompt-tool) rather than on
// the session's own stream gets them over a Unix socket in the session's directory.
// The protocol listens (ListenRelay); the MCP server, a child of the agent, finds the
// socket's path in EnvPermissionRelay, connects once per request, writes the request
// as one JSON line and reads the answer as one JSON line (AskRelay). The socket
// carries what the agent's own stream would: requests from the agent's side, answers
// from the human's; its directory is the session's (0700).

// EnvPermissionRelay is the variable naming the permission relay socket of a session
// for its `agentproof mcp` server (an absolute path).
const EnvPermissionRelay = "AGENTPROOF_PERMISSION_RELAY"

// PermissionRelayFile is the relay socket's name in its session's directory.
const PermissionRelayFile = "permission-relay.sock"

// MaxRelayBytes bounds one request or answer on the relay (bytes, without the newline).
const MaxRelayBytes = 1 << 20

// unixPath returns a path to name in dir that fits a Unix socket address (at most 107
// bytes): path itself when it is short enough, else /proc/self/fd/<fd>/<name> through
// an O_PATH descriptor of dir, which close releases once the socket is bound or
// connected. Errors: dir cannot be opened.
func unixPath(path string) (addr string, release func(), err error) {
	if len(path) < 108 {
		return path, func() {}, nil
	}
	fd, err := unix.Open(filepath.Dir(path), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", nil, fmt.Errorf("opening %s: %w", filepath.Dir(path), err)
	}
	addr = "/proc/self/fd/" + strconv.Itoa(fd) + "/" + filepath.Base(path)
	if len(addr) >= 108 {
		_ = unix.Close(fd)
		return "", nil, fmt.Errorf("the socket name %q is too long", filepath.Base(path))
	}
	return addr, func() { _ = unix.Close(fd) }, nil
}

// ListenRelay listens on the Unix socket path (an earlier socket file there is
// removed first), which any user who can reach its directory may connect to. Errors:
// the socket could not be created.
func ListenRelay(path string) (net.Listener, error) {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	addr, release, err := unixPath(path)
	if err != nil {
		return nil, err
	}
	defer release()
	l, err := net.Listen("unix", addr)
	if err != nil {
		return nil, err
	}
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	// Connecting needs write permission on the socket: the agent may run as another
	// user (a sandbox lease's, which owns the session's directory). The directory
	// (0700) is what keeps everyone else out.
	if err := os.Chmod(path, 0o666); err != nil {
		_ = l.Close()
		return nil, err
	}
	return l, nil
}

// AskRelay sends request (one JSON value, no newline) to the relay at path and
// returns its one-line answer, waiting until it arrives or ctx ends. Errors: the
// relay cannot be reached, it closed the connection without an answer, the answer is
// longer than MaxRelayBytes, ctx ended.
func AskRelay(ctx context.Context, path string, request []byte) ([]byte, error) {
	if len(request) > MaxRelayBytes || bytes.ContainsRune(request, '\n') {
		return nil, errors.New("the permission request is not one line of at most 1 MiB")
	}
	addr, release, err := unixPath(path)
	if err != nil {
		return nil, err
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", addr)
	release()
	if err != nil {
		return nil, fmt.Errorf("reaching the permission relay: %w", err)
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { _ = conn.Close() })
	defer stop()
	if _, err := conn.Write(append(request, '\n')); err != nil {
		return nil, fmt.Errorf("sending the permission request: %w", err)
	}
	answer, err := ReadRelayLine(conn)
	if ctx.Err() != nil {
		return nil, context.Cause(ctx)
	}
	return answer, err
}

// ReadRelayLine reads one line of at most MaxRelayBytes from r (without its newline).
// Errors: the stream ended before a whole line, or the line is longer.
func ReadRelayLine(r interface{ Read([]byte) (int, error) }) ([]byte, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		line = append(line, chunk...)
		if len(line) > MaxRelayBytes+1 {
			return nil, errors.New("the permission relay's line is longer than 1 MiB")
		}
		switch {
		case err == nil:
			return line[:len(line)-1], nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		default:
			return nil, fmt.Errorf("the permission relay closed the connection without a whole line: %w", err)
		}
	}
}

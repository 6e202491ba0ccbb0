package initproc

import (
	"errors"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
)

// MaxBridgeConns bounds the connections one endpoint carries at once (in the sandbox
// and on the host), so that an agent cannot exhaust descriptors through the bridge.
const MaxBridgeConns = 256

// bridge is init's side of the bridge: one TCP listener per endpoint. Its sockets are
// non-blocking descriptors in *os.File values, so that the runtime's poller waits for
// them as package net would (init does not import net: package doc).
type bridge struct {
	lns   []*os.File
	names []string
	n     []atomic.Int64
	wg    sync.WaitGroup
}

func startBridge(ls []listen) (*bridge, error) {
	b := &bridge{n: make([]atomic.Int64, len(ls))}
	for _, l := range ls {
		ln, err := listenTCP4(l)
		if err != nil {
			b.close()
			return nil, errors.New("bridge endpoint " + l.name + ": " + err.Error())
		}
		b.lns = append(b.lns, ln)
		b.names = append(b.names, l.name)
	}
	for i, ln := range b.lns {
		sock := ls[i].socket
		b.wg.Go(func() {
			sem := make(chan struct{}, MaxBridgeConns)
			for {
				c, err := accept(ln)
				if err != nil {
					return
				}
				select {
				case sem <- struct{}{}:
				default:
					_ = c.Close() // over the bound: refused
					continue
				}
				b.n[i].Add(1)
				go func() {
					defer func() { <-sem }()
					u, err := dialUnix(sock)
					if err != nil {
						_ = c.Close()
						return
					}
					Splice(sockFile{c}, sockFile{u})
				}()
			}
		})
	}
	return b, nil
}

func (b *bridge) counts() map[string]int64 {
	out := map[string]int64{}
	for i, name := range b.names {
		out[name] = b.n[i].Load()
	}
	return out
}

func (b *bridge) close() {
	for _, ln := range b.lns {
		_ = ln.Close()
	}
}

// listenTCP4 listens on l's address (SO_REUSEADDR, as package net's listeners) and
// returns the listener as a pollable file. Errors name the failed call.
func listenTCP4(l listen) (*os.File, error) {
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_NONBLOCK|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, os.NewSyscallError("socket", err)
	}
	if err := syscall.SetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_REUSEADDR, 1); err != nil {
		_ = syscall.Close(fd)
		return nil, os.NewSyscallError("setsockopt", err)
	}
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Port: l.addr.port, Addr: l.addr.ip}); err != nil {
		_ = syscall.Close(fd)
		return nil, os.NewSyscallError("bind "+l.addr.String(), err)
	}
	if err := syscall.Listen(fd, syscall.SOMAXCONN); err != nil {
		_ = syscall.Close(fd)
		return nil, os.NewSyscallError("listen", err)
	}
	return os.NewFile(uintptr(fd), "listener "+l.name), nil
}

// accept waits for and accepts the next connection on ln (retrying a connection
// aborted before it was accepted); it fails once ln is closed.
func accept(ln *os.File) (*os.File, error) {
	rc, err := ln.SyscallConn()
	if err != nil {
		return nil, err
	}
	for {
		var nfd int
		var aerr error
		err := rc.Read(func(fd uintptr) bool {
			nfd, _, aerr = syscall.Accept4(int(fd), syscall.SOCK_NONBLOCK|syscall.SOCK_CLOEXEC)
			return aerr != syscall.EAGAIN
		})
		switch {
		case err != nil:
			return nil, err
		case aerr == syscall.ECONNABORTED || aerr == syscall.EINTR:
			continue
		case aerr != nil:
			return nil, os.NewSyscallError("accept", aerr)
		}
		return os.NewFile(uintptr(nfd), "bridge connection"), nil
	}
}

// dialUnix connects to the unix stream socket at path (without waiting, as package
// net does: a full backlog is an error) and returns the connection as a pollable file.
func dialUnix(path string) (*os.File, error) {
	fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_NONBLOCK|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, os.NewSyscallError("socket", err)
	}
	for {
		err = syscall.Connect(fd, &syscall.SockaddrUnix{Name: path})
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		_ = syscall.Close(fd)
		return nil, os.NewSyscallError("connect "+path, err)
	}
	return os.NewFile(uintptr(fd), "bridge socket"), nil
}

// Splice copies both ways between a and b until both directions ended, passing each
// end-of-stream on as a half close (CloseWrite, when the destination has one; else it
// is closed), then closes both. The host's side of the bridge uses it too.
func Splice(a, b io.ReadWriteCloser) {
	var wg sync.WaitGroup
	one := func(dst, src io.ReadWriteCloser) {
		defer wg.Done()
		_, _ = io.Copy(dst, src)
		if cw, ok := dst.(interface{ CloseWrite() error }); ok {
			_ = cw.CloseWrite()
		} else {
			_ = dst.Close()
		}
	}
	wg.Add(2)
	go one(a, b)
	go one(b, a)
	wg.Wait()
	_ = a.Close()
	_ = b.Close()
}

// sockFile is a connected socket in a pollable file, with only the methods Splice
// uses: its half close, and none of *os.File's ReadFrom and WriteTo, whose
// file-to-file fast paths do not apply to two sockets.
type sockFile struct{ f *os.File }

func (s sockFile) Read(p []byte) (int, error)  { return s.f.Read(p) }
func (s sockFile) Write(p []byte) (int, error) { return s.f.Write(p) }
func (s sockFile) Close() error                { return s.f.Close() }

// CloseWrite shuts the socket down for writing.
func (s sockFile) CloseWrite() error {
	rc, err := s.f.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) { serr = syscall.Shutdown(int(fd), syscall.SHUT_WR) }); err != nil {
		return err
	}
	return serr
}

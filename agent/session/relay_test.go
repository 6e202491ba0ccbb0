package session

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestRelay sends a request through the relay and answers it, on a socket path short
// enough for a Unix address and on one longer than 108 bytes (reached through an
// O_PATH descriptor of its directory).
func TestRelay(t *testing.T) {
	for name, dir := range map[string]string{
		"short": t.TempDir(),
		"long":  filepath.Join(t.TempDir(), strings.Repeat("d", 90), strings.Repeat("e", 40)),
	} {
		t.Run(name, func(t *testing.T) {
			if err := os.MkdirAll(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, PermissionRelayFile)
			l, err := ListenRelay(path)
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			go func() {
				c, err := l.Accept()
				if err != nil {
					return
				}
				defer c.Close()
				req, err := ReadRelayLine(c)
				if err != nil {
					return
				}
				_, _ = c.Write(append([]byte(`{"echo":`+string(req)+`}`), '\n'))
			}()
			got, err := AskRelay(context.Background(), path, []byte(`{"tool_name":"Write"}`))
			if err != nil || string(got) != `{"echo":{"tool_name":"Write"}}` {
				t.Fatalf("AskRelay = %s, %v", got, err)
			}
		})
	}
}

// TestRelayFailures: no relay, a relay that closes without answering, a request of
// several lines, and a wait that ctx ends (the relay's side sees the connection drop).
func TestRelayFailures(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, PermissionRelayFile)
	if _, err := AskRelay(context.Background(), path, []byte(`{}`)); err == nil {
		t.Error("no relay: no error")
	}
	if _, err := AskRelay(context.Background(), path, []byte("{}\n{}")); err == nil {
		t.Error("two lines: no error")
	}
	l, err := ListenRelay(path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	dropped := make(chan error, 1)
	go func() {
		c, _ := l.Accept()
		_ = c.Close() // no answer
		c, _ = l.Accept()
		defer c.Close()
		_, _ = ReadRelayLine(c)
		_, err := c.Read(make([]byte, 1)) // held: the asker gives up
		dropped <- err
	}()
	if _, err := AskRelay(context.Background(), path, []byte(`{}`)); err == nil {
		t.Error("closed without an answer: no error")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if _, err := AskRelay(ctx, path, []byte(`{}`)); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("held: %v, want the deadline", err)
	}
	select {
	case err := <-dropped:
		if err == nil {
			t.Error("the relay's side read a byte after the asker gave up")
		}
	case <-time.After(5 * time.Second):
		t.Error("the relay's side never saw the connection drop")
	}
}

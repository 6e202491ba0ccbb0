package server_test

import (
	"context"
	"testing"
	"time"

	"github.com/agentproof/agentproof/server"
)

// TestShutdownTwice: a second Shutdown (a test's cleanup after a failed restart)
// returns the first one's result at once instead of waiting for the ended serve loop.
func TestShutdownTwice(t *testing.T) {
	t.Parallel()
	r, err := server.Start(context.Background(), server.Options{Home: t.TempDir()}, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- r.Shutdown(context.Background()) }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("second Shutdown: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the second Shutdown still waits after 30 s")
	}
}

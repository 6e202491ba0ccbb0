package server_test

import (
	"context"
	"sync"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/agentproof/agentproof/client"
	"github.com/agentproof/agentproof/controlplane/conformance"
	"github.com/agentproof/agentproof/controlplane/store/storetest"
	"github.com/agentproof/agentproof/server"
)

// instance is a real server on 127.0.0.1 over a temporary home that can be restarted.
type instance struct {
	t    *testing.T
	opts server.Options
	mu   sync.Mutex
	run  *server.Running
}

func startInstance(t *testing.T, opts server.Options) *instance {
	t.Helper()
	if opts.Home == "" {
		opts.Home = t.TempDir()
	}
	r, err := server.Start(context.Background(), opts, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	in := &instance{t: t, opts: opts, run: r}
	t.Cleanup(func() {
		in.mu.Lock()
		defer in.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		in.run.Shutdown(ctx)
	})
	return in
}

func (in *instance) board() *client.Client {
	in.mu.Lock()
	defer in.mu.Unlock()
	return client.New(in.run.URL, in.run.BoardToken(), nil)
}

func (in *instance) restart(ctx context.Context) (*client.Client, error) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if err := in.run.Shutdown(ctx); err != nil {
		return nil, err
	}
	r, err := server.Start(ctx, in.opts, "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	in.run = r
	return client.New(r.URL, r.BoardToken(), nil), nil
}

func (in *instance) harness() *client.Harness {
	return &client.Harness{Client: in.board(), RestartServer: in.restart}
}

// TestConformanceOverHTTPSQLite: the whole conformance suite passes unchanged through the
// client against a real loopback server backed by SQLite, restarts included.
func TestConformanceOverHTTPSQLite(t *testing.T) {
	t.Parallel()
	conformance.Run(t, startInstance(t, server.Options{}).harness())
}

// postgresURL returns a PostgreSQL URL with a fresh schema (storetest.PostgresURL).
func postgresURL(t *testing.T) string {
	t.Helper()
	return storetest.PostgresURL(t, "t")
}

// TestConformanceOverHTTPPostgres is the same suite backed by PostgreSQL.
func TestConformanceOverHTTPPostgres(t *testing.T) {
	url := postgresURL(t)
	conformance.Run(t, startInstance(t, server.Options{Postgres: url}).harness())
}

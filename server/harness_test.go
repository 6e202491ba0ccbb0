package server_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/agentproof/agentproof/client"
	"github.com/agentproof/agentproof/controlplane/conformance"
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

// TestConformanceOverHTTPSQLite: the whole seed-001 suite passes unchanged through the
// client against a real loopback server backed by SQLite, restarts included.
func TestConformanceOverHTTPSQLite(t *testing.T) {
	t.Parallel()
	conformance.Run(t, startInstance(t, server.Options{}).harness())
}

// postgresURL returns AGENTPROOF_TEST_POSTGRES_URL. When it is unset the test fails
// under CI (CI set) and is skipped locally, where no PostgreSQL may be running.
func postgresURL(t *testing.T) string {
	t.Helper()
	u := os.Getenv("AGENTPROOF_TEST_POSTGRES_URL")
	if u == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("AGENTPROOF_TEST_POSTGRES_URL is unset under CI: .ci/postgres.sh must run first")
		}
		t.Skip("AGENTPROOF_TEST_POSTGRES_URL is unset (local run without PostgreSQL); CI fails instead")
	}
	// A fresh schema per test: instances of parallel tests never share tables.
	db, err := sql.Open("pgx", u)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	schema := fmt.Sprintf("t_%d_%d", time.Now().UnixNano(), os.Getpid())
	if _, err := db.Exec("CREATE SCHEMA " + schema); err != nil {
		t.Fatalf("creating schema: %v", err)
	}
	t.Cleanup(func() {
		if db, err := sql.Open("pgx", u); err == nil {
			db.Exec("DROP SCHEMA " + schema + " CASCADE")
			db.Close()
		}
	})
	sep := "?"
	if strings.Contains(u, "?") {
		sep = "&"
	}
	return u + sep + "search_path=" + schema
}

// TestConformanceOverHTTPPostgres is the same suite backed by PostgreSQL.
func TestConformanceOverHTTPPostgres(t *testing.T) {
	url := postgresURL(t)
	conformance.Run(t, startInstance(t, server.Options{Postgres: url}).harness())
}

package cli

import (
	"context"
	"encoding/json"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentproof/agentproof/api"
	"github.com/agentproof/agentproof/server"
)

// drainTimeout bounds how long SIGTERM waits for in-flight requests.
const drainTimeout = 10 * time.Second

func newServeCmd(a *app) *cobra.Command {
	var home, addr, postgres string
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run a control-plane instance (HTTP API) over an instance home",
		Long: strings.TrimSpace(`
Run a control-plane instance: companies, each a durable control-plane state machine,
behind the board and agent HTTP API (OpenAPI 3.1 at /openapi.json).

The instance home (--home) holds instance.db (SQLite, unless --postgres is given),
board.token (the bearer token of board routes) and master.key (the key that seals
secrets), both 0600. Nothing is read from the environment: a database URL comes
only from --postgres.

The heartbeat runner turns the scheduled wakes of agents whose adapterConfig names
a driver into runs: one bounded child process per run (no shell, explicit
environment, secrets resolved only into the child's environment). Run records and
their redacted output live in <home>/heartbeat; POST
/api/heartbeat-runs/{runId}/cancel stops a run.

When ready, prints one JSON line {"addr": "HOST:PORT", "pid": N} on stdout.
SIGTERM or SIGINT stops running agents, drains in-flight requests, commits and
exits 0.`),
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if home == "" {
				return usageErrorf("--home is required")
			}
			if postgres != "" {
				dropLibpqEnvironment()
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			run, err := server.Serve(ctx, server.Options{Home: home, Postgres: postgres}, addr, server.RunnerOptions{})
			if err != nil {
				return usageErrorf("%v", err)
			}
			line, _ := json.Marshal(api.Ready{Addr: run.Addr, PID: os.Getpid()})
			if _, err := a.stdout.Write(append(line, '\n')); err != nil {
				run.Shutdown(context.Background())
				return err
			}
			<-ctx.Done()
			dctx, cancel := context.WithTimeout(context.Background(), drainTimeout)
			defer cancel()
			return run.Shutdown(dctx)
		},
	}
	cmd.Flags().StringVar(&home, "home", "", "instance home directory (created when missing)")
	cmd.Flags().StringVar(&addr, "addr", "127.0.0.1:0", "listen address")
	cmd.Flags().StringVar(&postgres, "postgres", "", "PostgreSQL URL (postgres://…) instead of the home's SQLite file")
	return cmd
}

// dropLibpqEnvironment removes PG* variables from this process's environment before a
// PostgreSQL connection is made: pgx reads them (PGPASSWORD, PGHOST, …) as defaults
// for whatever the URL leaves out, and the control plane's database settings come
// only from --postgres.
func dropLibpqEnvironment() {
	for _, kv := range os.Environ() {
		if k, _, ok := strings.Cut(kv, "="); ok && strings.HasPrefix(k, "PG") {
			os.Unsetenv(k)
		}
	}
}

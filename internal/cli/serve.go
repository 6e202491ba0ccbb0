package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentproof/agentproof/api"
	"github.com/agentproof/agentproof/campaign/attempt"
	"github.com/agentproof/agentproof/controlplane/store"
	"github.com/agentproof/agentproof/server"
	"github.com/agentproof/agentproof/worker"
)

// becomeSubreaper makes this process a child subreaper that reaps adopted orphans
// (worker.BecomeSubreaper); a failure is reported on stderr and is not fatal.
func becomeSubreaper(a *app) {
	if _, err := worker.BecomeSubreaper(); err != nil {
		fmt.Fprintf(a.stderr, "agentproof: %v\n", err)
	}
}

// drainTimeout bounds how long SIGTERM waits for in-flight requests.
const drainTimeout = 10 * time.Second

func newServeCmd(a *app) *cobra.Command {
	var o serveOptions
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run a control-plane instance (HTTP API) over an instance home",
		Long:  strings.TrimSpace(serveLong),
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.serve(cmd, o)
		},
	}
	cmd.Flags().StringVar(&o.home, "home", "", "instance home directory (created when missing)")
	cmd.Flags().StringVar(&o.addr, "addr", "127.0.0.1:0", "listen address")
	cmd.Flags().StringVar(&o.postgres, "postgres", "", "PostgreSQL URL (postgres://…) instead of the home's SQLite file")
	cmd.Flags().StringVar(&o.marker, "process-marker", "", "an extra marker every agent process carries in AGENTPROOF_PROCESS_MARKER (8-64 of [a-z0-9-])")
	cmd.Flags().StringVar(&o.template, "template-db", "", "a pre-migrated SQLite template for a new home's database: SCHEMA:SHA256:PATH")
	cmd.Flags().BoolVar(&o.ephemeral, "ephemeral", false, "the home is thrown away when the server stops: write nothing in it durably (no fsync)")
	cmd.Flags().StringArrayVar(&o.knownDigests, "known-digest", nil, "the SHA-256 of an executable file version the caller hashed: DEV:INO:SIZE:MTIME_NS:CTIME_NS:SHA256 (repeatable)")
	return cmd
}

// serveOptions are the flags of 'agentproof serve'.
type serveOptions struct {
	home, addr, postgres, marker string
	knownDigests                 []string
	template                     string
	ephemeral                    bool
}

// serve checks o (usage errors, exit 2, name the flag), starts the control-plane
// instance, prints its ready line and serves until SIGTERM or SIGINT, then stops the
// running agents and drains in-flight requests within drainTimeout.
func (a *app) serve(cmd *cobra.Command, o serveOptions) error {
	if o.home == "" {
		return usageErrorf("--home is required")
	}
	if o.marker != "" && !worker.ValidMarker(o.marker) {
		return usageErrorf("--process-marker %q must be 8 to 64 characters of [a-z0-9-]", o.marker)
	}
	known := make([]api.KnownDigest, 0, len(o.knownDigests))
	for _, kd := range o.knownDigests {
		k, err := api.ParseKnownDigest(kd)
		if err != nil {
			return usageErrorf("--known-digest: %v", err)
		}
		known = append(known, k)
	}
	var tmpl *store.Template
	if o.template != "" {
		t, err := store.ParseTemplate(o.template)
		if err != nil {
			return usageErrorf("--template-db: %v", err)
		}
		tmpl = &t
	}
	if o.postgres != "" {
		dropLibpqEnvironment()
	}
	becomeSubreaper(a)
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	run, err := server.Serve(ctx, server.Options{Home: o.home, Postgres: o.postgres, Template: tmpl, Ephemeral: o.ephemeral}, o.addr, server.RunnerOptions{ProcessMarker: o.marker, KnownDigests: known, PiTools: piTools()})
	if err != nil {
		return usageErrorf("%v", err)
	}
	if err := run.TemplateProblem(); err != nil {
		fmt.Fprintf(a.stderr, "agentproof serve: the template database was not used: %v\n", err)
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
}

// serveLong is the help of 'agentproof serve'.
const serveLong = `
Run a control-plane instance: companies, each a durable control-plane state machine,
behind the board and agent HTTP API (OpenAPI 3.1 at /openapi.json).

The instance home (--home) holds instance.db (SQLite, unless --postgres is given),
board.token (the bearer token of board routes) and master.key (the key that seals
secrets), both 0600. Nothing is read from the environment: a database URL comes
only from --postgres.

The heartbeat runner turns the scheduled wakes of agents whose adapterConfig names
a driver into runs: one bounded child process per run (no shell, explicit
environment, secrets resolved only into the child's environment). Run records and
their redacted output live in <home>/heartbeat. Its board routes:

  POST /api/heartbeat-runs/{run}/cancel     Stop a run (cancellationRequestId optional)
  POST /api/heartbeat-runs/{run}/steer      steer a running Pi or Codex app-server turn
  POST /api/heartbeat-runs/{run}/retry      retry a failed or interrupted run
  GET  /api/heartbeat-runs/{run}            the runner's record of a run
  GET  /api/companies/{company}/heartbeat-runs
                                            the company's run records
  GET  /api/companies/{company}/permissions  the permission interactions (?taskId=)
  POST /api/companies/{company}/permissions/{permission}/decision
                                            answer a pending permission

Every agent process carries a marker in its environment (AGENTPROOF_PROCESS_MARKER);
when its run ends, descendants that left its process group (a setsid daemon) are
found by that marker, killed and listed in the run's termination record.
--process-marker adds a marker of the caller's (for example an attempt's) to every
agent process, so that the caller can sweep them after this server is gone. The
server is a child subreaper: orphaned descendants are re-parented to it and reaped.

--known-digest DEV:INO:SIZE:MTIME_NS:CTIME_NS:SHA256 (repeatable) gives the SHA-256
of an executable file version the caller hashed: a launch of that file version (the
same device, inode, size and times by fstat of the opened file) records it as the
binary's digest instead of hashing the file again; any other file is hashed.

--template-db SCHEMA:SHA256:PATH names a pre-migrated SQLite template database: a
home without a database gets a copy of it instead of a newly migrated file, used only
when the schema is this build's and the copy's bytes hash to SHA256 (else the new
file is migrated and stderr says why).

--ephemeral says the home is thrown away when this server stops (an attempt's home,
which 'agentproof run' gives its serve children): nothing in it is fsynced. The key
files, the SQLite database (synchronous=OFF, the file locked for the server's life:
no -shm file) and the heartbeat records are written as a killed server needs —
atomically, and kept by the operating system's page cache — but an operating-system
crash may lose them. Never use it for a home you keep.

When ready, prints one JSON line {"addr": "HOST:PORT", "pid": N} on stdout.
SIGTERM or SIGINT stops running agents, drains in-flight requests, commits and
exits 0.`

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

// inProcessServe returns how `agentproof run` starts a control-plane instance inside
// its own process (attempt.InProcessStart; docs/ARCHITECTURE.md "Control-plane
// instances"): server.Serve on the attempt's home and a loopback port with its own
// heartbeat runner, whose built-in and fixture agents are exe, exactly what `serve
// --home … --addr 127.0.0.1:0 --ephemeral --process-marker … --known-digest … --template-db …`
// runs in a child, with the HTTP server's error log and a template that was not used
// written to the attempt's log instead of stderr. Every instance has its own store,
// keys, listener and runner; they share only the process (its reaper among it: `run`
// is a child subreaper too).
func inProcessServe(exe string) attempt.InProcessStart {
	return func(ctx context.Context, c attempt.InProcessConfig) (attempt.InProcessServer, error) {
		sv, err := server.Serve(context.WithoutCancel(ctx), server.Options{Home: c.Home, Template: c.Template, ErrorLog: c.Log, Ephemeral: true}, "127.0.0.1:0",
			server.RunnerOptions{Executable: exe, ProcessMarker: c.Marker, KnownDigests: c.KnownDigests, ExecutableDigest: c.ExecutableDigest, PiTools: piTools()})
		if err != nil {
			return nil, err
		}
		if err := sv.TemplateProblem(); err != nil && c.Log != nil {
			fmt.Fprintf(c.Log, "agentproof serve: the template database was not used: %v\n", err)
		}
		return inProcessServer{sv}, nil
	}
}

// inProcessServer is a server.Serving as an attempt.InProcessServer.
type inProcessServer struct{ sv *server.Serving }

func (s inProcessServer) Addr() string                       { return s.sv.Addr }
func (s inProcessServer) Shutdown(ctx context.Context) error { return s.sv.Shutdown(ctx) }

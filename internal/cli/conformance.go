package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentproof/agentproof/client"
	"github.com/agentproof/agentproof/controlplane/conformance"
	"github.com/agentproof/agentproof/server"
)

// conformanceReport is what `agentproof conformance --json` prints.
type conformanceReport struct {
	Target string                   `json:"target"`
	Cases  []conformance.CaseResult `json:"cases"`
	Passed int                      `json:"passed"`
	Failed int                      `json:"failed"`
}

func newConformanceCmd(a *app) *cobra.Command {
	return newConformanceCmdFor(a, nil)
}

// newConformanceCmdFor runs the suite against override when it is non-nil (tests pass a
// broken port), otherwise against --target.
func newConformanceCmdFor(a *app, override conformance.Harness) *cobra.Command {
	var asJSON bool
	var target, postgres, tokenFile string
	cmd := &cobra.Command{
		Use:   "conformance",
		Short: "Run the control-plane port conformance suite against a control plane",
		Long: strings.TrimSpace(`
Run the control-plane port conformance suite (the 13 port contract steps,
the 40 Given/When/Then cases, the 5 board cases: blobs, byte-verified
deliverables, managed files, idempotent board writes, Retry; and the 2
journey cases) against a control plane chosen by --target:

  memory    the deterministic in-memory port (default)
  sqlite    a real server on 127.0.0.1 over a temporary SQLite instance, through
            the HTTP client; restarts restart the server
  postgres  the same backed by the PostgreSQL database given by --postgres
  URL       a running server (http://HOST:PORT) with the board token read from
            --board-token-file; restarts only reconnect

Prints one line per case ("ok" or "FAIL" with the reason) and a final line
"N passed, N failed". Exits 1 when any case fails, 2 on bad flags.`),
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			h := override
			if h == nil {
				var cleanup func()
				var err error
				h, cleanup, err = conformanceTarget(target, postgres, tokenFile)
				if err != nil {
					return err
				}
				defer cleanup()
			}
			rs := conformance.Check(h)
			passed, failed := conformance.Summary(rs)
			if asJSON {
				enc := json.NewEncoder(a.stdout)
				if err := enc.Encode(conformanceReport{Target: target, Cases: rs, Passed: passed, Failed: failed}); err != nil {
					return err
				}
			} else {
				for _, r := range rs {
					if r.Passed {
						fmt.Fprintf(a.stdout, "ok    %s\n", r.Name)
					} else {
						fmt.Fprintf(a.stdout, "FAIL  %s: %s\n", r.Name, r.Detail)
					}
				}
				fmt.Fprintf(a.stdout, "%d passed, %d failed\n", passed, failed)
			}
			if failed > 0 {
				return withExit(ExitFailed, nil)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object {target, cases: [{name, passed, detail}], passed, failed}")
	cmd.Flags().StringVar(&target, "target", "memory", "memory, sqlite, postgres or a server URL http://HOST:PORT")
	cmd.Flags().StringVar(&postgres, "postgres", "", "PostgreSQL URL for --target postgres (never read from the environment)")
	cmd.Flags().StringVar(&tokenFile, "board-token-file", "", "file holding the board token of the server of --target URL (its home's board.token)")
	return cmd
}

// conformanceTarget builds the harness of a --target and its cleanup.
func conformanceTarget(target, postgres, tokenFile string) (conformance.Harness, func(), error) {
	nothing := func() {}
	switch target {
	case "memory":
		return conformance.MemoryHarness{}, nothing, nil
	case "sqlite", "postgres":
		if target == "postgres" && postgres == "" {
			return nil, nothing, usageErrorf("--target postgres needs --postgres URL")
		}
		if target == "sqlite" && postgres != "" {
			return nil, nothing, usageErrorf("--postgres is only for --target postgres")
		}
		if postgres != "" {
			dropLibpqEnvironment()
		}
		home, err := os.MkdirTemp("", "agentproof-conformance-")
		if err != nil {
			return nil, nothing, err
		}
		opts := server.Options{Home: home, Postgres: postgres}
		run, err := server.Start(context.Background(), opts, "127.0.0.1:0")
		if err != nil {
			os.RemoveAll(home)
			return nil, nothing, usageErrorf("starting the %s control plane: %v", target, err)
		}
		h := &client.Harness{Client: client.New(run.URL, run.BoardToken(), nil)}
		h.RestartServer = func(ctx context.Context) (*client.Client, error) {
			if err := run.Shutdown(ctx); err != nil {
				return nil, err
			}
			r, err := server.Start(ctx, opts, "127.0.0.1:0")
			if err != nil {
				return nil, err
			}
			run = r
			return client.New(r.URL, r.BoardToken(), nil), nil
		}
		cleanup := func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			run.Shutdown(ctx)
			os.RemoveAll(home)
		}
		return h, cleanup, nil
	}
	u, err := url.Parse(target)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") {
		return nil, nothing, usageErrorf("--target %q is not memory, sqlite, postgres or a server URL http://HOST:PORT", target)
	}
	if tokenFile == "" {
		return nil, nothing, usageErrorf("--target URL needs --board-token-file")
	}
	tok, err := os.ReadFile(tokenFile)
	if err != nil {
		return nil, nothing, usageErrorf("reading the board token: %v", err)
	}
	base := strings.TrimSuffix(u.String(), "/")
	return &client.Harness{Client: client.New(base, strings.TrimSpace(string(tok)), nil)}, nothing, nil
}

package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/agentproof/agentproof/agent/scriptedmodel"
	"github.com/agentproof/agentproof/catalog"
	"github.com/spf13/cobra"
)

// modelReady is the JSON line `agentproof model serve` prints once it listens.
type modelReady struct {
	Addr string `json:"addr"`
	URL  string `json:"url"`
}

func newModelCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "model",
		Short: "Serve a scripted model for real agent CLIs (offline, no credentials)",
	}
	return withSubcommands(cmd, newModelServeCmd(a))
}

func newModelServeCmd(a *app) *cobra.Command {
	var (
		script, addr, logPath, nonce string
		vars                         []string
		chunked                      bool
		hold                         time.Duration
	)
	cmd := &cobra.Command{
		Use:   "serve --script FILE",
		Short: "Serve OpenAI Responses, Chat Completions and Anthropic Messages from a model script",
		Long:  strings.TrimSpace(modelServeLong),
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			sc, err := loadModelScript(script, nonce, vars)
			if err != nil {
				return err
			}
			opts := scriptedmodel.Options{Script: sc, Chunked: chunked, Hold: hold}
			if logPath != "" {
				f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
				if err != nil {
					return usageErrorf("opening --log: %v", err)
				}
				defer f.Close()
				opts.Log = f
			}
			srv, err := scriptedmodel.New(opts)
			if err != nil {
				return err
			}
			running, err := srv.Listen(addr)
			var ae *scriptedmodel.AddrError
			if errors.As(err, &ae) {
				return &UsageError{Err: err}
			}
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			if ctx == nil {
				ctx = context.Background()
			}
			ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
			defer stop()
			line, _ := json.Marshal(modelReady{Addr: running.Addr, URL: running.URL})
			if _, err := fmt.Fprintf(a.stdout, "%s\n", line); err != nil {
				_ = running.Close(context.Background())
				return err
			}
			<-ctx.Done()
			shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := running.Close(shutdown); err != nil {
				return fmt.Errorf("stopping the scripted model: %w", err)
			}
			return srv.LogError()
		},
	}
	f := cmd.Flags()
	f.StringVar(&script, "script", "", "model script (YAML, agentproof.model-script/v1)")
	f.StringVar(&addr, "addr", "127.0.0.1:0", "loopback address to listen on (port 0 picks a free port)")
	f.StringVar(&logPath, "log", "", "append one JSON line per request to this file (evidence)")
	f.StringVar(&nonce, "nonce", "", "value of {{nonce}} in the script")
	f.StringArrayVar(&vars, "var", nil, "NAME=VALUE for {{NAME}} in the script (repeatable)")
	f.BoolVar(&chunked, "chunked", false, "write every stream frame in random 1-7-byte pieces (framing test)")
	f.DurationVar(&hold, "hold", 0, "hold each stream's first frame this long, sending ': keepalive' every second")
	return cmd
}

// loadModelScript reads and parses the model script at path (--script) with the
// values of its {{nonce}} (--nonce, which must match catalog.NoncePattern) and of each
// --var NAME=VALUE. Every error is a usage error (exit 2) naming its flag.
func loadModelScript(path, nonce string, vars []string) (*scriptedmodel.Script, error) {
	if path == "" {
		return nil, usageErrorf("--script FILE is required")
	}
	values := map[string]string{}
	if nonce != "" {
		if !catalog.NoncePattern().MatchString(nonce) {
			return nil, usageErrorf("--nonce %q: must match %s", nonce, catalog.NoncePattern())
		}
		values["nonce"] = nonce
	}
	for _, v := range vars {
		k, val, ok := strings.Cut(v, "=")
		if !ok || k == "" {
			return nil, usageErrorf("--var %q: want NAME=VALUE", v)
		}
		values[k] = val
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, usageErrorf("reading --script: %v", err)
	}
	sc, err := scriptedmodel.ParseScript(path, data, values)
	if err != nil {
		return nil, &UsageError{Err: err}
	}
	return sc, nil
}

// modelServeLong is the help of 'agentproof model serve'.
const modelServeLong = `
Serve a scripted model on a loopback address until interrupted (SIGINT or SIGTERM).
It answers POST /v1/responses, POST /v1/chat/completions and POST /v1/messages
(streamed or not) and GET /v1/models from a model script: one step per assistant
turn, either a tool call by role ("shell" or a semantic tool such as finish_task,
matched against the request's own tool list) or a text answer. A request that does
not fit the script gets HTTP 400 naming the step.

Once listening it prints one JSON line {"addr": "127.0.0.1:PORT", "url":
"http://127.0.0.1:PORT/v1"} on stdout. With --log every request is appended to FILE
as one JSON line (headers and body redacted).

Script placeholders {{name}} are filled from --nonce (as {{nonce}}) and --var.`

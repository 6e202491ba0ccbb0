package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentproof/agentproof/agent"
	"github.com/agentproof/agentproof/internal/fakecli"
	"github.com/agentproof/agentproof/internal/raceexit"
	"github.com/agentproof/agentproof/worker"
)

// parentOnly is set in the test process only; no child may see it.
const parentOnly = "AGENTPROOF_TEST_PARENT_ONLY"

// The test binary doubles as the programs the drivers launch, so every launch test runs
// a real child process:
//
//	<test binary> fixture-child <fixture> <lifetime-ms>   the real fixture program
//	<test binary> report                                  prints {args, env, cwd} as JSON, exits 0
//	<test binary> hostile-leader <file>                   ignores SIGTERM, starts a grandchild in
//	                                                      its process group, sleeps forever
//	<test binary> hostile-grandchild <file>               appends "tick" to file and stdout forever
//	<test binary> agent acp-<reference|nop|wrong>         the built-in ACP agents
//	<test binary> mcp                                     a stub semantic-tools MCP server (acp_test.go)
//	<test binary> acp                                     a hostile ACP agent, mode HOSTILE_MODE (acp_test.go)
//	<test binary> /fake-pi/<mode> --mode rpc …            a fake Pi in RPC mode (pi_test.go)
//	<test binary> app-server …                            a fake Codex app-server (codex_app_test.go)
//	<test binary> debug models --bundled                  the fake's model catalog
//	<test binary> -p --input-format stream-json …         a fake Claude Code (claude_app_test.go)
func TestMain(m *testing.M) {
	// As a child process, this binary exits without the race detector's sleep.
	raceexit.Main()
	fakecli.Main() // a fake agent CLI when started under a fake's name
	agent.RegisterDrivers()
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case "fixture-child":
			os.Exit(worker.RunChild(os.Args[2:], os.Stdin, os.Stdout, os.Stderr, os.Environ()))
		case "report":
			os.Exit(report())
		case "hostile-leader":
			os.Exit(hostileLeader(os.Args[2]))
		case "hostile-grandchild":
			hostileGrandchild(os.Args[2])
		case "agent":
			// `agentproof agent acp-<name>`: the built-in ACP agents.
			if err := agent.RunACPBuiltin(context.Background(), os.Args[2], os.Environ(), os.Stdin, os.Stdout, os.Stderr); err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(2)
			}
			os.Exit(0)
		case "mcp":
			os.Exit(stubMCP())
		case "app-server":
			// app:codex runs "<binary> app-server …": a fake Codex app-server.
			os.Exit(fakeCodexApp())
		case "debug":
			// and "<binary> debug models --bundled": the fake's model catalog.
			fmt.Println(`{"models":[{"slug":"gpt-5.5","supports_search_tool":true,"apply_patch_tool_type":"freeform"}]}`)
			os.Exit(0)
		case "-p":
			// app:claude runs "<binary> -p --input-format stream-json …": a fake Claude Code.
			os.Exit(fakeClaude())
		case "acp":
			// A real ACP agent's command line (acp:opencode runs "<binary> acp"): the
			// hostile ACP agents of the driver tests, mode from HOSTILE_MODE.
			os.Exit(hostileACP(os.Getenv("HOSTILE_MODE")))
		}
		if mode, ok := strings.CutPrefix(os.Args[1], fakePiPrefix); ok {
			// rpc:pi runs "<node> <cli.js> --mode rpc …": a fake Pi (pi_test.go).
			os.Exit(fakePi(mode))
		}
	}
	if err := os.Setenv(parentOnly, "leak"); err != nil {
		panic(err)
	}
	os.Exit(m.Run())
}

// childReport is what the report program prints.
type childReport struct {
	Args []string `json:"args"`
	Env  []string `json:"env"`
	Cwd  string   `json:"cwd"`
}

func report() int {
	cwd, _ := os.Getwd()
	b, _ := json.Marshal(childReport{Args: os.Args, Env: os.Environ(), Cwd: cwd})
	fmt.Println(string(b))
	return 0
}

func hostileLeader(file string) int {
	signal.Ignore(syscall.SIGTERM)
	self, err := os.Executable()
	if err != nil {
		return 3
	}
	gc := &exec.Cmd{Path: self, Args: []string{self, "hostile-grandchild", file}, Env: os.Environ(), Stdout: os.Stdout, Stderr: os.Stderr}
	if err := gc.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "hostile-leader:", err)
		return 3
	}
	// Report only once the grandchild is writing, so the test knows it ran.
	for {
		if fi, err := os.Stat(file); err == nil && fi.Size() > 0 {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	fmt.Printf("grandchild pid=%d\n", gc.Process.Pid)
	for {
		time.Sleep(time.Hour)
	}
}

func hostileGrandchild(file string) {
	signal.Ignore(syscall.SIGTERM, syscall.SIGPIPE)
	for {
		if f, err := os.OpenFile(file, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644); err == nil {
			_, _ = f.WriteString("tick\n")
			_ = f.Close()
		}
		fmt.Println("tick")
		time.Sleep(20 * time.Millisecond)
	}
}

// Package fakecli holds fake agent CLIs for tests: programs that speak a real CLI's
// JSON event stream but end it the way a broken
// or hanging CLI would. A test binary dispatches to one when it is started under the
// fake's name (a symlink to the test binary named after the fake, see Link), so every
// fake run is a real child process launched by the real driver.
package fakecli

import (
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"
)

// The fakes, by program name.
const (
	// CodexComplete prints a whole `codex exec --json` stream (ending turn.completed)
	// and exits 0.
	CodexComplete = "fake-codex-complete"
	// CodexIncomplete prints a stream that stops before turn.completed and exits 0.
	CodexIncomplete = "fake-codex-incomplete"
	// CodexLingering prints a whole stream, then ignores SIGTERM and never exits.
	CodexLingering = "fake-codex-lingering"
	// OpenCodeIncomplete prints an `opencode run --format json` stream whose last
	// step_finish is a "tool-calls" step (another step was due) and exits 0.
	OpenCodeIncomplete = "fake-opencode-incomplete"
)

// FinalText is the agent message every fake stream carries.
const FinalText = "fake final answer"

var codexHead = []string{
	`{"type":"thread.started","thread_id":"fake-thread"}`,
	`{"type":"turn.started"}`,
	`{"type":"item.completed","item":{"id":"item_0","type":"agent_message","text":"` + FinalText + `"}}`,
}

const codexTail = `{"type":"turn.completed","usage":{"input_tokens":10,"cached_input_tokens":0,"output_tokens":2,"reasoning_output_tokens":0}}`

// Main runs the fake named by argv[0]'s base name and exits; it returns false (doing
// nothing) when argv[0] names no fake.
func Main() bool {
	switch filepath.Base(os.Args[0]) {
	case CodexComplete:
		emit(append(codexHead, codexTail)...)
	case CodexIncomplete:
		emit(codexHead...)
	case CodexLingering:
		signal.Ignore(syscall.SIGTERM)
		emit(append(codexHead, codexTail)...)
		time.Sleep(time.Hour)
	case OpenCodeIncomplete:
		emit(`{"type":"step_start","part":{}}`,
			`{"type":"text","part":{"text":"`+FinalText+`"}}`,
			`{"type":"step_finish","part":{"reason":"tool-calls","tokens":{"input":5,"output":1,"reasoning":0,"cache":{"read":0,"write":0}}}}`)
	default:
		return false
	}
	os.Exit(0)
	return true
}

func emit(lines ...string) {
	for _, l := range lines {
		fmt.Println(l)
	}
}

// Link creates dir/<name>, a symlink to the running test binary, and returns its path:
// the binary a CLI profile's driverConfig names.
func Link(dir, name string) (string, error) {
	self, err := os.Executable()
	if err != nil {
		return "", err
	}
	p := filepath.Join(dir, name)
	return p, os.Symlink(self, p)
}

package mcp

import (
	"context"
	"sync"

	"github.com/agentproof/agentproof/agent/session"
)

// FileBinding is the Config.Bind of a warm session's server (docs/acp.md "Warm
// lifecycle"): every call reads the run binding file at path (session.ReadRunBinding)
// and acts for the run it names, with an agent API client at apiURL for that run's
// token (dialled once per token). Errors: session.ErrNoRunBound between turns; an
// unreadable binding; an API URL that does not name one company.
func FileBinding(apiURL, path string) func(ctx context.Context) (Bound, error) {
	var (
		mu    sync.Mutex
		token string
		api   API
	)
	return func(ctx context.Context) (Bound, error) {
		rb, err := session.ReadRunBinding(path)
		if err != nil {
			return Bound{}, err
		}
		mu.Lock()
		defer mu.Unlock()
		if api == nil || token != rb.RunToken {
			a, err := Dial(ctx, apiURL, rb.RunToken)
			if err != nil {
				return Bound{}, err
			}
			api, token = a, rb.RunToken
		}
		return Bound{RunID: rb.RunID, RunToken: rb.RunToken, API: api}, nil
	}
}

package client

import (
	"context"
	"fmt"

	"github.com/agentproof/agentproof/controlplane"
)

// Harness runs the conformance suite (package controlplane/conformance) over HTTP: New
// creates a fixture company from the conformance seed; Restart calls RestartServer (when set: it
// restarts the server and returns the new client) and hands back the same company on
// it. Without RestartServer (a remote server) Restart only reconnects.
type Harness struct {
	Client        *Client
	RestartServer func(ctx context.Context) (*Client, error)
}

// New creates a fixture company from seed.
func (h *Harness) New(ctx context.Context, seed controlplane.Seed) (controlplane.Port, error) {
	return h.Client.CreateFixtureCompany(ctx, seed)
}

// Restart restarts the server (when it can) and returns p's company on it.
func (h *Harness) Restart(ctx context.Context, p controlplane.Port) (controlplane.Port, error) {
	co, ok := p.(*Company)
	if !ok {
		return nil, fmt.Errorf("client: restart of a %T, not a *client.Company", p)
	}
	if h.RestartServer != nil {
		c, err := h.RestartServer(ctx)
		if err != nil {
			return nil, err
		}
		h.Client = c
	}
	return h.Client.Company(co.ID()), nil
}

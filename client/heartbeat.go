package client

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	"github.com/agentproof/agentproof/api"
	"github.com/agentproof/agentproof/controlplane"
)

// CancelRun is the Stop API (seed 000, "Correlated native Stop API"): POST
// /api/heartbeat-runs/{runId}/cancel with cancellationRequestID ("" omits it). Errors
// come back as *controlplane.Error: cancellation_request_id_invalid (400), run_missing
// (404), cancellation_conflict (409).
func (c *Client) CancelRun(ctx context.Context, runID, cancellationRequestID string, opts ...WriteOption) (api.CancelRunResponse, error) {
	var out api.CancelRunResponse
	err := c.doWith(ctx, "POST", "/api/heartbeat-runs/"+url.PathEscape(runID)+"/cancel",
		api.CancelRunRequest{CancellationRequestID: cancellationRequestID}, &out, opts)
	return out, err
}

// HeartbeatRun returns the heartbeat runner's record of runID (404 run_missing when the
// runner has none).
func (c *Client) HeartbeatRun(ctx context.Context, runID string) (api.HeartbeatRun, error) {
	var out api.HeartbeatRun
	err := c.do(ctx, "GET", "/api/heartbeat-runs/"+url.PathEscape(runID), nil, &out)
	return out, err
}

// HeartbeatRuns lists the company's heartbeat run records in the order their wakes
// were taken.
func (co *Company) HeartbeatRuns(ctx context.Context) ([]api.HeartbeatRun, error) {
	var out api.HeartbeatRunList
	err := co.c.do(ctx, "GET", co.prefix+"/heartbeat-runs", nil, &out)
	return out.Runs, err
}

// DialAgent connects an agent process to its company's agent routes: apiURL is the
// agent API URL the heartbeat runner gives it (http://host:port/api/companies/<id>),
// token its run token. Error: apiURL is not of that form.
func DialAgent(_ context.Context, apiURL, token string) (controlplane.Port, error) {
	const marker = "/api/companies/"
	i := strings.LastIndex(apiURL, marker)
	if i <= 0 {
		return nil, fmt.Errorf("client: agent API URL %q does not end in %s<company>", apiURL, marker)
	}
	id, err := url.PathUnescape(strings.TrimSuffix(apiURL[i+len(marker):], "/"))
	if err != nil || id == "" || strings.Contains(id, "/") {
		return nil, fmt.Errorf("client: agent API URL %q does not name one company", apiURL)
	}
	return New(apiURL[:i], token, nil).Company(id), nil
}

package client

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/agentproof/agentproof/api"
	"github.com/agentproof/agentproof/controlplane"
)

// CancelRun is the Stop API: POST
// /api/heartbeat-runs/{runId}/cancel with cancellationRequestID ("" omits it). Errors
// come back as *controlplane.Error: cancellation_request_id_invalid (400), run_missing
// (404), cancellation_conflict (409).
func (c *Client) CancelRun(ctx context.Context, runID, cancellationRequestID string, opts ...WriteOption) (api.CancelRunResponse, error) {
	var out api.CancelRunResponse
	err := c.doWith(ctx, "POST", "/api/heartbeat-runs/"+url.PathEscape(runID)+"/cancel",
		api.CancelRunRequest{CancellationRequestID: cancellationRequestID}, &out, opts)
	return out, err
}

// CancelRun is Client.CancelRun (the Stop API) through the company's client, for the
// flows that stop a run as the human.
func (co *Company) CancelRun(ctx context.Context, runID, cancellationRequestID string) (api.CancelRunResponse, error) {
	return co.c.CancelRun(ctx, runID, cancellationRequestID)
}

// SteerRun is the Steer button: POST /api/heartbeat-runs/{runId}/steer with body (the
// human's message, posted as a comment on the run's task and delivered into its running
// Pi turn with steer). Errors come back as *controlplane.Error: invalid_request (400),
// run_missing (404), run_not_steerable (409).
func (c *Client) SteerRun(ctx context.Context, runID, body string, opts ...WriteOption) (api.SteerRunResponse, error) {
	var out api.SteerRunResponse
	err := c.doWith(ctx, "POST", "/api/heartbeat-runs/"+url.PathEscape(runID)+"/steer", api.SteerRunRequest{Body: body}, &out, opts)
	return out, err
}

// SteerRun is Client.SteerRun (the Steer button) through the company's client, for the
// flows that steer a run as the human.
func (co *Company) SteerRun(ctx context.Context, runID, body string) (api.SteerRunResponse, error) {
	return co.c.SteerRun(ctx, runID, body)
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

// Permissions lists the company's permission interactions (an ACP agent's permission
// requests) in the order they were asked; task, when not "", keeps that task's.
func (co *Company) Permissions(ctx context.Context, task string) ([]api.Permission, error) {
	var out api.PermissionList
	path := co.prefix + "/permissions"
	if task != "" {
		path += "?taskId=" + url.QueryEscape(task)
	}
	err := co.c.do(ctx, "GET", path, nil, &out)
	return out.Permissions, err
}

// DecidePermission answers permission id as the human (approve or decline). Errors
// come back as *controlplane.Error: interaction_missing (404),
// interaction_already_resolved (409: answered or cancelled before),
// interaction_outcome_invalid (400).
func (co *Company) DecidePermission(ctx context.Context, id string, decision api.PermissionDecisionKind) (api.Permission, error) {
	var out api.Permission
	err := co.c.do(ctx, "POST", co.prefix+"/permissions/"+url.PathEscape(id)+"/decision", api.PermissionDecisionRequest{Decision: decision}, &out)
	return out, err
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

// WaitChanges is the change long-poll (GET /api/changes, api.Changes): it returns the
// instance's change sequence number once it is above after, or when wait (at most
// api.MaxChangesWaitMs ms; rounded down to ms) passed. WaitChanges(ctx, 0, 0) reads
// the number without waiting.
func (co *Company) WaitChanges(ctx context.Context, after uint64, wait time.Duration) (uint64, error) {
	ms := min(wait.Milliseconds(), api.MaxChangesWaitMs)
	var out api.Changes
	err := co.c.do(ctx, "GET", "/api/changes?after="+strconv.FormatUint(after, 10)+"&waitMs="+strconv.FormatInt(max(ms, 0), 10), nil, &out)
	return out.Seq, err
}

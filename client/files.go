package client

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/agentproof/agentproof/api"
	"github.com/agentproof/agentproof/controlplane"
)

var _ controlplane.Board = (*Company)(nil)

// PutBlob implements controlplane.Board: POST /blobs with the raw bytes (an
// IdempotencyKey in in becomes the Idempotency-Key header).
func (co *Company) PutBlob(ctx context.Context, in controlplane.BlobPut) (controlplane.BlobRef, error) {
	var out controlplane.BlobRef
	content := in.Content
	if content == nil {
		content = []byte{}
	}
	err := co.c.doWith(ctx, "POST", co.prefix+"/blobs", content, &out, []WriteOption{rawBody, IdempotencyKey(in.IdempotencyKey)})
	return out, err
}

// Blob implements controlplane.Board: GET /blobs/{sha256}, checked (download).
func (co *Company) Blob(ctx context.Context, sha string) ([]byte, error) {
	d, err := co.c.download(ctx, co.prefix+"/blobs/"+url.PathEscape(sha))
	return d.Bytes, err
}

// Download is a downloaded file: its bytes, their SHA-256 as the server named it (the
// ETag) and its content type.
type Download struct {
	Bytes       []byte
	SHA256      string
	ContentType string
}

// download GETs raw bytes and checks them: the body's SHA-256 must be the ETag's and
// the Content-Digest's (when the server sends one); a mismatch is an error without a
// code (the transfer, not the control plane, failed).
func (c *Client) download(ctx context.Context, path string) (Download, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", c.base+path, nil)
	if err != nil {
		return Download{}, fmt.Errorf("client: GET %s: %w", path, err)
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	resp, err := c.hc.Do(req)
	if err != nil {
		return Download{}, fmt.Errorf("client: GET %s: %w", path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, int64(api.MaxFileBytes)+1))
	if err != nil {
		return Download{}, fmt.Errorf("client: GET %s: reading the response: %w", path, err)
	}
	if resp.StatusCode != http.StatusOK {
		var e controlplane.Error
		if json.Unmarshal(b, &e) != nil || e.Code == "" {
			return Download{}, fmt.Errorf("client: GET %s: HTTP %d without an error body", path, resp.StatusCode)
		}
		return Download{}, &e
	}
	sum := sha256.Sum256(b)
	got := hex.EncodeToString(sum[:])
	etag := strings.Trim(resp.Header.Get("ETag"), `"`)
	if etag != got {
		return Download{}, fmt.Errorf("client: GET %s: the body's SHA-256 %s is not the ETag %q", path, got, etag)
	}
	if d := resp.Header.Get("Content-Digest"); d != "" && d != "sha-256=:"+base64.StdEncoding.EncodeToString(sum[:])+":" {
		return Download{}, fmt.Errorf("client: GET %s: the body does not match its Content-Digest", path)
	}
	return Download{Bytes: b, SHA256: got, ContentType: resp.Header.Get("Content-Type")}, nil
}

// PutFile writes a managed file to an uploaded blob (board operation put_file).
func (co *Company) PutFile(ctx context.Context, req api.PutFileRequest, opts ...WriteOption) (controlplane.BoardResult, error) {
	return co.board(ctx, "PUT", "/files", req, opts)
}

// Files lists managed files (scope and owner "" for all).
func (co *Company) Files(ctx context.Context, scope controlplane.FileScope, owner string) (api.FileList, error) {
	v := url.Values{}
	if scope != "" {
		v.Set("scope", string(scope))
	}
	if owner != "" {
		v.Set("owner", owner)
	}
	var out api.FileList
	p := co.prefix + "/files"
	if len(v) > 0 {
		p += "?" + v.Encode()
	}
	err := co.c.do(ctx, "GET", p, nil, &out)
	return out, err
}

// FileContent downloads a managed file, checked against its SHA-256.
func (co *Company) FileContent(ctx context.Context, fileID string) (Download, error) {
	return co.c.download(ctx, co.prefix+"/files/"+url.PathEscape(fileID)+"/content")
}

// ArtifactContent downloads an artifact's bytes, checked against their SHA-256.
func (co *Company) ArtifactContent(ctx context.Context, artifactID string) (Download, error) {
	return co.c.download(ctx, co.prefix+"/artifacts/"+url.PathEscape(artifactID)+"/content")
}

// HomeReceipts lists home save receipts (actor and run "" for all).
func (co *Company) HomeReceipts(ctx context.Context, actor, run string) ([]controlplane.HomeReceipt, error) {
	v := url.Values{}
	if actor != "" {
		v.Set("actor", actor)
	}
	if run != "" {
		v.Set("run", run)
	}
	var out api.HomeReceiptList
	err := co.c.do(ctx, "GET", co.prefix+"/home-receipts?"+v.Encode(), nil, &out)
	return out.Receipts, err
}

// FileConflicts lists home file conflicts (actor and status "" for all).
func (co *Company) FileConflicts(ctx context.Context, actor string, status controlplane.ConflictStatus) ([]controlplane.FileConflict, error) {
	v := url.Values{}
	if actor != "" {
		v.Set("actor", actor)
	}
	if status != "" {
		v.Set("status", string(status))
	}
	var out api.FileConflictList
	err := co.c.do(ctx, "GET", co.prefix+"/file-conflicts?"+v.Encode(), nil, &out)
	return out.Conflicts, err
}

// ResolveFileConflict is board operation resolve_file_conflict.
func (co *Company) ResolveFileConflict(ctx context.Context, conflict string, req api.ResolveFileConflictRequest, opts ...WriteOption) (controlplane.BoardResult, error) {
	return co.board(ctx, "POST", "/file-conflicts/"+url.PathEscape(conflict)+"/resolve", req, opts)
}

// RetryRun is board operation retry_run (POST /runs/{run}/retry); the result's ID is
// the retry wake.
func (co *Company) RetryRun(ctx context.Context, run string, opts ...WriteOption) (controlplane.BoardResult, error) {
	return co.board(ctx, "POST", "/runs/"+url.PathEscape(run)+"/retry", nil, opts)
}

// ApplyBoard implements controlplane.Board over the board routes: each kind goes to its
// route, the path ids taken from the input. Errors: the server's, or
// board_input_invalid for an unknown kind or an input that is not a JSON object.
func (co *Company) ApplyBoard(ctx context.Context, op controlplane.BoardOp) (controlplane.BoardResult, error) {
	in := map[string]json.RawMessage{}
	if len(op.Input) > 0 && !bytes.Equal(bytes.TrimSpace(op.Input), []byte("null")) {
		if err := json.Unmarshal(op.Input, &in); err != nil {
			return controlplane.BoardResult{}, &controlplane.Error{Code: controlplane.CodeBoardInputInvalid, Message: "board input must be a JSON object: " + err.Error()}
		}
	}
	pathID := func(name string) string {
		var id string
		_ = json.Unmarshal(in[name], &id)
		delete(in, name)
		return url.PathEscape(id)
	}
	opts := []WriteOption{IdempotencyKey(op.IdempotencyKey)}
	var method, path string
	var body any = in
	switch op.Kind {
	case controlplane.BoardCreateAgent:
		method, path = "POST", "/agents"
	case controlplane.BoardCreateProject:
		method, path = "POST", "/projects"
	case controlplane.BoardCreateEnvironment:
		method, path = "POST", "/environments"
	case controlplane.BoardCreateIssue:
		method, path = "POST", "/issues"
	case controlplane.BoardComment:
		method, path = "POST", "/issues/"+pathID("issueId")+"/comments"
	case controlplane.BoardResolveInteraction:
		method, path = "POST", "/interactions/"+pathID("interactionId")+"/resolve"
	case controlplane.BoardDecideApproval:
		method, path = "POST", "/approvals/"+pathID("approvalId")+"/decide"
	case controlplane.BoardPutFile:
		method, path = "PUT", "/files"
	case controlplane.BoardResolveFileConflict:
		method, path = "POST", "/file-conflicts/"+pathID("conflictId")+"/resolve"
	case controlplane.BoardCreateConversation:
		method, path = "POST", "/conversations"
	case controlplane.BoardChatMessage:
		method, path = "POST", "/conversations/"+pathID("conversationId")+"/messages"
	case controlplane.BoardRetryRun:
		method, path, body = "POST", "/runs/"+pathID("runId")+"/retry", nil
	default:
		return controlplane.BoardResult{}, &controlplane.Error{Code: controlplane.CodeBoardInputInvalid, Message: fmt.Sprintf("unknown board operation %q", op.Kind)}
	}
	return co.board(ctx, method, path, body, opts)
}

// RetryHeartbeatRun is the heartbeat Retry (POST /api/heartbeat-runs/{run}/retry): the
// failed or interrupted run gets a retry wake, and the response names the run the
// heartbeat runner opens for it.
func (c *Client) RetryHeartbeatRun(ctx context.Context, runID string, opts ...WriteOption) (api.RetryRunResponse, error) {
	var out api.RetryRunResponse
	err := c.doWith(ctx, "POST", "/api/heartbeat-runs/"+url.PathEscape(runID)+"/retry", nil, &out, opts)
	return out, err
}

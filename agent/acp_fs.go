package agent

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"strings"

	acp "github.com/coder/acp-go-sdk"

	"github.com/agentproof/agentproof/agent/session"
)

// The ACP client's file system capability (docs/acp.md "File operations"):
// fs/read_text_file and fs/write_text_file, served inside the workspace (os.Root: no
// symlink or ".." escapes) and recorded in the turn (session.FileOpRecord). The client
// does not judge whether a write was permitted: that is the agent's duty, and the
// record (with AfterCancel) is the evidence.

// workspacePath turns an absolute path the agent sent into one relative to the
// workspace. Errors: a relative path or one outside the workspace.
func (c *acpConn) workspacePath(p string) (string, error) {
	if !filepath.IsAbs(p) {
		return "", fmt.Errorf("path %q is not absolute (ACP requires absolute paths)", session.Clip(p, 200))
	}
	rel, err := filepath.Rel(c.workspace, filepath.Clean(p))
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return "", fmt.Errorf("path %q is outside the workspace", session.Clip(p, 200))
	}
	if rel == "." {
		return "", fmt.Errorf("path %q is the workspace itself", session.Clip(p, 200))
	}
	return rel, nil
}

// fileOp notes rec in the log and records it in the running turn.
func (c *acpConn) fileOp(rec session.FileOpRecord) {
	c.h.Note("fs_"+rec.Op, rec)
	c.h.Update(func(r session.Recorder) { r.FileOp(rec) })
}

// refuseFileOp records file operation rec as refused with err and answers the
// refusal: ACP's invalid params, naming err.
func refuseFileOp[R any](c *acpConn, rec *session.FileOpRecord, err error) (R, error) {
	rec.Error = err.Error()
	c.fileOp(*rec)
	var zero R
	return zero, acp.NewInvalidParams(map[string]any{"error": err.Error()})
}

// ReadTextFile serves fs/read_text_file inside the workspace, optionally from a
// 1-based line and for limit lines, at most MaxACPReadBytes.
func (c *acpConn) ReadTextFile(_ context.Context, p acp.ReadTextFileRequest) (acp.ReadTextFileResponse, error) {
	if !c.clientFS {
		return acp.ReadTextFileResponse{}, acp.NewMethodNotFound(acp.ClientMethodFsReadTextFile)
	}
	rec := session.FileOpRecord{Op: "read", Path: session.Clip(p.Path, 4096)}
	fail := func(err error) (acp.ReadTextFileResponse, error) {
		return refuseFileOp[acp.ReadTextFileResponse](c, &rec, err)
	}
	rel, err := c.workspacePath(p.Path)
	if err != nil {
		return fail(err)
	}
	rec.Path = rel
	f, err := c.root.Open(rel)
	if errors.Is(err, fs.ErrNotExist) {
		// ACP's "Resource not found" (-32002): agents read before they create a file.
		rec.Error = "not found"
		c.fileOp(rec)
		return acp.ReadTextFileResponse{}, &acp.RequestError{Code: ACPResourceNotFound, Message: "Resource not found", Data: map[string]any{"uri": p.Path}}
	}
	if err != nil {
		return fail(fmt.Errorf("opening %s: %w", rel, errors.Unwrap(err)))
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxACPReadBytes+1))
	if err != nil {
		return fail(fmt.Errorf("reading %s: %w", rel, err))
	}
	if len(b) > MaxACPReadBytes {
		return fail(fmt.Errorf("%s is larger than %d bytes", rel, MaxACPReadBytes))
	}
	content := lineRange(string(b), p.Line, p.Limit)
	sum := sha256.Sum256(b)
	rec.Bytes, rec.SHA256 = len(content), hex.EncodeToString(sum[:])
	c.fileOp(rec)
	return acp.ReadTextFileResponse{Content: content}, nil
}

// lineRange is content from 1-based line (nil: the first) for limit lines (nil: all).
func lineRange(content string, line, limit *int) string {
	if line == nil && limit == nil {
		return content
	}
	lines := strings.SplitAfter(content, "\n")
	start := 0
	if line != nil && *line > 1 {
		start = min(*line-1, len(lines))
	}
	end := len(lines)
	if limit != nil && *limit >= 0 && start+*limit < end {
		end = start + *limit
	}
	return strings.Join(lines[start:end], "")
}

// WriteTextFile serves fs/write_text_file inside the workspace, creating parent
// directories, within MaxACPWriteBytes per session.
func (c *acpConn) WriteTextFile(_ context.Context, p acp.WriteTextFileRequest) (acp.WriteTextFileResponse, error) {
	if !c.clientFS {
		return acp.WriteTextFileResponse{}, acp.NewMethodNotFound(acp.ClientMethodFsWriteTextFile)
	}
	sum := sha256.Sum256([]byte(p.Content))
	rec := session.FileOpRecord{Op: "write", Path: session.Clip(p.Path, 4096), Bytes: len(p.Content), SHA256: hex.EncodeToString(sum[:])}
	fail := func(err error) (acp.WriteTextFileResponse, error) {
		return refuseFileOp[acp.WriteTextFileResponse](c, &rec, err)
	}
	rel, err := c.workspacePath(p.Path)
	if err != nil {
		return fail(err)
	}
	rec.Path = rel
	c.mu.Lock()
	over := c.written+int64(len(p.Content)) > MaxACPWriteBytes
	if !over {
		c.written += int64(len(p.Content))
	}
	c.mu.Unlock()
	if over {
		return fail(fmt.Errorf("the session's writes would exceed %d bytes", MaxACPWriteBytes))
	}
	if dir := filepath.Dir(rel); dir != "." {
		if err := c.root.MkdirAll(dir, 0o755); err != nil {
			return fail(fmt.Errorf("creating %s: %w", dir, errors.Unwrap(err)))
		}
	}
	if err := c.root.WriteFile(rel, []byte(p.Content), 0o644); err != nil {
		return fail(fmt.Errorf("writing %s: %w", rel, errors.Unwrap(err)))
	}
	c.fileOp(rec)
	return acp.WriteTextFileResponse{}, nil
}

// The client offers no terminal capability: agents run commands with their own tools.

func (c *acpConn) CreateTerminal(context.Context, acp.CreateTerminalRequest) (acp.CreateTerminalResponse, error) {
	return acp.CreateTerminalResponse{}, acp.NewMethodNotFound(acp.ClientMethodTerminalCreate)
}

func (c *acpConn) KillTerminal(context.Context, acp.KillTerminalRequest) (acp.KillTerminalResponse, error) {
	return acp.KillTerminalResponse{}, acp.NewMethodNotFound(acp.ClientMethodTerminalKill)
}

func (c *acpConn) TerminalOutput(context.Context, acp.TerminalOutputRequest) (acp.TerminalOutputResponse, error) {
	return acp.TerminalOutputResponse{}, acp.NewMethodNotFound(acp.ClientMethodTerminalOutput)
}

func (c *acpConn) ReleaseTerminal(context.Context, acp.ReleaseTerminalRequest) (acp.ReleaseTerminalResponse, error) {
	return acp.ReleaseTerminalResponse{}, acp.NewMethodNotFound(acp.ClientMethodTerminalRelease)
}

func (c *acpConn) WaitForTerminalExit(context.Context, acp.WaitForTerminalExitRequest) (acp.WaitForTerminalExitResponse, error) {
	return acp.WaitForTerminalExitResponse{}, acp.NewMethodNotFound(acp.ClientMethodTerminalWaitForExit)
}

package server

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/agentproof/agentproof/api"
	"github.com/agentproof/agentproof/controlplane"
	"github.com/agentproof/agentproof/controlplane/store"
)

// The managed-file routes (docs/files.md): blobs up and down, managed files, artifact
// bytes, home receipts and conflicts, and Retry. A download answers with
// http.ServeContent (Range, If-Range and If-None-Match against the ETag, which is the
// quoted SHA-256), Content-Type as recorded, Content-Digest (RFC 9530, sha-256) and
// X-Content-Type-Options nosniff; its bytes are checked against their SHA-256 before
// they are sent.

// download is a handler's answer of raw bytes: served by serveDownload.
type download struct {
	data        []byte
	sha256      string
	contentType string
	name        string
}

// serveDownload serves d with Range support.
func serveDownload(w http.ResponseWriter, r *http.Request, d download) {
	h := w.Header()
	h.Set("Content-Type", d.contentType)
	h.Set("ETag", `"`+d.sha256+`"`)
	h.Set("X-Content-Type-Options", "nosniff")
	if sum, err := hex.DecodeString(d.sha256); err == nil {
		h.Set("Content-Digest", "sha-256=:"+base64.StdEncoding.EncodeToString(sum)+":")
	}
	if d.name != "" {
		h.Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": d.name}))
	}
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(d.data))
}

// blobDownload answers blob sha as a download of contentType named name ("": no
// name), after checking that its bytes are the size recorded.
func blobDownload(ctx context.Context, c *store.Company, sha string, size int64, contentType, name string) (any, error) {
	data, err := c.Blob(ctx, sha)
	if err != nil {
		return nil, err
	}
	if int64(len(data)) != size {
		return nil, fmt.Errorf("server: blob %s has %d bytes, %d recorded", sha, len(data), size)
	}
	return download{data: data, sha256: sha, contentType: contentType, name: name}, nil
}

func (s *Server) retryRun(ctx context.Context, r *http.Request, _ principal, c *store.Company) (any, error) {
	in, _ := json.Marshal(map[string]string{"runId": r.PathValue("run")})
	return c.ApplyBoard(ctx, controlplane.BoardOp{Kind: controlplane.BoardRetryRun, Input: in, IdempotencyKey: idempotencyKey(r)})
}

func (s *Server) uploadBlob(ctx context.Context, r *http.Request, _ principal, c *store.Company) (any, error) {
	b, err := readBody(r)
	if err != nil {
		return nil, err
	}
	return c.PutBlob(ctx, controlplane.BlobPut{Content: b, IdempotencyKey: idempotencyKey(r)})
}

// visibleTo reports whether the agent p may read file f: the company's files and its
// own home.
func visibleTo(p principal, f *controlplane.ManagedFile) bool {
	return p.board || f.Scope == controlplane.FileScopeCompany || (f.Scope == controlplane.FileScopeAgentHome && f.OwnerID == p.agent.Actor)
}

// agentTask returns the task of the agent's run ("" for the board).
func agentTask(st controlplane.State, p principal) string {
	if p.board {
		return ""
	}
	for _, r := range st.Runs {
		if r.ID == p.agent.Run {
			return r.TaskID
		}
	}
	return ""
}

func (s *Server) downloadBlob(ctx context.Context, r *http.Request, p principal, c *store.Company) (any, error) {
	sha := r.PathValue("sha256")
	if !controlplane.ValidSHA256(sha) {
		return nil, &controlplane.Error{Code: controlplane.CodeBlobInvalid, Message: fmt.Sprintf("%q is not a SHA-256 of 64 lower-case hex digits", clipText(sha, 80))}
	}
	st, err := c.Snapshot(ctx)
	if err != nil {
		return nil, err
	}
	var size int64 = -1
	contentType := controlplane.DefaultContentType
	for _, b := range st.Blobs {
		if b.SHA256 == sha {
			size = b.ByteSize
		}
	}
	if size < 0 {
		return nil, &controlplane.Error{Code: controlplane.CodeBlobMissing, Message: "no blob " + sha + " is stored"}
	}
	if !p.board {
		task, ok := agentTask(st, p), false
		for _, f := range st.Files {
			ok = ok || (f.SHA256 == sha && visibleTo(p, f))
		}
		for _, a := range st.Artifacts {
			ok = ok || (a.SHA256 == sha && a.TaskID == task)
		}
		if !ok {
			return nil, errForbidden("blob " + sha + " is not in a file or artifact this agent may read")
		}
	}
	return blobDownload(ctx, c, sha, size, contentType, "")
}

func (s *Server) listFiles(ctx context.Context, r *http.Request, p principal, c *store.Company) (any, error) {
	q := r.URL.Query()
	scope, owner := controlplane.FileScope(q.Get("scope")), q.Get("owner")
	if scope != "" && !slices.Contains(controlplane.FileScopes, scope) {
		return nil, invalid(fmt.Sprintf("scope must be one of company, agent_home; got %q", clipText(string(scope), 40)))
	}
	if !p.board && owner != "" && owner != p.agent.Actor {
		return nil, errForbidden("an agent lists only its own home")
	}
	return readRaw(ctx, c, func(st *controlplane.State) (any, error) {
		out := api.FileList{Files: []controlplane.ManagedFile{}}
		listing := map[string]string{}
		for _, f := range st.Files {
			if (scope != "" && f.Scope != scope) || (owner != "" && f.OwnerID != owner) || !visibleTo(p, f) {
				continue
			}
			out.Files = append(out.Files, *f)
			listing[f.Path] = f.SHA256
		}
		slices.SortFunc(out.Files, func(a, b controlplane.ManagedFile) int {
			return strings.Compare(string(a.Scope)+"\x00"+a.OwnerID+"\x00"+a.Path, string(b.Scope)+"\x00"+b.OwnerID+"\x00"+b.Path)
		})
		if scope == controlplane.FileScopeAgentHome && owner != "" {
			out.HomeDigest = controlplane.HomeDigest(listing)
		}
		return out, nil
	})
}

// readRaw answers what read makes of c's state, read in place and encoded under the
// state's lock (no copy of the whole state); its errors are read's or the encoding's.
func readRaw(ctx context.Context, c *store.Company, read func(st *controlplane.State) (any, error)) (any, error) {
	b, err := c.ReadJSON(ctx, read)
	if err != nil {
		return nil, err
	}
	return rawBody(b), nil
}

func (s *Server) fileContent(ctx context.Context, r *http.Request, p principal) (any, error) {
	c, st, err := s.pathState(ctx, r)
	if err != nil {
		return nil, err
	}
	id := r.PathValue("file")
	for _, f := range st.Files {
		if f.ID != id {
			continue
		}
		if !visibleTo(p, f) {
			return nil, errForbidden("file " + id + " is in another agent's home")
		}
		return blobDownload(ctx, c, f.SHA256, f.ByteSize, f.ContentType, path.Base(f.Path))
	}
	return nil, &controlplane.Error{Code: controlplane.CodeFileMissing, Message: "file " + id + " does not exist"}
}

func (s *Server) artifactContent(ctx context.Context, r *http.Request, p principal) (any, error) {
	c, st, err := s.pathState(ctx, r)
	if err != nil {
		return nil, err
	}
	id := r.PathValue("artifact")
	for _, a := range st.Artifacts {
		if a.ID != id {
			continue
		}
		if task := agentTask(st, p); !p.board && a.TaskID != task {
			return nil, errForbidden("artifact " + id + " belongs to another task")
		}
		if !controlplane.ValidSHA256(a.SHA256) {
			return nil, &controlplane.Error{Code: controlplane.CodeBlobMissing, Message: "artifact " + id + " has no stored bytes (sha256 " + clipText(a.SHA256, 80) + ")"}
		}
		return blobDownload(ctx, c, a.SHA256, a.ByteSize, a.ContentType, path.Base(a.Filename))
	}
	return nil, &controlplane.Error{Code: controlplane.CodeFileMissing, Message: "artifact " + id + " does not exist"}
}

func (s *Server) homeReceipts(ctx context.Context, r *http.Request, _ principal, c *store.Company) (any, error) {
	q := r.URL.Query()
	return readRaw(ctx, c, func(st *controlplane.State) (any, error) {
		out := api.HomeReceiptList{Receipts: []controlplane.HomeReceipt{}}
		for _, rc := range st.HomeReceipts {
			if (q.Get("actor") == "" || rc.ActorID == q.Get("actor")) && (q.Get("run") == "" || rc.RunID == q.Get("run")) {
				out.Receipts = append(out.Receipts, *rc)
			}
		}
		return out, nil
	})
}

func (s *Server) fileConflicts(ctx context.Context, r *http.Request, _ principal) (any, error) {
	_, st, err := s.pathState(ctx, r)
	if err != nil {
		return nil, err
	}
	q := r.URL.Query()
	out := api.FileConflictList{Conflicts: []controlplane.FileConflict{}}
	for _, fc := range st.FileConflicts {
		if (q.Get("actor") == "" || fc.ActorID == q.Get("actor")) && (q.Get("status") == "" || string(fc.Status) == q.Get("status")) {
			out.Conflicts = append(out.Conflicts, *fc)
		}
	}
	return out, nil
}

package api

import "github.com/agentproof/agentproof/controlplane"

// Managed files on the wire (package controlplane files.go and home.go; docs/files.md).
//
//	POST /api/companies/{company}/blobs                         raw bytes → BlobRef (board or agent)
//	GET  /api/companies/{company}/blobs/{sha256}                the bytes (Range)
//	PUT  /api/companies/{company}/files                         PutFileRequest → BoardResult (board)
//	GET  /api/companies/{company}/files?scope=&owner=           FileList (board; an agent sees company files and its own home)
//	GET  /api/companies/{company}/files/{file}/content          the bytes (Range)
//	GET  /api/companies/{company}/artifacts/{artifact}/content  the artifact's bytes (Range)
//	GET  /api/companies/{company}/home-receipts?actor=&run=     HomeReceiptList (board)
//	GET  /api/companies/{company}/file-conflicts?actor=&status= FileConflictList (board)
//	POST /api/companies/{company}/file-conflicts/{conflict}/resolve  ResolveFileConflictRequest → BoardResult

// BlobRef names stored bytes: SHA-256 (lower-case hex) and size in bytes.
type BlobRef = controlplane.BlobRef

// PutFileRequest writes the managed file at Path (board operation put_file): Scope
// company (default) or agent_home with OwnerID the agent's actor id; SHA256 names an
// uploaded blob; ContentType defaults to application/octet-stream (an existing file
// keeps its own); with ExpectedSHA256 the file's current SHA-256 ("" for none) must be
// it (409 file_revision_conflict).
type PutFileRequest struct {
	Scope          controlplane.FileScope `json:"scope,omitempty"`
	OwnerID        string                 `json:"ownerId,omitempty"`
	Path           string                 `json:"path"`
	SHA256         string                 `json:"sha256"`
	ContentType    string                 `json:"contentType,omitempty"`
	ExpectedSHA256 *string                `json:"expectedSha256,omitempty"`
}

// FileList lists managed files in path order; HomeDigest is the listing's
// controlplane.HomeDigest when the list is one agent's home (scope agent_home and an
// owner), "" otherwise.
type FileList struct {
	Files      []controlplane.ManagedFile `json:"files"`
	HomeDigest string                     `json:"homeDigest,omitempty"`
}

// HomeReceiptList lists home save receipts, oldest first.
type HomeReceiptList struct {
	Receipts []controlplane.HomeReceipt `json:"receipts"`
}

// FileConflictList lists home file conflicts, oldest first.
type FileConflictList struct {
	Conflicts []controlplane.FileConflict `json:"conflicts"`
}

// ResolveFileConflictRequest resolves a conflict (the conflict is in the path):
// Resolution keep_current or take_incoming, CurrentSHA256 the SHA-256 of the current
// file the board reviewed ("" when it reviewed it as absent; 409 file_conflict_stale
// when the file changed since).
type ResolveFileConflictRequest struct {
	Resolution    controlplane.ConflictResolution `json:"resolution"`
	CurrentSHA256 *string                         `json:"currentSha256"`
}

// RetryRunResponse answers the heartbeat Retry (POST /api/heartbeat-runs/{run}/retry):
// the failed or interrupted run, the retry wake, the id of the run the heartbeat runner
// opens for that wake (bound to RunID by retryOf) and the state revision.
type RetryRunResponse struct {
	RunID         string `json:"runId"`
	WakeID        string `json:"wakeId"`
	RetryRunID    string `json:"retryRunId"`
	StateRevision int64  `json:"stateRevision"`
}

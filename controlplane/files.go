package controlplane

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"maps"
	"mime"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/agentproof/agentproof/canonjson"
)

// Managed files (docs/files.md). A company stores bytes as content-addressed blobs: a
// blob is named by the lower-case hex SHA-256 of its bytes and recorded in the state
// (Blob: digest, size, time) while the bytes themselves live beside the state — in a
// Memory alone, in a map that Serialize writes into each Blob's content; in the durable
// store, in its blobs table, written before the journal entry that records the blob.
// A ManagedFile names a blob at a path in a scope (the company's files, or an agent's
// registered home, FileScopeAgentHome); register_deliverable verifies an artifact's
// declared size and digest against its bytes. Blobs are never deleted.

// Size limits of managed storage, in bytes (and files).
const (
	// MaxFileBytes bounds one blob (an upload, a home file): 32 MiB. A larger upload is
	// refused with CodeRequestTooLarge (413); a larger home file is not saved and the
	// receipt names it among its problems.
	MaxFileBytes = 32 << 20
	// MaxInlineContentBytes bounds the decoded contentBase64 of register_deliverable
	// (512 KiB): the command travels in a JSON body of at most 1 MiB, and its canonical
	// input is kept in the idempotency record. Larger deliverables are uploaded as blobs
	// first and registered by their SHA-256.
	MaxInlineContentBytes = 512 << 10
	// MaxFilePathBytes bounds a managed file's path.
	MaxFilePathBytes = 512
	// MaxHomeFiles bounds the entries (changes, deletions and unchanged files together)
	// of one home save.
	MaxHomeFiles = 4096
	// MaxHomeBytes bounds the total size of one agent home (the files a save leaves):
	// 256 MiB.
	MaxHomeBytes = 256 << 20
)

// MaxIdempotencyKeyBytes bounds a board operation's idempotency key (bytes); package api
// uses the same bound for every key of the HTTP API.
const MaxIdempotencyKeyBytes = 256

// DefaultContentType is the content type of a file or blob that declares none.
const DefaultContentType = "application/octet-stream"

// Blob is one content-addressed blob of the company: SHA256 (64 lower-case hex digits)
// of its bytes, ByteSize in bytes. Content is set only in a serialized Memory state
// (base64 in JSON): Snapshot and the durable store's snapshots never carry bytes.
type Blob struct {
	SHA256    string `json:"sha256"`
	ByteSize  int64  `json:"byteSize"`
	CreatedAt string `json:"createdAt"`
	Content   []byte `json:"content,omitempty"`
}

// BlobRef names stored bytes: their SHA-256 (lower-case hex) and size in bytes.
type BlobRef struct {
	SHA256   string `json:"sha256"`
	ByteSize int64  `json:"byteSize"`
}

// BlobPut uploads bytes (at most MaxFileBytes). IdempotencyKey, when set, makes the
// upload a board write with a key: a replay with the same bytes answers the same
// BlobRef, other bytes under the same key are CodeIdempotencyConflict.
type BlobPut struct {
	Content        []byte `json:"-"`
	IdempotencyKey string `json:"idempotencyKey,omitempty"`
}

// BlobRecord records a blob whose bytes are held outside the Memory (the durable
// store's blobs table): what the store journals for an upload.
type BlobRecord struct {
	SHA256         string `json:"sha256"`
	ByteSize       int64  `json:"byteSize"`
	IdempotencyKey string `json:"idempotencyKey,omitempty"`
}

// ManagedFile is a named file of the company's managed storage: the blob SHA256 (its
// ByteSize bytes) at Path in Scope (OwnerID is the agent's actor id for
// FileScopeAgentHome, "" for FileScopeCompany). Path is relative and slash-separated
// (ValidFilePath). Revision counts its versions from 1; UpdatedByRunID is the run whose
// home save wrote the current version (nil for a board write).
type ManagedFile struct {
	ID             string    `json:"id"`
	CompanyID      string    `json:"companyId"`
	Scope          FileScope `json:"scope"`
	OwnerID        string    `json:"ownerId"`
	Path           string    `json:"path"`
	SHA256         string    `json:"sha256"`
	ByteSize       int64     `json:"byteSize"`
	ContentType    string    `json:"contentType"`
	Revision       int       `json:"revision"`
	UpdatedAt      string    `json:"updatedAt"`
	UpdatedByRunID *string   `json:"updatedByRunId"`
}

// ValidSHA256 reports whether s is 64 lower-case hex digits.
func ValidSHA256(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// SHA256Hex returns the lower-case hex SHA-256 of b.
func SHA256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// ValidFilePath checks a managed file path and returns "" or what is wrong: it must be
// 1..MaxFilePathBytes bytes of valid UTF-8, relative, slash-separated, without empty,
// "." or ".." segments, backslashes, NUL or other control characters.
func ValidFilePath(p string) string {
	switch {
	case p == "":
		return "the path is empty"
	case len(p) > MaxFilePathBytes:
		return "the path is longer than 512 bytes"
	case !utf8.ValidString(p):
		return "the path is not valid UTF-8"
	case strings.HasPrefix(p, "/"):
		return "the path is absolute"
	case strings.Contains(p, `\`):
		return "the path contains a backslash"
	}
	for _, r := range p {
		if r < 0x20 || r == 0x7f {
			return "the path contains a control character"
		}
	}
	for _, seg := range strings.Split(p, "/") {
		switch seg {
		case "":
			return "the path has an empty segment"
		case ".", "..":
			return "the path has a " + seg + " segment"
		}
	}
	return ""
}

// HomeDigest is the SHA-256 (lower-case hex) of an agent home's listing: the RFC 8785
// canonical JSON of [[path, sha256], …] sorted by path. Two homes with the same files
// and bytes have the same digest; the board reviews a home by it.
func HomeDigest(files map[string]string) string {
	paths := slices.Sorted(maps.Keys(files))
	pairs := make([][2]string, len(paths))
	for i, p := range paths {
		pairs[i] = [2]string{p, files[p]}
	}
	b, err := canonjson.Sorted(pairs)
	if err != nil {
		panic("controlplane: encoding a home listing: " + err.Error())
	}
	return SHA256Hex(b)
}

type fileKey struct {
	scope FileScope
	owner string
	path  string
}

// PutBlob stores content as a blob (its SHA-256 is computed here) and returns its
// reference; storing bytes that are already stored is a duplicate that answers the same
// reference. It needs no running lifecycle. Errors: request_too_large (more than
// MaxFileBytes), board_input_invalid (a key over MaxIdempotencyKeyBytes),
// idempotency_conflict (the key was used for other bytes).
func (m *Memory) PutBlob(ctx context.Context, in BlobPut) (BlobRef, error) {
	if len(in.Content) > MaxFileBytes {
		return BlobRef{}, newErr(CodeRequestTooLarge, "the blob is %d bytes; at most %d bytes are stored", len(in.Content), MaxFileBytes)
	}
	if err := m.lock(ctx); err != nil {
		return BlobRef{}, err
	}
	defer m.unlock()
	data := slices.Clone(in.Content)
	if data == nil {
		data = []byte{}
	}
	return m.putBlobLocked(BlobRecord{SHA256: SHA256Hex(data), ByteSize: int64(len(data)), IdempotencyKey: in.IdempotencyKey}, data)
}

// RecordBlob records a blob whose bytes the caller holds (the durable store writes them
// to its blobs table first): PutBlob without the bytes. Errors: blob_invalid (a
// malformed SHA-256, a negative or oversized size, or a size that differs from the
// blob already recorded under the SHA-256), and PutBlob's.
func (m *Memory) RecordBlob(ctx context.Context, in BlobRecord) (BlobRef, error) {
	if err := m.lock(ctx); err != nil {
		return BlobRef{}, err
	}
	defer m.unlock()
	return m.putBlobLocked(in, nil)
}

func (m *Memory) putBlobLocked(in BlobRecord, content []byte) (BlobRef, error) {
	ref := BlobRef{SHA256: in.SHA256, ByteSize: in.ByteSize}
	refs := []string{"blob:" + in.SHA256}
	if !ValidSHA256(in.SHA256) || in.ByteSize < 0 || in.ByteSize > MaxFileBytes {
		return BlobRef{}, m.deny(nil, "put_blob", string(CodeBlobInvalid), nil,
			newErr(CodeBlobInvalid, "a blob needs a SHA-256 of 64 lower-case hex digits and a size from 0 to %d bytes", MaxFileBytes))
	}
	op := BoardOp{Kind: boardPutBlob, Input: mustJSON(map[string]any{"sha256": in.SHA256, "byteSize": in.ByteSize}), IdempotencyKey: in.IdempotencyKey}
	if res, replayed, err := m.boardReplay(op, boardPutBlob.Operation()); err != nil || replayed {
		if err != nil {
			return BlobRef{}, err
		}
		return BlobRef{SHA256: res.ID, ByteSize: in.ByteSize}, nil
	}
	mark := len(m.undo)
	if b := m.idx.blobs[in.SHA256]; b != nil {
		if b.ByteSize != in.ByteSize {
			return BlobRef{}, m.deny(nil, "put_blob", string(CodeBlobInvalid), refs,
				newErr(CodeBlobInvalid, "blob %s is recorded with %d bytes, not %d", in.SHA256, b.ByteSize, in.ByteSize))
		}
		if content != nil && m.contents[in.SHA256] == nil {
			mapSet(m, m.contents, in.SHA256, content)
		}
		m.recordDecision(nil, "put_blob", "duplicate", "blob_already_stored", refs)
	} else {
		m.addBlob(in.SHA256, in.ByteSize, content)
		m.recordMutationSorted(nil, nil, "blob.stored", "blob", in.SHA256, map[string]int64{"byteSize": in.ByteSize},
			"put_blob", "allowed", "blob_stored", refs)
	}
	if err := m.boardRemember(op, BoardResult{Kind: boardPutBlob, ID: in.SHA256, StateRevision: m.st.Revision, EntityRefs: refs, ScheduledWakeIDs: []string{}}); err != nil {
		m.rollback(mark)
		return BlobRef{}, err
	}
	return ref, nil
}

// addBlob records a new blob (content nil: held outside the Memory).
func (m *Memory) addBlob(sha string, size int64, content []byte) {
	b := &Blob{SHA256: sha, ByteSize: size, CreatedAt: m.now()}
	appendv(m, &m.st.Blobs, b)
	mapSet(m, m.idx.blobs, sha, b)
	if content != nil {
		mapSet(m, m.contents, sha, content)
	}
}

// Blob returns a copy of the bytes stored under sha256. Errors: blob_invalid (not a
// SHA-256), blob_missing (no such blob, or — in a Memory whose bytes the durable store
// holds — bytes not held here).
func (m *Memory) Blob(ctx context.Context, sha string) ([]byte, error) {
	if err := m.lock(ctx); err != nil {
		return nil, err
	}
	defer m.unlock()
	if !ValidSHA256(sha) {
		return nil, newErr(CodeBlobInvalid, "%q is not a SHA-256 of 64 lower-case hex digits", clipID(sha))
	}
	if m.idx.blobs[sha] == nil {
		return nil, newErr(CodeBlobMissing, "no blob %s is stored", sha)
	}
	c, ok := m.contents[sha]
	if !ok {
		return nil, newErr(CodeBlobMissing, "the bytes of blob %s are not held in memory", sha)
	}
	return slices.Clone(c), nil
}

// HasBlob reports whether a blob is recorded under sha and its size in bytes.
func (m *Memory) HasBlob(ctx context.Context, sha string) (int64, bool, error) {
	if err := m.lock(ctx); err != nil {
		return 0, false, err
	}
	defer m.unlock()
	if b := m.idx.blobs[sha]; b != nil {
		return b.ByteSize, true, nil
	}
	return 0, false, nil
}

// TakeContents removes and returns the blob bytes the Memory holds, by SHA-256: the
// durable store takes them after every operation (register_deliverable's inline
// content, a restored state's contents) and keeps them in its blobs table, so that its
// Memory holds metadata only.
func (m *Memory) TakeContents() map[string][]byte {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.contents) == 0 {
		return nil
	}
	out := m.contents
	m.contents = map[string][]byte{}
	return out
}

func clipID(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}

// putFileInput is board operation put_file's input.
type putFileInput struct {
	Scope          FileScope `json:"scope"`
	OwnerID        string    `json:"ownerId"`
	Path           string    `json:"path"`
	SHA256         string    `json:"sha256"`
	ContentType    string    `json:"contentType"`
	ExpectedSHA256 *string   `json:"expectedSha256"`
}

// checkFileTarget validates a file's scope, owner and path.
func (m *Memory) checkFileTarget(scope FileScope, owner, path string) error {
	switch scope {
	case FileScopeCompany:
		if owner != "" {
			return newErr(CodeBoardInputInvalid, "a company file has no ownerId")
		}
	case FileScopeAgentHome:
		if _, err := m.actor(owner); err != nil {
			return err
		}
	default:
		return newErr(CodeBoardInputInvalid, "file scope must be company or agent_home, not %q", scope)
	}
	if msg := ValidFilePath(path); msg != "" {
		return newErr(CodeBoardInputInvalid, "file path %q: %s", clipID(path), msg)
	}
	return nil
}

func (m *Memory) boardPutFile(c *cmdCtx) (string, error) {
	var in putFileInput
	if err := decodeStrict(c.raw, &in); err != nil {
		return "", err
	}
	if in.Scope == "" {
		in.Scope = FileScopeCompany
	}
	if err := m.checkFileTarget(in.Scope, in.OwnerID, in.Path); err != nil {
		return "", err
	}
	if in.ContentType != "" {
		if _, _, err := mime.ParseMediaType(in.ContentType); err != nil || len(in.ContentType) > 255 {
			return "", newErr(CodeBoardInputInvalid, "contentType %q is not a media type", clipID(in.ContentType))
		}
	}
	b := m.idx.blobs[in.SHA256]
	if b == nil {
		return "", newErr(CodeBlobMissing, "no blob %s is stored; upload the bytes first", clipID(in.SHA256))
	}
	c.ref("blob", b.SHA256)
	cur := m.idx.files[fileKey{in.Scope, in.OwnerID, in.Path}]
	curSHA := ""
	if cur != nil {
		curSHA = cur.SHA256
		c.ref("file", cur.ID)
	}
	if in.ExpectedSHA256 != nil && *in.ExpectedSHA256 != curSHA {
		return "", newErr(CodeFileRevisionConflict, "file %s is at %q, not the expected %q", in.Path, curSHA, *in.ExpectedSHA256)
	}
	f := m.writeFile(in.Scope, in.OwnerID, in.Path, b, in.ContentType, nil)
	c.ref("file", f.ID)
	return f.ID, nil
}

// writeFile creates or updates the file at (scope, owner, path) to blob b; an update
// that changes nothing keeps the revision. contentType "" keeps the file's content type
// (DefaultContentType for a new file).
func (m *Memory) writeFile(scope FileScope, owner, path string, b *Blob, contentType string, runID *string) *ManagedFile {
	k := fileKey{scope, owner, path}
	if cur := m.idx.files[k]; cur != nil {
		if contentType == "" {
			contentType = cur.ContentType
		}
		if cur.SHA256 == b.SHA256 && cur.ContentType == contentType {
			return cur
		}
		at := m.now()
		edit(m, cur, func(f *ManagedFile) {
			f.SHA256, f.ByteSize, f.ContentType = b.SHA256, b.ByteSize, contentType
			f.Revision++
			f.UpdatedAt, f.UpdatedByRunID = at, clonePtr(runID)
		})
		return cur
	}
	if contentType == "" {
		contentType = DefaultContentType
	}
	f := &ManagedFile{ID: m.newID("file"), CompanyID: m.st.Company.ID, Scope: scope, OwnerID: owner, Path: path, SHA256: b.SHA256,
		ByteSize: b.ByteSize, ContentType: contentType, Revision: 1, UpdatedByRunID: clonePtr(runID)}
	f.UpdatedAt = m.now()
	appendv(m, &m.st.Files, f)
	mapSet(m, m.idx.files, k, f)
	mapSet(m, m.idx.fileIDs, f.ID, f)
	return f
}

// deleteFile removes the file at k.
func (m *Memory) deleteFile(k fileKey) {
	cur := m.idx.files[k]
	if cur == nil {
		return
	}
	kept := make([]*ManagedFile, 0, len(m.st.Files)-1)
	for _, f := range m.st.Files {
		if f != cur {
			kept = append(kept, f)
		}
	}
	setv(m, &m.st.Files, kept)
	mapDelete(m, m.idx.files, k)
	mapDelete(m, m.idx.fileIDs, cur.ID)
}

func mapDelete[K comparable, V any](m *Memory, mp map[K]V, k K) {
	old, had := mp[k]
	if !had {
		return
	}
	m.onUndo(func() { mp[k] = old })
	delete(mp, k)
}

// CheckRecordNames checks what a command (its JSON object) says about the record it
// makes before the command is applied: a register_deliverable's filename is a
// relative, clean path (ValidFilePath: no absolute path, no "." or ".." segment, no
// empty segment, backslash or control character, valid UTF-8, at most
// MaxFilePathBytes bytes), and its contentRef, when given, names the blob whose bytes
// it stores: exactly "sha256:<sha256>" of the declared digest. Other commands, and a
// command that does not decode (the state machine says why), pass. Error: an *Error
// with CodeArtifactInvalid (400) naming the field.
//
// The HTTP API applies it to every command it is sent; the state machine does not, so
// that a journal written before these rules still replays.
func CheckRecordNames(cmd []byte) error {
	var in struct {
		Kind       string  `json:"kind"`
		Filename   *string `json:"filename"`
		SHA256     string  `json:"sha256"`
		ContentRef *string `json:"contentRef"`
	}
	if json.Unmarshal(cmd, &in) != nil || CommandKind(in.Kind) != CommandRegisterDeliverable {
		return nil
	}
	if in.Filename != nil && *in.Filename != "" {
		if msg := ValidFilePath(*in.Filename); msg != "" {
			return newErr(CodeArtifactInvalid, "artifact filename %s: %s (a relative, clean path of at most %d bytes, such as report.md or out/summary.txt)", clipQuote(*in.Filename), msg, MaxFilePathBytes)
		}
	}
	if in.ContentRef != nil && *in.ContentRef != "sha256:"+in.SHA256 {
		return newErr(CodeArtifactInvalid, "artifact contentRef %s does not name the stored bytes: it must be sha256:<the declared sha256> (or be left out)", clipQuote(*in.ContentRef))
	}
	return nil
}

// clipQuote is s quoted, its first 64 bytes only (then "…").
func clipQuote(s string) string {
	if len(s) <= 64 {
		return strconv.Quote(s)
	}
	cut := 64
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return strconv.Quote(s[:cut]) + "…"
}

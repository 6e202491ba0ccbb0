package controlplane

import (
	"context"
	"encoding/json"
	"slices"
)

// Agent homes (docs/files.md). An agent's registered home (AGENT_HOME) is the set of
// its FileScopeAgentHome files. The heartbeat runner materialises it into a directory
// before every run, the agent edits it with ordinary filesystem tools, and at the end
// of the run the runner saves it (SaveHome): every path the run changed or deleted,
// with the SHA-256 it started from, and the files it verified unchanged by hash. A
// change whose file the board changed meanwhile is not applied: it is kept as a
// FileConflict until the board resolves it (resolve_file_conflict) against the current
// SHA-256 it reviewed. Every save leaves a HomeReceipt.

// HomeChange is one file a run wrote in its home: Path, the SHA-256 the run started
// from (OldSHA256, "" for a new file), the SHA-256 it left (NewSHA256; its blob must be
// stored) and its size in bytes.
type HomeChange struct {
	Path        string `json:"path"`
	OldSHA256   string `json:"oldSha256"`
	NewSHA256   string `json:"newSha256"`
	ByteSize    int64  `json:"byteSize"`
	ContentType string `json:"contentType,omitempty"`
}

// HomeDeletion is one file a run deleted from its home, with the SHA-256 it started
// from.
type HomeDeletion struct {
	Path      string `json:"path"`
	OldSHA256 string `json:"oldSha256"`
}

// HomeEntry is one file a save verified unchanged (by hashing it): path, SHA-256, size.
type HomeEntry struct {
	Path     string `json:"path"`
	SHA256   string `json:"sha256"`
	ByteSize int64  `json:"byteSize"`
}

// HomeSave is the heartbeat runner's save of an agent's home at the end of run RunID:
// Changes, Deletions and Unchanged (each path at most once, at most MaxHomeFiles
// together), CopiedBytes (the bytes the runner copied into the store for this save: the
// changed files whose blobs were not stored yet) and Problems (entries of the home the
// runner did not save, each named: a symbolic link, a file over MaxFileBytes …).
type HomeSave struct {
	ActorID     string         `json:"actorId"`
	RunID       string         `json:"runId"`
	Changes     []HomeChange   `json:"changes"`
	Deletions   []HomeDeletion `json:"deletions"`
	Unchanged   []HomeEntry    `json:"unchanged"`
	CopiedBytes int64          `json:"copiedBytes"`
	Problems    []string       `json:"problems"`
}

// HomeReceipt is the record of one home save (a save receipt): the run, the changes
// and deletions applied, the files verified unchanged, the conflicts kept instead of
// changes (ConflictIDs), the bytes copied, the problems, and HomeDigest (HomeDigest of
// the home after the save). InputSHA256 is the SHA-256 of the save's canonical JSON, so
// that a repeated save of the run is recognised.
type HomeReceipt struct {
	ID          string         `json:"id"`
	ActorID     string         `json:"actorId"`
	RunID       string         `json:"runId"`
	Changes     []HomeChange   `json:"changes"`
	Deletions   []HomeDeletion `json:"deletions"`
	Unchanged   []HomeEntry    `json:"unchanged"`
	ConflictIDs []string       `json:"conflictIds"`
	CopiedBytes int64          `json:"copiedBytes"`
	Problems    []string       `json:"problems"`
	HomeDigest  string         `json:"homeDigest"`
	InputSHA256 string         `json:"inputSha256"`
	CreatedAt   string         `json:"createdAt"`
}

// FileConflict keeps a run's version of a home file that the board changed during the
// run: BaseSHA256 is what the run started from, CurrentSHA256 the board's version when
// the run was saved, IncomingSHA256 the run's ("" when the run deleted the file, when
// the file was absent). The incoming blob stays stored; resolve_file_conflict applies
// it (take_incoming) or keeps the current file (keep_current).
type FileConflict struct {
	ID               string              `json:"id"`
	ActorID          string              `json:"actorId"`
	RunID            string              `json:"runId"`
	ReceiptID        string              `json:"receiptId"`
	Path             string              `json:"path"`
	BaseSHA256       string              `json:"baseSha256"`
	CurrentSHA256    string              `json:"currentSha256"`
	IncomingSHA256   string              `json:"incomingSha256"`
	IncomingByteSize int64               `json:"incomingByteSize"`
	Status           ConflictStatus      `json:"status"`
	Resolution       *ConflictResolution `json:"resolution"`
	CreatedAt        string              `json:"createdAt"`
	ResolvedAt       *string             `json:"resolvedAt"`
}

// SaveHome applies a home save (see the section comment) and returns its receipt. It
// needs no running lifecycle and accepts a run in any status (a run may complete itself
// before its process ends). Saving the same run again with the same input is a
// duplicate that returns the first receipt. Errors: actor_missing, run_missing,
// board_input_invalid (the run is another actor's, a path is invalid or repeated, too
// many entries), blob_missing (a change's blob is not stored), blob_invalid (a change's
// size is not its blob's), home_save_conflict (the run was saved with other input).
// A failed save changes nothing but a denied decision record.
func (m *Memory) SaveHome(ctx context.Context, in HomeSave) (HomeReceipt, error) {
	if err := m.lock(ctx); err != nil {
		return HomeReceipt{}, err
	}
	defer m.unlock()
	in.Changes, in.Deletions, in.Unchanged, in.Problems = nonNil(in.Changes), nonNil(in.Deletions), nonNil(in.Unchanged), nonNil(in.Problems)
	canon, err := canonjsonOf(in)
	if err != nil {
		return HomeReceipt{}, err
	}
	digest := SHA256Hex(canon)
	runID := strp(in.RunID)
	refs := []string{"run:" + in.RunID, "actor:" + in.ActorID}
	if prev := m.idx.receipts[in.RunID]; prev != nil {
		if prev.InputSHA256 != digest {
			return HomeReceipt{}, m.deny(runID, "save_home", string(CodeHomeSaveConflict), refs,
				newErr(CodeHomeSaveConflict, "the home of run %s was already saved (receipt %s) with other content", in.RunID, prev.ID))
		}
		m.recordDecision(runID, "save_home", "duplicate", "home_already_saved", []string{"home-receipt:" + prev.ID})
		return cloneReceipt(prev), nil
	}
	mark := len(m.undo)
	rc, err := m.saveHome(in, digest)
	if err != nil {
		m.rollback(mark)
		var e *Error
		if ce, ok := err.(*Error); ok {
			e = ce
		} else {
			e = newErr(CodeBoardInputInvalid, "%v", err)
		}
		return HomeReceipt{}, m.deny(runID, "save_home", string(e.Code), refs, e)
	}
	refs = append(refs, "home-receipt:"+rc.ID)
	for _, id := range rc.ConflictIDs {
		refs = append(refs, "file-conflict:"+id)
	}
	m.recordMutation(runID, strp(in.ActorID), "home.saved", "home_receipt", rc.ID,
		map[string]any{"changes": len(rc.Changes), "deletions": len(rc.Deletions), "unchanged": len(rc.Unchanged),
			"conflicts": len(rc.ConflictIDs), "copiedBytes": rc.CopiedBytes},
		"save_home", "allowed", "home_saved", refs)
	return cloneReceipt(rc), nil
}

func canonjsonOf(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, newErr(CodeBoardInputInvalid, "encoding: %v", err)
	}
	return canonicalRaw(b)
}

// saveHome applies home save in (with its canonical digest) for its actor and run and
// stores the receipt: changes and deletions whose path still holds the old content
// are applied, the others become open file conflicts. The caller rolls the store back
// on an error. Errors: actor_missing, run_missing, board_input_invalid (the run is
// another actor's, too many entries, a bad or repeated path, a home over
// MaxHomeBytes), blob_missing, blob_invalid.
func (m *Memory) saveHome(in HomeSave, digest string) (*HomeReceipt, error) {
	actor, err := m.actor(in.ActorID)
	if err != nil {
		return nil, err
	}
	run, err := m.run(in.RunID)
	if err != nil {
		return nil, err
	}
	if run.ActorID != actor.ID {
		return nil, newErr(CodeBoardInputInvalid, "run %s is %s's, not %s's", run.ID, run.ActorID, actor.ID)
	}
	if err := m.checkHomeSave(in); err != nil {
		return nil, err
	}
	rc := &HomeReceipt{ID: m.newID("home-receipt"), ActorID: actor.ID, RunID: run.ID, Changes: []HomeChange{}, Deletions: []HomeDeletion{},
		Unchanged: slices.Clone(in.Unchanged), ConflictIDs: []string{}, CopiedBytes: in.CopiedBytes, Problems: slices.Clone(in.Problems), InputSHA256: digest}
	m.applyHomeSave(rc, in)
	listing := map[string]string{}
	var total int64
	for _, f := range m.st.Files {
		if f.Scope == FileScopeAgentHome && f.OwnerID == actor.ID {
			listing[f.Path] = f.SHA256
			total += f.ByteSize
		}
	}
	if total > MaxHomeBytes {
		return nil, newErr(CodeBoardInputInvalid, "the home would hold %d bytes; at most %d are kept", total, MaxHomeBytes)
	}
	rc.HomeDigest = HomeDigest(listing)
	rc.CreatedAt = m.now()
	appendv(m, &m.st.HomeReceipts, rc)
	mapSet(m, m.idx.receipts, run.ID, rc)
	return rc, nil
}

// checkHomeSave checks a home save's entries before anything is written: at most
// MaxHomeFiles of them, each path valid and named once across changes, deletions and
// unchanged entries, every SHA-256 given well formed, and each change's new blob
// stored with the change's byte size. Errors: board_input_invalid, blob_invalid,
// blob_missing.
func (m *Memory) checkHomeSave(in HomeSave) error {
	if n := len(in.Changes) + len(in.Deletions) + len(in.Unchanged); n > MaxHomeFiles {
		return newErr(CodeBoardInputInvalid, "a home save has %d entries; at most %d are saved", n, MaxHomeFiles)
	}
	seen := map[string]bool{}
	check := func(p string, shas ...string) error {
		if msg := ValidFilePath(p); msg != "" {
			return newErr(CodeBoardInputInvalid, "home path %q: %s", clipID(p), msg)
		}
		if seen[p] {
			return newErr(CodeBoardInputInvalid, "home path %q appears twice in one save", clipID(p))
		}
		seen[p] = true
		for _, s := range shas {
			if s != "" && !ValidSHA256(s) {
				return newErr(CodeBlobInvalid, "home path %q: %q is not a SHA-256", clipID(p), clipID(s))
			}
		}
		return nil
	}
	for _, ch := range in.Changes {
		if err := check(ch.Path, ch.OldSHA256, ch.NewSHA256); err != nil {
			return err
		}
		b := m.idx.blobs[ch.NewSHA256]
		if b == nil {
			return newErr(CodeBlobMissing, "home path %q: no blob %q is stored", clipID(ch.Path), clipID(ch.NewSHA256))
		}
		if b.ByteSize != ch.ByteSize {
			return newErr(CodeBlobInvalid, "home path %q: blob %s has %d bytes, not %d", clipID(ch.Path), b.SHA256, b.ByteSize, ch.ByteSize)
		}
	}
	for _, d := range in.Deletions {
		if err := check(d.Path, d.OldSHA256); err != nil {
			return err
		}
	}
	for _, u := range in.Unchanged {
		if err := check(u.Path, u.SHA256); err != nil {
			return err
		}
	}
	return nil
}

// applyHomeSave writes a checked home save into receipt rc's actor home: a change
// whose path holds its old or its new content is written, a deletion whose path holds
// its old content or nothing is deleted, and each other entry opens a file conflict
// (current versus incoming content) listed in rc.ConflictIDs.
func (m *Memory) applyHomeSave(rc *HomeReceipt, in HomeSave) {
	current := func(p string) string {
		if f := m.idx.files[fileKey{FileScopeAgentHome, rc.ActorID, p}]; f != nil {
			return f.SHA256
		}
		return ""
	}
	conflict := func(p, base, cur, incoming string, size int64) {
		fc := &FileConflict{ID: m.newID("file-conflict"), ActorID: rc.ActorID, RunID: rc.RunID, ReceiptID: rc.ID, Path: p, BaseSHA256: base,
			CurrentSHA256: cur, IncomingSHA256: incoming, IncomingByteSize: size, Status: ConflictOpen}
		fc.CreatedAt = m.now()
		appendv(m, &m.st.FileConflicts, fc)
		mapSet(m, m.idx.conflicts, fc.ID, fc)
		rc.ConflictIDs = append(rc.ConflictIDs, fc.ID)
	}
	for _, ch := range in.Changes {
		switch cur := current(ch.Path); cur {
		case ch.OldSHA256, ch.NewSHA256:
			m.writeFile(FileScopeAgentHome, rc.ActorID, ch.Path, m.idx.blobs[ch.NewSHA256], ch.ContentType, strp(rc.RunID))
			rc.Changes = append(rc.Changes, ch)
		default:
			conflict(ch.Path, ch.OldSHA256, cur, ch.NewSHA256, ch.ByteSize)
		}
	}
	for _, d := range in.Deletions {
		switch cur := current(d.Path); cur {
		case d.OldSHA256, "":
			m.deleteFile(fileKey{FileScopeAgentHome, rc.ActorID, d.Path})
			rc.Deletions = append(rc.Deletions, d)
		default:
			conflict(d.Path, d.OldSHA256, cur, "", 0)
		}
	}
}

func cloneReceipt(r *HomeReceipt) HomeReceipt {
	c := *r
	c.Changes = slices.Clone(r.Changes)
	c.Deletions = slices.Clone(r.Deletions)
	c.Unchanged = slices.Clone(r.Unchanged)
	c.ConflictIDs = slices.Clone(r.ConflictIDs)
	c.Problems = slices.Clone(r.Problems)
	return c
}

// resolveConflictInput is board operation resolve_file_conflict's input: the conflict,
// the resolution and the SHA-256 of the current file the board reviewed ("" when it
// reviewed the file as absent).
type resolveConflictInput struct {
	ConflictID    string             `json:"conflictId"`
	Resolution    ConflictResolution `json:"resolution"`
	CurrentSHA256 *string            `json:"currentSha256"`
}

func (m *Memory) boardResolveFileConflict(c *cmdCtx) (string, error) {
	var in resolveConflictInput
	if err := decodeStrict(c.raw, &in); err != nil {
		return "", err
	}
	fc := m.idx.conflicts[in.ConflictID]
	if fc == nil {
		return "", newErr(CodeFileConflictMissing, "file conflict %s does not exist", clipID(in.ConflictID))
	}
	c.ref("file-conflict", fc.ID)
	if fc.Status != ConflictOpen {
		return "", newErr(CodeFileConflictResolved, "file conflict %s is already resolved (%s)", fc.ID, *fc.Resolution)
	}
	if !slices.Contains(ConflictResolutions, in.Resolution) {
		return "", newErr(CodeBoardInputInvalid, "resolution must be keep_current or take_incoming, not %q", in.Resolution)
	}
	if in.CurrentSHA256 == nil {
		return "", newErr(CodeBoardInputInvalid, "currentSha256 is required: the SHA-256 of the current file the board reviewed (\"\" when absent)")
	}
	k := fileKey{FileScopeAgentHome, fc.ActorID, fc.Path}
	cur := ""
	if f := m.idx.files[k]; f != nil {
		cur = f.SHA256
		c.ref("file", f.ID)
	}
	if cur != *in.CurrentSHA256 {
		return "", newErr(CodeFileConflictStale, "file %s is now at %q, not the reviewed %q; review it again", fc.Path, cur, *in.CurrentSHA256)
	}
	if in.Resolution == ResolveTakeIncoming {
		if fc.IncomingSHA256 == "" {
			m.deleteFile(k)
		} else {
			f := m.writeFile(FileScopeAgentHome, fc.ActorID, fc.Path, m.idx.blobs[fc.IncomingSHA256], "", strp(fc.RunID))
			c.ref("file", f.ID)
		}
	}
	at := m.now()
	res := in.Resolution
	edit(m, fc, func(f *FileConflict) {
		f.Status, f.Resolution, f.ResolvedAt = ConflictResolved, &res, strp(at)
	})
	return fc.ID, nil
}

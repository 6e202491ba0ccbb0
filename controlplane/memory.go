package controlplane

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/text/collate"
	"golang.org/x/text/language"

	"github.com/agentproof/agentproof/canonjson"
)

// Memory is the deterministic in-memory Port (docs/control-plane.md). It is safe for concurrent use
// (one mutex serialises every operation). It has no wall clock and no randomness: time
// comes from the fixture clock in the state and ids from per-kind counters. Every value
// it returns is a copy. Failed and dry-run commands are rolled back with an undo log,
// so their cost does not grow with the size of the state.
type Memory struct {
	mu   sync.Mutex
	st   *State
	idx  indexes
	undo []func()
	coll *collate.Collator
	// contents are the bytes of the blobs held here, by SHA-256 (files.go); Serialize
	// writes them into the blobs' content, Restore reads them back.
	contents map[string][]byte
}

// runIndex speeds up event dedupe and replay for one run; it is rebuilt on restore.
type runIndex struct {
	byEventID   map[string]int
	bySeq       map[string]map[int64]int // sourceInstanceId → sourceSeq → event index
	native      map[int64]int            // native sequence → event index
	nativeCount int64
}

type indexes struct {
	actors       map[string]*Actor
	tasks        map[string]*Task
	outOfScope   map[string]bool
	docs         map[[2]string]*Document
	revisionDoc  map[string]*Document
	interactions map[string]*Interaction
	approvals    map[string]*Approval
	services     map[string]*WorkspaceService
	runs         map[string]*Run
	runIdx       map[string]*runIndex
	idem         map[[2]string]*IdempotencyRecord
	skillSlugs   map[string]bool
	blobs        map[string]*Blob
	files        map[fileKey]*ManagedFile
	fileIDs      map[string]*ManagedFile
	conflicts    map[string]*FileConflict
	receipts     map[string]*HomeReceipt // by run id
	boardIdem    map[string]*BoardIdempotencyRecord
}

var _ Port = (*Memory)(nil)

// NewMemory builds a stopped Memory from seed and
// validates it. It returns an *Error with code fixture_state_invalid or
// company_scope_violation when the seed is inconsistent.
func NewMemory(seed Seed) (*Memory, error) {
	st, err := stateFromSeed(seed)
	if err != nil {
		return nil, err
	}
	return newMemory(st)
}

// Restore rebuilds a Memory from Serialize output. It returns
// fixture_state_invalid for invalid JSON or a wrong schema tag, and the validation
// errors of NewMemory.
func Restore(data []byte) (*Memory, error) {
	var probe struct {
		Schema string `json:"schema"`
	}
	if err := json.Unmarshal(data, &probe); err != nil {
		return nil, newErr(CodeFixtureStateInvalid, "fixture state is not valid JSON: %v", err)
	}
	if probe.Schema != StateSchema {
		return nil, newErr(CodeFixtureStateInvalid, "fixture state schema must be %s", StateSchema)
	}
	var st State
	if err := json.Unmarshal(data, &st); err != nil {
		return nil, newErr(CodeFixtureStateInvalid, "fixture state is not valid JSON: %v", err)
	}
	return newMemory(&st)
}

func newMemory(st *State) (*Memory, error) {
	normalize(st)
	if err := canonicalizeRaw(st); err != nil {
		return nil, err
	}
	contents, err := takeContents(st)
	if err != nil {
		return nil, err
	}
	m := &Memory{st: st, coll: collate.New(language.Und), contents: contents}
	if err := m.validate(); err != nil {
		return nil, err
	}
	m.rebuild()
	return m, nil
}

func ptr[T any](v T) *T { return &v }

func stateFromSeed(seed Seed) (*State, error) {
	company := Company{ID: "company-1", Name: "Mock Paperclip Company", IssuePrefix: "MCK", Status: "active", BudgetID: "budget-company-1"}
	if c := seed.Company; c != nil {
		if c.ID != "" {
			company.ID = c.ID
		}
		if c.Name != "" {
			company.Name = c.Name
		}
		if c.IssuePrefix != "" {
			company.IssuePrefix = c.IssuePrefix
		}
		if c.Status != "" {
			company.Status = c.Status
		}
		if c.BudgetID != "" {
			company.BudgetID = c.BudgetID
		}
	}
	st := &State{
		Schema:            StateSchema,
		Clock:             Clock{EpochMs: DefaultEpochMs},
		Counters:          map[string]int64{},
		Lifecycle:         LifecycleStopped,
		Company:           company,
		OutOfScopeTaskIDs: slices.Clone(seed.OutOfScopeTaskIDs),
	}
	if seed.EpochMs != nil {
		st.Clock.EpochMs = *seed.EpochMs
	}
	if seed.Actors != nil || seed.Bare {
		st.Actors = cloneAll(seed.Actors)
	} else {
		st.Actors = []*Actor{{ID: "actor-1", CompanyID: company.ID, Name: "Mock Engineer", Role: "engineer", Status: ActorActive, BudgetID: "budget-actor-1", CapabilityGrants: []string{}}}
	}
	if seed.Tasks != nil || seed.Bare {
		st.Tasks = cloneAll(seed.Tasks)
	} else {
		var assignee *string
		if len(st.Actors) > 0 {
			assignee = ptr(st.Actors[0].ID)
		}
		st.Tasks = []*Task{{ID: "task-1", CompanyID: company.ID, Identifier: company.IssuePrefix + "-1", Title: "Deterministic fixture task", Status: TaskTodo, Priority: "medium", WorkMode: "standard", AssigneeActorID: assignee}}
	}
	if seed.Budgets != nil {
		st.Budgets = cloneAll(seed.Budgets)
	} else {
		st.Budgets = []*Budget{{ID: company.BudgetID, Scope: "company", ScopeID: company.ID, LimitCents: 10000, HardStop: true}}
		for _, a := range st.Actors {
			st.Budgets = append(st.Budgets, &Budget{ID: a.BudgetID, Scope: "actor", ScopeID: a.ID, LimitCents: 1000, HardStop: true})
		}
	}
	st.Comments = cloneAll(seed.Comments)
	var err error
	if st.Documents, err = cloneDeep(seed.Documents); err != nil {
		return nil, err
	}
	if st.Interactions, err = cloneDeep(seed.Interactions); err != nil {
		return nil, err
	}
	if st.Approvals, err = cloneDeep(seed.Approvals); err != nil {
		return nil, err
	}
	st.Artifacts = cloneAll(seed.Artifacts)
	st.WorkProducts = cloneAll(seed.WorkProducts)
	st.Blockers = cloneAll(seed.Blockers)
	st.WorkspaceServices = cloneAll(seed.WorkspaceServices)
	st.Faults = cloneAll(seed.Faults)
	return st, nil
}

func cloneAll[T any](in []*T) []*T {
	if in == nil {
		return nil
	}
	out := make([]*T, len(in))
	for i, p := range in {
		c := *p
		out[i] = &c
	}
	return out
}

// cloneDeep copies values with nested slices through JSON; embedded JSON that is not
// valid makes the seed invalid.
func cloneDeep[T any](in []*T) ([]*T, error) {
	if in == nil {
		return nil, nil
	}
	b, err := json.Marshal(in)
	if err != nil {
		return nil, newErr(CodeFixtureStateInvalid, "fixture seed does not encode: %v", err)
	}
	var out []*T
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, newErr(CodeFixtureStateInvalid, "fixture seed does not decode: %v", err)
	}
	return out, nil
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func rawOr(r json.RawMessage, def string) json.RawMessage {
	if len(r) == 0 {
		return json.RawMessage(def)
	}
	return r
}

func isNull(r json.RawMessage) bool { return len(r) == 0 || string(r) == "null" }

// normalize makes every collection non-nil so that a fresh state and a restored one
// encode identically.
func normalize(st *State) {
	if st.Schema == "" {
		st.Schema = StateSchema
	}
	if st.Counters == nil {
		st.Counters = map[string]int64{}
	}
	if st.Lifecycle == "" {
		st.Lifecycle = LifecycleStopped
	}
	if st.SemanticToolRuntimes == nil {
		st.SemanticToolRuntimes = map[string]json.RawMessage{}
	}
	st.Actors = nonNil(st.Actors)
	for _, a := range st.Actors {
		a.CapabilityGrants = nonNil(a.CapabilityGrants)
	}
	st.Tasks = nonNil(st.Tasks)
	st.OutOfScopeTaskIDs = nonNil(st.OutOfScopeTaskIDs)
	st.Comments = nonNil(st.Comments)
	st.Documents = nonNil(st.Documents)
	for _, d := range st.Documents {
		d.Revisions = nonNil(d.Revisions)
		if d.Format == "" {
			d.Format = "markdown"
		}
	}
	st.Skills = nonNil(st.Skills)
	st.Interactions = nonNil(st.Interactions)
	for _, in := range st.Interactions {
		in.Payload = rawOr(in.Payload, "{}")
		in.Result = rawOr(in.Result, "null")
	}
	st.Approvals = nonNil(st.Approvals)
	for _, a := range st.Approvals {
		a.TaskIDs = nonNil(a.TaskIDs)
		a.Comments = nonNil(a.Comments)
		a.Payload = rawOr(a.Payload, "{}")
	}
	st.Artifacts = nonNil(st.Artifacts)
	st.WorkProducts = nonNil(st.WorkProducts)
	st.Blockers = nonNil(st.Blockers)
	st.WorkspaceServices = nonNil(st.WorkspaceServices)
	st.Budgets = nonNil(st.Budgets)
	st.Runs = nonNil(st.Runs)
	for _, r := range st.Runs {
		r.Capabilities = nonNil(r.Capabilities)
		r.Events = nonNil(r.Events)
		r.Result = rawOr(r.Result, "null")
		r.SessionCheckpoint = rawOr(r.SessionCheckpoint, "null")
		r.Wake.Payload = rawOr(r.Wake.Payload, "{}")
	}
	st.Wakes = nonNil(st.Wakes)
	for _, w := range st.Wakes {
		w.Payload = rawOr(w.Payload, "{}")
	}
	st.Audit = nonNil(st.Audit)
	for _, a := range st.Audit {
		a.Details = rawOr(a.Details, "{}")
	}
	st.Decisions = nonNil(st.Decisions)
	for _, d := range st.Decisions {
		d.EntityRefs = nonNil(d.EntityRefs)
	}
	st.Idempotency = nonNil(st.Idempotency)
	for _, r := range st.Idempotency {
		r.Result.EntityRefs = nonNil(r.Result.EntityRefs)
		r.Result.ScheduledWakeIDs = nonNil(r.Result.ScheduledWakeIDs)
	}
	st.Faults = nonNil(st.Faults)
}

// canonicalizeRaw rewrites every embedded JSON value of st in canonical form, so that
// a fresh state and its restored copy return byte-identical values.
func canonicalizeRaw(st *State) error {
	var bad error
	canon := func(r *json.RawMessage, what string) {
		if bad != nil {
			return
		}
		c, err := canonicalRaw(*r)
		if err != nil {
			bad = newErr(CodeFixtureStateInvalid, "%s is not valid JSON: %v", what, err)
			return
		}
		*r = c
	}
	for _, in := range st.Interactions {
		canon(&in.Payload, "interaction "+in.ID+" payload")
		canon(&in.Result, "interaction "+in.ID+" result")
	}
	for _, a := range st.Approvals {
		canon(&a.Payload, "approval "+a.ID+" payload")
	}
	for _, r := range st.Runs {
		canon(&r.Wake.Payload, "run "+r.ID+" wake payload")
		canon(&r.Result, "run "+r.ID+" result")
		canon(&r.SessionCheckpoint, "run "+r.ID+" session checkpoint")
		for i := range r.Events {
			canon(&r.Events[i], "run "+r.ID+" event")
		}
	}
	for _, w := range st.Wakes {
		canon(&w.Payload, "wake "+w.ID+" payload")
	}
	for _, a := range st.Audit {
		canon(&a.Details, "audit "+a.ID+" details")
	}
	for k, v := range st.SemanticToolRuntimes {
		canon(&v, "semantic tool runtime "+k)
		st.SemanticToolRuntimes[k] = v
	}
	return bad
}

// takeContents moves the blobs' serialized bytes out of the state (after checking that
// they hash to their blob) into the Memory's contents.
func takeContents(st *State) (map[string][]byte, error) {
	out := map[string][]byte{}
	for _, b := range st.Blobs {
		if !ValidSHA256(b.SHA256) || b.ByteSize < 0 {
			return nil, newErr(CodeFixtureStateInvalid, "blob %q has an invalid SHA-256 or size", clipID(b.SHA256))
		}
		if b.Content == nil {
			continue
		}
		if int64(len(b.Content)) != b.ByteSize || SHA256Hex(b.Content) != b.SHA256 {
			return nil, newErr(CodeFixtureStateInvalid, "the content of blob %s does not hash to it", b.SHA256)
		}
		out[b.SHA256] = b.Content
		b.Content = nil
	}
	return out, nil
}

// validate checks the state in the order of docs/control-plane.md, "Validation".
func (m *Memory) validate() error {
	st := m.st
	if strings.TrimSpace(st.Company.ID) == "" {
		return newErr(CodeFixtureStateInvalid, "fixture company id is required")
	}
	if d := firstDuplicate(st.Actors, func(a *Actor) string { return a.ID }); d != "" {
		return newErr(CodeFixtureStateInvalid, "duplicate fixture actor id %s", d)
	}
	if d := firstDuplicate(st.Tasks, func(t *Task) string { return t.ID }); d != "" {
		return newErr(CodeFixtureStateInvalid, "duplicate fixture task id %s", d)
	}
	if d := firstDuplicate(st.Runs, func(r *Run) string { return r.ID }); d != "" {
		return newErr(CodeFixtureStateInvalid, "duplicate fixture run id %s", d)
	}
	actors := map[string]*Actor{}
	for _, a := range st.Actors {
		if a.CompanyID != st.Company.ID {
			return newErr(CodeCompanyScopeViolation, "fixture actor %s is outside company %s", a.ID, st.Company.ID)
		}
		actors[a.ID] = a
	}
	tasks := map[string]*Task{}
	for _, t := range st.Tasks {
		if t.CompanyID != st.Company.ID {
			return newErr(CodeCompanyScopeViolation, "fixture task %s is outside company %s", t.ID, st.Company.ID)
		}
		tasks[t.ID] = t
	}
	for _, t := range st.Tasks {
		if t.AssigneeActorID != nil {
			if a := actors[*t.AssigneeActorID]; a == nil || a.CompanyID != t.CompanyID {
				return newErr(CodeFixtureStateInvalid, "fixture task %s has an invalid assignee actor", t.ID)
			}
		}
	}
	if err := validateApprovals(st, actors, tasks); err != nil {
		return err
	}
	for _, b := range st.Blockers {
		if tasks[b.TaskID] == nil || tasks[b.BlockedByTaskID] == nil || b.TaskID == b.BlockedByTaskID {
			return newErr(CodeFixtureStateInvalid, "fixture blocker %s has an invalid task reference", b.ID)
		}
	}
	runs := map[string]bool{}
	for _, r := range st.Runs {
		runs[r.ID] = true
	}
	for id := range st.SemanticToolRuntimes {
		if !runs[id] {
			return newErr(CodeFixtureStateInvalid, "semantic tool runtime for %s is invalid", id)
		}
	}
	return validateFaults(st.Faults)
}

// validateApprovals checks the fixture's approvals against its actors and tasks (by
// id): each in the company, linked to at least one task, every linked task and the
// requester (when named) present. Errors: company_scope_violation,
// fixture_state_invalid.
func validateApprovals(st *State, actors map[string]*Actor, tasks map[string]*Task) error {
	for _, ap := range st.Approvals {
		if ap.CompanyID != st.Company.ID {
			return newErr(CodeCompanyScopeViolation, "fixture approval %s is outside company %s", ap.ID, st.Company.ID)
		}
		if len(ap.TaskIDs) == 0 {
			return newErr(CodeFixtureStateInvalid, "fixture approval %s has an invalid linked task", ap.ID)
		}
		for _, id := range ap.TaskIDs {
			if tasks[id] == nil {
				return newErr(CodeFixtureStateInvalid, "fixture approval %s has an invalid linked task", ap.ID)
			}
		}
		if ap.RequestedByActorID != nil && actors[*ap.RequestedByActorID] == nil {
			return newErr(CodeFixtureStateInvalid, "fixture approval %s has an invalid requester actor", ap.ID)
		}
	}
	return nil
}

// validateFaults checks that each scripted fault names an operation that can fault
// (open_run, append_event, apply_command, complete_run) and a known effect
// (retryable_error, lost_ack). Errors: fixture_state_invalid.
func validateFaults(faults []*FaultRule) error {
	for _, f := range faults {
		switch f.Operation {
		case "open_run", "append_event", "apply_command", "complete_run":
		default:
			return newErr(CodeFixtureStateInvalid, "fault %s has unknown operation %q", f.ID, f.Operation)
		}
		if f.Effect != "retryable_error" && f.Effect != "lost_ack" {
			return newErr(CodeFixtureStateInvalid, "fault %s has unknown effect %q", f.ID, f.Effect)
		}
	}
	return nil
}

func firstDuplicate[T any](items []*T, id func(*T) string) string {
	seen := make(map[string]bool, len(items))
	for _, it := range items {
		k := id(it)
		if seen[k] {
			return k
		}
		seen[k] = true
	}
	return ""
}

// rebuild recomputes every index from the state.
func (m *Memory) rebuild() {
	st := m.st
	ix := indexes{
		actors:       indexBy(st.Actors, func(a *Actor) string { return a.ID }),
		tasks:        indexBy(st.Tasks, func(t *Task) string { return t.ID }),
		outOfScope:   setOf(st.OutOfScopeTaskIDs, func(id string) string { return id }),
		docs:         indexBy(st.Documents, func(d *Document) [2]string { return [2]string{d.TaskID, d.Key} }),
		revisionDoc:  map[string]*Document{},
		interactions: indexBy(st.Interactions, func(in *Interaction) string { return in.ID }),
		approvals:    indexBy(st.Approvals, func(a *Approval) string { return a.ID }),
		services:     indexBy(st.WorkspaceServices, func(s *WorkspaceService) string { return s.ID }),
		runs:         indexBy(st.Runs, func(r *Run) string { return r.ID }),
		runIdx:       map[string]*runIndex{},
		idem:         indexBy(st.Idempotency, func(r *IdempotencyRecord) [2]string { return [2]string{r.Scope, r.Key} }),
		skillSlugs:   setOf(st.Skills, func(s *Skill) string { return s.Slug }),
		blobs:        indexBy(st.Blobs, func(b *Blob) string { return b.SHA256 }),
		files:        indexBy(st.Files, func(f *ManagedFile) fileKey { return fileKey{f.Scope, f.OwnerID, f.Path} }),
		fileIDs:      indexBy(st.Files, func(f *ManagedFile) string { return f.ID }),
		conflicts:    indexBy(st.FileConflicts, func(c *FileConflict) string { return c.ID }),
		receipts:     indexBy(st.HomeReceipts, func(r *HomeReceipt) string { return r.RunID }),
		boardIdem:    indexBy(st.BoardIdempotency, func(r *BoardIdempotencyRecord) string { return r.Key }),
	}
	for _, d := range st.Documents {
		for _, r := range d.Revisions {
			ix.revisionDoc[r.ID] = d
		}
	}
	for _, r := range st.Runs {
		ri := newRunIndex()
		for i, raw := range r.Events {
			ri.add(raw, i)
		}
		ix.runIdx[r.ID] = ri
	}
	m.idx = ix
}

// indexBy maps every element of list by its key; a later element wins a shared key.
func indexBy[K comparable, V any](list []V, key func(V) K) map[K]V {
	ix := make(map[K]V, len(list))
	for _, v := range list {
		ix[key(v)] = v
	}
	return ix
}

// setOf is the set of the keys of list's elements.
func setOf[K comparable, V any](list []V, key func(V) K) map[K]bool {
	set := make(map[K]bool, len(list))
	for _, v := range list {
		set[key(v)] = true
	}
	return set
}

func newRunIndex() *runIndex {
	return &runIndex{byEventID: map[string]int{}, bySeq: map[string]map[int64]int{}, native: map[int64]int{}}
}

// eventHead is the part of an event the indexes need.
type eventHead struct {
	SourceEventID    *string `json:"sourceEventId"`
	SourceSeq        int64   `json:"sourceSeq"`
	SourceInstanceID string  `json:"sourceInstanceId"`
	EventType        string  `json:"eventType"`
	Sequence         int64   `json:"sequence"`
	Type             string  `json:"type"`
	EventID          string  `json:"eventId"`
	RunID            string  `json:"runId"`
}

func (ri *runIndex) add(raw json.RawMessage, i int) (undo func()) {
	var h eventHead
	_ = json.Unmarshal(raw, &h)
	if h.SourceEventID != nil {
		ri.byEventID[*h.SourceEventID] = i
		seqs := ri.bySeq[h.SourceInstanceID]
		if seqs == nil {
			seqs = map[int64]int{}
			ri.bySeq[h.SourceInstanceID] = seqs
		}
		seqs[h.SourceSeq] = i
		return func() {
			delete(ri.byEventID, *h.SourceEventID)
			delete(seqs, h.SourceSeq)
		}
	}
	ri.native[h.Sequence] = i
	ri.nativeCount++
	return func() {
		delete(ri.native, h.Sequence)
		ri.nativeCount--
	}
}

func (ri *runIndex) highestContiguous(instance string) int64 {
	seqs := ri.bySeq[instance]
	var n int64
	for {
		if _, ok := seqs[n+1]; !ok {
			return n
		}
		n++
	}
}

// ---- undo log ----

func (m *Memory) onUndo(f func()) { m.undo = append(m.undo, f) }

// rollback undoes every change recorded after mark, newest first.
func (m *Memory) rollback(mark int) {
	for i := len(m.undo) - 1; i >= mark; i-- {
		m.undo[i]()
		m.undo[i] = nil
	}
	m.undo = m.undo[:mark]
}

// commit forgets the undo log (end of every public operation).
func (m *Memory) commit() {
	clear(m.undo)
	m.undo = m.undo[:0]
}

func setv[T any](m *Memory, p *T, v T) {
	old := *p
	m.onUndo(func() { *p = old })
	*p = v
}

func edit[T any](m *Memory, p *T, f func(*T)) {
	old := *p
	m.onUndo(func() { *p = old })
	f(p)
}

func appendv[T any](m *Memory, s *[]T, v T) {
	n := len(*s)
	*s = append(*s, v)
	m.onUndo(func() {
		var zero T
		(*s)[n] = zero
		*s = (*s)[:n]
	})
}

func mapSet[K comparable, V any](m *Memory, mp map[K]V, k K, v V) {
	old, had := mp[k]
	m.onUndo(func() {
		if had {
			mp[k] = old
		} else {
			delete(mp, k)
		}
	})
	mp[k] = v
}

// ---- clock, ids, revision, records ----

// formatMs renders ms since the Unix epoch as ISO-8601 UTC with milliseconds.
func formatMs(ms int64) string {
	return time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.000Z")
}

func (m *Memory) now() string {
	c := &m.st.Clock
	ts := formatMs(c.EpochMs + c.Tick*1000)
	setv(m, &c.Tick, c.Tick+1)
	return ts
}

func (m *Memory) nextCounter(kind string) int64 {
	n := m.st.Counters[kind] + 1
	mapSet(m, m.st.Counters, kind, n)
	return n
}

func (m *Memory) newID(kind string) string {
	n := m.nextCounter(kind)
	var digits [20]byte
	d := strconv.AppendInt(digits[:0], n, 10)
	var b strings.Builder
	b.Grow(len("fixture--") + len(kind) + max(4, len(d)))
	b.WriteString("fixture-")
	b.WriteString(kind)
	b.WriteByte('-')
	for i := len(d); i < 4; i++ {
		b.WriteByte('0')
	}
	b.Write(d)
	return b.String()
}

func (m *Memory) bumpRevision() int64 {
	setv(m, &m.st.Revision, m.st.Revision+1)
	return m.st.Revision
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("controlplane: encoding record: %v", err))
	}
	return b
}

// recordMutation writes one audit record and one decision: revision+1, tick, audit id,
// decision id.
func (m *Memory) recordMutation(runID, actorID *string, action, entityType, entityID string, details any, operation, outcome, reason string, refs []string) {
	m.recordMutationSorted(runID, actorID, action, entityType, entityID, details, operation, outcome, reason, m.sortedUnique(refs))
}

// recordMutationSorted is recordMutation with refs already sorted and unique.
func (m *Memory) recordMutationSorted(runID, actorID *string, action, entityType, entityID string, details any, operation, outcome, reason string, refs []string) {
	rev := m.bumpRevision()
	at := m.now()
	auditID := m.newID("audit")
	decisionID := m.newID("decision")
	appendv(m, &m.st.Audit, &AuditRecord{ID: auditID, At: at, RunID: runID, ActorID: actorID, Action: action, EntityType: entityType, EntityID: entityID, Details: mustJSON(details)})
	appendv(m, &m.st.Decisions, &Decision{ID: decisionID, At: at, RunID: runID, Operation: operation, Outcome: outcome, Reason: reason, StateRevision: rev, EntityRefs: refs})
}

// recordDecision writes one decision only: revision+1, decision id, tick.
func (m *Memory) recordDecision(runID *string, operation, outcome, reason string, refs []string) {
	rev := m.bumpRevision()
	id := m.newID("decision")
	at := m.now()
	appendv(m, &m.st.Decisions, &Decision{ID: id, At: at, RunID: runID, Operation: operation, Outcome: outcome, Reason: reason, StateRevision: rev, EntityRefs: m.sortedUnique(refs)})
}

// deny records a denied decision and returns the error to raise.
func (m *Memory) deny(runID *string, operation, reason string, refs []string, err *Error) *Error {
	m.recordDecision(runID, operation, DecisionDenied, reason, refs)
	return err
}

// consumeFault finds the first matching rule with remaining > 0 and decrements it.
func (m *Memory) consumeFault(operation, commandKind string) *FaultRule {
	f := m.peekFault(operation, commandKind)
	if f != nil {
		edit(m, f, func(f *FaultRule) { f.Remaining-- })
	}
	return f
}

// peekFault finds the rule consumeFault would consume.
func (m *Memory) peekFault(operation, commandKind string) *FaultRule {
	for _, f := range m.st.Faults {
		if f.Operation != operation || f.Remaining <= 0 {
			continue
		}
		if f.CommandKind != "" && f.CommandKind != commandKind {
			continue
		}
		if commandKind == "" && f.CommandKind != "" {
			continue
		}
		return f
	}
	return nil
}

// faultBefore raises a retryable_error fault (decision persists).
func (m *Memory) faultBefore(f *FaultRule, runID *string, label string) error {
	if f == nil || f.Effect != "retryable_error" {
		return nil
	}
	m.recordDecision(runID, label, "faulted", string(f.Code), []string{"fault:" + f.ID})
	return &Error{Code: f.Code, Message: "scripted fault " + f.ID, Retryable: true}
}

// faultAfter raises a lost_ack fault after the operation committed.
func (m *Memory) faultAfter(f *FaultRule, runID *string, label string) error {
	if f == nil || f.Effect != "lost_ack" {
		return nil
	}
	m.recordDecision(runID, label, "faulted", string(f.Code), []string{"fault:" + f.ID})
	return &Error{Code: f.Code, Message: "scripted lost acknowledgement " + f.ID, Retryable: true}
}

// ---- lookups ----

func (m *Memory) actor(id string) (*Actor, error) {
	a := m.idx.actors[id]
	if a == nil {
		return nil, newErr(CodeActorMissing, "fixture actor %s does not exist", id)
	}
	return a, nil
}

func (m *Memory) task(id string) (*Task, error) {
	t := m.idx.tasks[id]
	if t == nil {
		if m.idx.outOfScope[id] {
			return nil, newErr(CodeCompanyScopeViolation, "fixture task %s belongs to another company", id)
		}
		return nil, newErr(CodeTaskMissing, "fixture task %s does not exist", id)
	}
	return t, nil
}

func (m *Memory) run(id string) (*Run, error) {
	r := m.idx.runs[id]
	if r == nil {
		return nil, newErr(CodeRunMissing, "fixture run %s does not exist", id)
	}
	return r, nil
}

func (m *Memory) assertCompany(kind, id, companyID string) error {
	if companyID != m.st.Company.ID {
		return newErr(CodeCompanyScopeViolation, "fixture %s %s is outside company %s", kind, id, m.st.Company.ID)
	}
	return nil
}

func (m *Memory) assertRunning() error {
	if m.st.Lifecycle != LifecycleRunning {
		return newErr(CodeMockNotRunning, "the capability mock is not running")
	}
	return nil
}

func assertRunWritable(r *Run) error {
	switch r.Status {
	case RunRunning:
		return nil
	case RunBudgetStopped:
		return newErr(CodeBudgetHardStop, "fixture run %s was stopped by a budget hard stop", r.ID)
	default:
		return newErr(CodeRunNotWritable, "fixture run is %s", r.Status)
	}
}

// applicableBudgets: company budgets of the actor's company ∪ the actor's own budgets.
func (m *Memory) applicableBudgets(a *Actor) []*Budget {
	var out []*Budget
	for _, b := range m.st.Budgets {
		if (b.Scope == "company" && b.ScopeID == a.CompanyID) || (b.Scope == "actor" && b.ScopeID == a.ID) {
			out = append(out, b)
		}
	}
	return out
}

func (m *Memory) effectiveBudgets(a *Actor) ([]*Budget, error) {
	bs := m.applicableBudgets(a)
	if len(bs) == 0 {
		return nil, newErr(CodeFixtureStateInvalid, "actor %s has no fixture budget", a.ID)
	}
	return bs, nil
}

func exceeded(b *Budget) bool { return b.HardStop && b.SpentCents >= b.LimitCents }

// ---- redaction ----

// sensitiveKeyRE matches wake-payload keys whose values are redacted.
var sensitiveKeyRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?i)authorization|credential|api.?key|secret|token`) })

func sensitiveKey(k string) bool { return sensitiveKeyRE().MatchString(k) }

// RedactedValue replaces values under sensitive keys in wake payloads.
const RedactedValue = "[REDACTED]"

func sanitize(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, val := range x {
			if sensitiveKey(k) {
				out[k] = RedactedValue
			} else {
				out[k] = sanitize(val)
			}
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, val := range x {
			out[i] = sanitize(val)
		}
		return out
	default:
		return v
	}
}

// sanitizeRaw redacts a JSON payload by key and returns canonical JSON.
func sanitizeRaw(raw json.RawMessage) json.RawMessage {
	if isNull(raw) {
		return json.RawMessage("{}")
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return json.RawMessage("{}")
	}
	b, err := canonjson.Sorted(sanitize(v))
	if err != nil {
		return json.RawMessage("{}")
	}
	return b
}

// canonical returns the sorted-key canonical JSON of raw, or an error for invalid JSON.
func canonicalRaw(raw json.RawMessage) ([]byte, error) {
	if !json.Valid(raw) {
		return nil, errors.New("invalid JSON text")
	}
	return canonjson.SortedJSON(raw)
}

// ---- lifecycle and introspection ----

func (m *Memory) lock(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	return nil
}

func (m *Memory) unlock() {
	m.commit()
	m.mu.Unlock()
}

// Start sets the lifecycle to running; mock_already_running when running.
func (m *Memory) Start(ctx context.Context) error {
	if err := m.lock(ctx); err != nil {
		return err
	}
	defer m.unlock()
	if m.st.Lifecycle == LifecycleRunning {
		return newErr(CodeMockAlreadyRunning, "the capability mock is already running")
	}
	m.st.Lifecycle = LifecycleRunning
	return nil
}

// Stop sets the lifecycle to stopped and clears the active run; it never fails on a
// live context.
func (m *Memory) Stop(ctx context.Context) error {
	if err := m.lock(ctx); err != nil {
		return err
	}
	defer m.unlock()
	m.st.Lifecycle = LifecycleStopped
	m.st.ActiveRunID = nil
	return nil
}

// Snapshot returns a deep copy of the state.
func (m *Memory) Snapshot(ctx context.Context) (State, error) {
	if err := m.lock(ctx); err != nil {
		return State{}, err
	}
	defer m.unlock()
	b, err := json.Marshal(m.st)
	if err != nil {
		return State{}, fmt.Errorf("controlplane: snapshot: %w", err)
	}
	var out State
	if err := json.Unmarshal(b, &out); err != nil {
		return State{}, fmt.Errorf("controlplane: snapshot: %w", err)
	}
	return out, nil
}

// DecisionRecords returns a copy of the decision records.
func (m *Memory) DecisionRecords(ctx context.Context) ([]Decision, error) {
	if err := m.lock(ctx); err != nil {
		return nil, err
	}
	defer m.unlock()
	out := make([]Decision, len(m.st.Decisions))
	for i, d := range m.st.Decisions {
		out[i] = *d
		out[i].RunID = clonePtr(d.RunID)
		out[i].EntityRefs = slices.Clone(d.EntityRefs)
	}
	return out, nil
}

func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

// cloneTask copies t so that no pointer is shared with the state.
func cloneTask(t *Task) Task {
	c := *t
	c.Description = clonePtr(t.Description)
	c.ParentID = clonePtr(t.ParentID)
	c.AssigneeActorID = clonePtr(t.AssigneeActorID)
	c.CheckoutRunID = clonePtr(t.CheckoutRunID)
	c.ExecutionRunID = clonePtr(t.ExecutionRunID)
	c.StartedAt = clonePtr(t.StartedAt)
	c.CompletedAt = clonePtr(t.CompletedAt)
	c.ConversationID = clonePtr(t.ConversationID)
	return c
}

// Serialize returns the state as sorted-key canonical JSON under StateSchema; the
// blobs whose bytes the Memory holds carry them as content (base64).
func (m *Memory) Serialize(ctx context.Context) ([]byte, error) {
	if err := m.lock(ctx); err != nil {
		return nil, err
	}
	defer m.unlock()
	for _, bl := range m.st.Blobs {
		bl.Content = m.contents[bl.SHA256]
	}
	b, err := canonjson.Sorted(m.st)
	for _, bl := range m.st.Blobs {
		bl.Content = nil
	}
	if err != nil {
		return nil, fmt.Errorf("controlplane: serialize: %w", err)
	}
	return b, nil
}

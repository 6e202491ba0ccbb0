package controlplane

import (
	"encoding/base64"
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// handle dispatches one command kind to its handler in the command table. It
// runs inside the undo log: any error is rolled back by the caller.
func (m *Memory) handle(c *cmdCtx) error {
	if spec, ok := commandByKind[CommandKind(c.kind)]; ok {
		return spec.handle(m, c)
	}
	return newErr(CodeSemanticCommandInvalid, "unknown command kind %q", c.kind)
}

func (m *Memory) reportProgress(c *cmdCtx) error {
	var in struct {
		Body string `json:"body"`
	}
	if err := decode(c.raw, &in); err != nil {
		return err
	}
	if err := required(in.Body, "progress body"); err != nil {
		return err
	}
	m.actorComment(c, in.Body)
	return nil
}

var skillNameRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`) })

// parseSkillMarkdown checks the frontmatter rules of create_skill and
// returns the frontmatter name and description.
func parseSkillMarkdown(md string) (name, description string, err error) {
	bad := func(msg string) (string, string, error) {
		return "", "", newErr(CodeInvalidSkillDocument, "%s", msg)
	}
	if !strings.HasPrefix(md, "---\n") {
		return bad("skill markdown must start with a frontmatter block (---)")
	}
	rest := md[4:]
	end := strings.Index(rest, "\n---\n")
	if end < 0 {
		return bad("skill frontmatter has no closing ---")
	}
	front, body := rest[:end], rest[end+5:]
	var fm map[string]any
	if err := yaml.Unmarshal([]byte(front), &fm); err != nil || fm == nil {
		return bad("skill frontmatter is not a YAML mapping")
	}
	n, _ := fm["name"].(string)
	if !skillNameRE().MatchString(n) {
		return bad("skill frontmatter name must be lower-case words joined by hyphens")
	}
	d, _ := fm["description"].(string)
	if strings.TrimSpace(d) == "" {
		return bad("skill frontmatter description must be a non-empty string")
	}
	if tools, ok := fm["allowed-tools"]; ok {
		list, isList := tools.([]any)
		if !isList {
			return bad("skill frontmatter allowed-tools must be a list of strings")
		}
		for _, t := range list {
			if _, isStr := t.(string); !isStr {
				return bad("skill frontmatter allowed-tools must be a list of strings")
			}
		}
	}
	if meta, ok := fm["metadata"]; ok {
		if _, isMap := meta.(map[string]any); !isMap {
			return bad("skill frontmatter metadata must be an object")
		}
	}
	if strings.TrimSpace(body) == "" {
		return bad("skill body after the frontmatter must not be blank")
	}
	return n, d, nil
}

func (m *Memory) createSkill(c *cmdCtx) error {
	var in struct {
		Name        string  `json:"name"`
		Slug        *string `json:"slug"`
		Description string  `json:"description"`
		Markdown    string  `json:"markdown"`
	}
	if err := decode(c.raw, &in); err != nil {
		return err
	}
	if err := required(in.Name, "skill name"); err != nil {
		return err
	}
	if err := required(in.Markdown, "skill markdown"); err != nil {
		return err
	}
	name, desc, err := parseSkillMarkdown(in.Markdown)
	if err != nil {
		return err
	}
	if name != in.Name {
		return newErr(CodeInvalidSkillDocument, "skill frontmatter name %s must equal the skill name %s", name, in.Name)
	}
	if desc != strings.TrimSpace(in.Description) {
		return newErr(CodeInvalidSkillDocument, "skill frontmatter description must equal the skill description")
	}
	if in.Slug != nil && *in.Slug != in.Name {
		return newErr(CodeInvalidSkillDocument, "skill slug %s must equal the skill name %s", *in.Slug, in.Name)
	}
	if m.idx.skillSlugs[in.Name] {
		return newErr(CodeFixtureStateInvalid, "A skill with that name already exists")
	}
	sk := &Skill{ID: m.newID("skill"), CompanyID: m.st.Company.ID, Name: in.Name, Slug: in.Name,
		Description: strings.TrimSpace(in.Description), Markdown: in.Markdown}
	sk.VersionID = m.newID("skill-version")
	appendv(m, &m.st.Skills, sk)
	mapSet(m, m.idx.skillSlugs, sk.Slug, true)
	c.ref("skill", sk.ID)
	return nil
}

func (m *Memory) writeDocument(c *cmdCtx) error {
	var in struct {
		Key            string  `json:"key"`
		Title          string  `json:"title"`
		Body           string  `json:"body"`
		BaseRevisionID *string `json:"baseRevisionId"`
		ChangeSummary  *string `json:"changeSummary"`
	}
	if err := decode(c.raw, &in); err != nil {
		return err
	}
	if err := required(in.Key, "document key"); err != nil {
		return err
	}
	if err := required(in.Title, "document title"); err != nil {
		return err
	}
	k := [2]string{c.task.ID, in.Key}
	doc := m.idx.docs[k]
	if doc == nil {
		if in.BaseRevisionID != nil {
			return newErr(CodeDocumentRevisionConflict, "a new document must use a null base revision")
		}
		doc = &Document{ID: m.newID("document"), TaskID: c.task.ID, Key: in.Key, Title: in.Title, Format: "markdown", Revisions: []*DocumentRevision{}}
		appendv(m, &m.st.Documents, doc)
		mapSet(m, m.idx.docs, k, doc)
	} else if in.BaseRevisionID == nil || *in.BaseRevisionID != doc.LatestRevisionID {
		return newErr(CodeDocumentRevisionConflict, "document latest revision is %s", doc.LatestRevisionID)
	}
	rev := &DocumentRevision{ID: m.newID("revision"), DocumentID: doc.ID, Revision: len(doc.Revisions) + 1, Body: in.Body, ChangeSummary: in.ChangeSummary}
	rev.CreatedAt = m.now()
	edit(m, doc, func(d *Document) {
		d.Title = in.Title
		d.LatestRevisionID = rev.ID
	})
	appendv(m, &doc.Revisions, rev)
	mapSet(m, m.idx.revisionDoc, rev.ID, doc)
	c.ref("document", doc.ID)
	c.ref("revision", rev.ID)
	return nil
}

func (m *Memory) requestHumanInput(c *cmdCtx) error {
	var in struct {
		InteractionKind    InteractionKind    `json:"interactionKind"`
		Title              string             `json:"title"`
		Prompt             string             `json:"prompt"`
		Payload            json.RawMessage    `json:"payload"`
		TargetRevisionID   *string            `json:"targetRevisionId"`
		ContinuationPolicy ContinuationPolicy `json:"continuationPolicy"`
	}
	if err := decode(c.raw, &in); err != nil {
		return err
	}
	if err := required(in.Title, "interaction title"); err != nil {
		return err
	}
	if err := required(in.Prompt, "interaction prompt"); err != nil {
		return err
	}
	if err := m.checkTarget(c.task, in.TargetRevisionID); err != nil {
		return err
	}
	if err := m.transition(c, c.task, TaskInReview); err != nil {
		return err
	}
	payload, err := canonicalOr(in.Payload, "{}")
	if err != nil {
		return err
	}
	policy := in.ContinuationPolicy
	if policy == "" {
		policy = ContinueNone
	}
	it := &Interaction{ID: m.newID("interaction"), TaskID: c.task.ID, Kind: in.InteractionKind, Status: InteractionPending, Title: in.Title,
		Prompt: in.Prompt, Payload: payload, TargetRevisionID: in.TargetRevisionID, ContinuationPolicy: policy, Result: json.RawMessage("null")}
	it.CreatedAt = m.now()
	appendv(m, &m.st.Interactions, it)
	mapSet(m, m.idx.interactions, it.ID, it)
	c.ref("interaction", it.ID)
	return nil
}

// checkTarget checks the target revision of a new interaction or approval: nil is
// none; otherwise it must be a revision of a document on task
// (interaction_target_missing) and that document's latest (interaction_target_stale).
func (m *Memory) checkTarget(task *Task, target *string) error {
	if target == nil {
		return nil
	}
	doc := m.idx.revisionDoc[*target]
	if doc == nil || doc.TaskID != task.ID {
		return newErr(CodeInteractionTargetMissing, "target revision %s is not a revision of a document on task %s", *target, task.ID)
	}
	if doc.LatestRevisionID != *target {
		return newErr(CodeInteractionTargetStale, "target revision %s is not the latest revision %s", *target, doc.LatestRevisionID)
	}
	return nil
}

// checkCurrent refuses acting on a target revision that a newer revision of its
// document superseded (target_revision_superseded); nil or an unknown target passes.
func (m *Memory) checkCurrent(what string, target *string) error {
	if target == nil {
		return nil
	}
	if doc := m.idx.revisionDoc[*target]; doc != nil && doc.LatestRevisionID != *target {
		return newErr(CodeTargetRevisionSuperseded, "%s targets revision %s, superseded by revision %s of document %s", what, *target, doc.LatestRevisionID, doc.Key)
	}
	return nil
}

func canonicalOr(raw json.RawMessage, def string) (json.RawMessage, error) {
	if isNull(raw) {
		return json.RawMessage(def), nil
	}
	b, err := canonicalRaw(raw)
	if err != nil {
		return nil, newErr(CodeSemanticCommandInvalid, "payload is not valid JSON: %v", err)
	}
	return b, nil
}

func (m *Memory) resolveHumanInput(c *cmdCtx) error {
	var in struct {
		InteractionID string            `json:"interactionId"`
		Outcome       InteractionStatus `json:"outcome"`
		Result        json.RawMessage   `json:"result"`
	}
	if err := decode(c.raw, &in); err != nil {
		return err
	}
	it := m.idx.interactions[in.InteractionID]
	if it == nil || it.TaskID != c.task.ID {
		return newErr(CodeInteractionMissing, "interaction %s does not exist on task %s", in.InteractionID, c.task.ID)
	}
	if it.Status != InteractionPending {
		return newErr(CodeInteractionAlreadyResolved, "interaction %s is already %s", it.ID, it.Status)
	}
	if !slices.Contains(it.Kind.Outcomes(), in.Outcome) {
		return newErr(CodeInteractionOutcomeInvalid, "%s is not valid for %s", in.Outcome, it.Kind)
	}
	if in.Outcome == InteractionAccepted {
		if err := m.checkCurrent("interaction "+it.ID, it.TargetRevisionID); err != nil {
			return err
		}
	}
	result, err := canonicalOr(in.Result, "{}")
	if err != nil {
		return err
	}
	resolvedAt := m.now()
	edit(m, it, func(i *Interaction) {
		i.Status = in.Outcome
		i.Result = result
		i.ResolvedAt = strp(resolvedAt)
	})
	c.ref("interaction", it.ID)
	wake := it.ContinuationPolicy == ContinueWakeAssignee || (it.ContinuationPolicy == ContinueWakeAssigneeOnAccept && in.Outcome == InteractionAccepted)
	if wake && c.task.AssigneeActorID != nil {
		w := m.scheduleWake(*c.task.AssigneeActorID, c.task.ID, WakeInteractionResolved,
			mustJSON(map[string]string{"interactionId": it.ID, "outcome": string(in.Outcome)}), 0)
		c.wakes = append(c.wakes, w.ID)
	}
	return nil
}

// registerDeliverable registers an artifact whose bytes are verified: with
// contentBase64 (standard base64, at most MaxInlineContentBytes decoded) the bytes are
// the command's and are stored as a blob; without it the blob sha256 must already be
// stored (uploaded). Either way the declared sha256 and byteSize must be the bytes'
// (artifact_digest_mismatch), and a sha256 without bytes is artifact_content_missing.
// contentRef defaults to "sha256:<sha256>".
func (m *Memory) registerDeliverable(c *cmdCtx) error {
	var in struct {
		Filename      string      `json:"filename"`
		ContentType   string      `json:"contentType"`
		ByteSize      json.Number `json:"byteSize"`
		SHA256        string      `json:"sha256"`
		ContentRef    *string     `json:"contentRef"`
		ContentBase64 *string     `json:"contentBase64"`
		Title         string      `json:"title"`
	}
	if err := decode(c.raw, &in); err != nil {
		return err
	}
	size, ok := safeNonNegative(in.ByteSize)
	if !ok {
		return newErr(CodeArtifactInvalid, "artifact byteSize must be a non-negative safe integer")
	}
	for _, f := range [][2]string{{in.Filename, "artifact filename"}, {in.ContentType, "artifact contentType"}, {in.SHA256, "artifact sha256"}, {in.Title, "work product title"}} {
		if err := required(f[0], f[1]); err != nil {
			return err
		}
	}
	if !ValidSHA256(in.SHA256) {
		return newErr(CodeArtifactInvalid, "artifact sha256 must be 64 lower-case hex digits")
	}
	ref := "sha256:" + in.SHA256
	if in.ContentRef != nil {
		if err := required(*in.ContentRef, "artifact contentRef"); err != nil {
			return err
		}
		ref = *in.ContentRef
	}
	if in.ContentBase64 != nil {
		if base64.StdEncoding.DecodedLen(len(*in.ContentBase64)) > MaxInlineContentBytes+3 {
			return newErr(CodeArtifactInvalid, "contentBase64 holds more than %d bytes; upload the bytes first and register them by sha256", MaxInlineContentBytes)
		}
		data, err := base64.StdEncoding.Strict().DecodeString(*in.ContentBase64)
		if err != nil {
			return newErr(CodeArtifactInvalid, "contentBase64 is not standard base64: %v", err)
		}
		if len(data) > MaxInlineContentBytes {
			return newErr(CodeArtifactInvalid, "contentBase64 holds %d bytes; at most %d are accepted inline", len(data), MaxInlineContentBytes)
		}
		if got := SHA256Hex(data); got != in.SHA256 || int64(len(data)) != size {
			return newErr(CodeArtifactDigestMismatch, "the declared sha256 %s and byteSize %d are not the content's: sha256 %s, %d bytes", in.SHA256, size, got, len(data))
		}
		if b := m.idx.blobs[in.SHA256]; b == nil {
			m.addBlob(in.SHA256, size, data)
		} else if _, held := m.contents[in.SHA256]; !held {
			mapSet(m, m.contents, in.SHA256, data)
		}
	} else {
		b := m.idx.blobs[in.SHA256]
		if b == nil {
			return newErr(CodeArtifactContentMissing, "no bytes are stored under sha256 %s: upload them first, or send contentBase64", in.SHA256)
		}
		if b.ByteSize != size {
			return newErr(CodeArtifactDigestMismatch, "the declared byteSize %d is not the stored bytes' %d (sha256 %s)", size, b.ByteSize, in.SHA256)
		}
	}
	c.ref("blob", in.SHA256)
	art := &Artifact{ID: m.newID("artifact"), TaskID: c.task.ID, Filename: in.Filename, ContentType: in.ContentType, ByteSize: size, SHA256: in.SHA256, ContentRef: ref}
	art.CreatedAt = m.now()
	appendv(m, &m.st.Artifacts, art)
	wp := &WorkProduct{ID: m.newID("work-product"), TaskID: c.task.ID, Type: "artifact", Title: in.Title,
		Metadata: WorkProductMetadata{Filename: in.Filename, ContentType: in.ContentType, ByteSize: size, ContentRef: ref}, ArtifactID: strp(art.ID)}
	wp.CreatedAt = m.now()
	appendv(m, &m.st.WorkProducts, wp)
	c.ref("artifact", art.ID)
	c.ref("work-product", wp.ID)
	return nil
}

func (m *Memory) reassignTask(c *cmdCtx) error {
	var in struct {
		TargetTaskID            string      `json:"targetTaskId"`
		AssigneeActorID         string      `json:"assigneeActorId"`
		ExpectedAssigneeActorID *string     `json:"expectedAssigneeActorId"`
		ExpectedStatusVersion   json.Number `json:"expectedStatusVersion"`
		Reason                  string      `json:"reason"`
	}
	if err := decode(c.raw, &in); err != nil {
		return err
	}
	target, err := m.task(in.TargetTaskID)
	if err != nil {
		return err
	}
	assignee, err := m.actor(in.AssigneeActorID)
	if err != nil {
		return err
	}
	if err := m.assertCompany("task", target.ID, target.CompanyID); err != nil {
		return err
	}
	if err := m.assertCompany("actor", assignee.ID, assignee.CompanyID); err != nil {
		return err
	}
	if target.ID == c.task.ID {
		return newErr(CodeReassignmentCurrentTask, "a run cannot reassign its own active task")
	}
	switch target.Status {
	case TaskDone, TaskCancelled, TaskInReview:
		return newErr(CodeReassignmentStateDenied, "task %s is %s and cannot be reassigned", target.ID, target.Status)
	}
	if assignee.Status != ActorActive {
		return newErr(CodeReassignmentTargetUnavailable, "actor %s is %s", assignee.ID, assignee.Status)
	}
	version, ok := safeNonNegative(in.ExpectedStatusVersion)
	sameAssignee := (in.ExpectedAssigneeActorID == nil && target.AssigneeActorID == nil) ||
		(in.ExpectedAssigneeActorID != nil && eq(target.AssigneeActorID, *in.ExpectedAssigneeActorID))
	if !ok || !sameAssignee || version != int64(target.StatusVersion) {
		return newErr(CodeReassignmentConflict, "task %s changed since it was observed. Refresh the task before deciding again", target.ID)
	}
	if err := required(in.Reason, "reassignment reason"); err != nil {
		return err
	}
	c.ref("task", target.ID)
	if eq(target.AssigneeActorID, assignee.ID) {
		return nil
	}
	if target.ExecutionRunID != nil {
		if other := m.idx.runs[*target.ExecutionRunID]; other != nil {
			edit(m, other, func(r *Run) { r.Status = RunCancelled })
		}
	}
	edit(m, target, func(t *Task) {
		t.AssigneeActorID = strp(assignee.ID)
		t.StatusVersion++
		t.CheckoutRunID = nil
		t.ExecutionRunID = nil
		if t.Status == TaskInProgress {
			t.Status = TaskTodo
		}
	})
	m.addComment(target.ID, strp(c.actor.ID), in.Reason)
	if target.Status == TaskTodo {
		w := m.scheduleWake(assignee.ID, target.ID, WakeManual, mustJSON(map[string]string{"reason": in.Reason}), 0)
		c.wakes = append(c.wakes, w.ID)
	}
	return nil
}

func (m *Memory) setDependencies(c *cmdCtx) error {
	var in struct {
		BlockedByTaskIDs []string `json:"blockedByTaskIds"`
	}
	if err := decode(c.raw, &in); err != nil {
		return err
	}
	if err := m.replaceDependencies(c, c.task, in.BlockedByTaskIDs); err != nil {
		return err
	}
	if len(in.BlockedByTaskIDs) > 0 {
		return m.transition(c, c.task, TaskBlocked)
	}
	return nil
}

// TaskPriorities are the task priorities of create_task and create_issue,
// highest first; the default is medium.
var TaskPriorities = []string{"critical", "high", "medium", "low"}

func (m *Memory) createTask(c *cmdCtx) error {
	var in struct {
		Title            string      `json:"title"`
		Description      *string     `json:"description"`
		AssigneeActorID  *string     `json:"assigneeActorId"`
		Priority         *string     `json:"priority"`
		BlockedByTaskIDs *[]string   `json:"blockedByTaskIds"`
		Status           *TaskStatus `json:"status"`
	}
	if err := decode(c.raw, &in); err != nil {
		return err
	}
	if in.AssigneeActorID != nil {
		a, err := m.actor(*in.AssigneeActorID)
		if err != nil {
			return err
		}
		if err := m.assertCompany("actor", a.ID, a.CompanyID); err != nil {
			return err
		}
	}
	if err := required(in.Title, "task title"); err != nil {
		return err
	}
	priority := "medium"
	if in.Priority != nil {
		if !slices.Contains(TaskPriorities, *in.Priority) {
			return newErr(CodeSemanticCommandInvalid, "task priority must be one of %s", strings.Join(TaskPriorities, ", "))
		}
		priority = *in.Priority
	}
	if in.Status != nil && *in.Status != TaskBacklog && *in.Status != TaskTodo {
		return newErr(CodeSemanticCommandInvalid, "task status must be backlog or todo")
	}
	var blockers []string
	if in.BlockedByTaskIDs != nil {
		blockers = *in.BlockedByTaskIDs
	}
	status := TaskTodo
	switch {
	case in.Status != nil && *in.Status == TaskBacklog:
		status = TaskBacklog
	case len(blockers) > 0:
		status = TaskBlocked
	}
	id := m.newID("task")
	n := m.nextCounter("issue-number")
	child := &Task{ID: id, CompanyID: m.st.Company.ID, Identifier: m.st.Company.IssuePrefix + "-" + itoa(n), Title: in.Title,
		Description: in.Description, Status: status, Priority: priority, WorkMode: "standard", ParentID: strp(c.task.ID),
		AssigneeActorID: in.AssigneeActorID}
	m.addTask(child)
	if len(blockers) > 0 {
		if err := m.replaceDependencies(c, child, blockers); err != nil {
			return err
		}
	}
	c.ref("task", child.ID)
	return nil
}

func (m *Memory) requestApproval(c *cmdCtx) error {
	var in struct {
		ApprovalType     string          `json:"approvalType"`
		Payload          json.RawMessage `json:"payload"`
		TargetRevisionID *string         `json:"targetRevisionId"`
	}
	if err := decode(c.raw, &in); err != nil {
		return err
	}
	if err := required(in.ApprovalType, "approval type"); err != nil {
		return err
	}
	if err := m.checkTarget(c.task, in.TargetRevisionID); err != nil {
		return err
	}
	payload, err := canonicalOr(in.Payload, "{}")
	if err != nil {
		return err
	}
	if err := m.transition(c, c.task, TaskInReview); err != nil {
		return err
	}
	ap := &Approval{ID: m.newID("approval"), CompanyID: m.st.Company.ID, TaskIDs: []string{c.task.ID}, Type: in.ApprovalType,
		Status: ApprovalPending, RequestedByActorID: strp(c.actor.ID), Payload: payload, TargetRevisionID: in.TargetRevisionID, Comments: []*ApprovalComment{}}
	ap.CreatedAt = m.now()
	appendv(m, &m.st.Approvals, ap)
	mapSet(m, m.idx.approvals, ap.ID, ap)
	c.ref("approval", ap.ID)
	return nil
}

func (m *Memory) decideApproval(c *cmdCtx) error {
	var in struct {
		ApprovalID string         `json:"approvalId"`
		Decision   ApprovalStatus `json:"decision"`
		Note       string         `json:"note"`
	}
	if err := decode(c.raw, &in); err != nil {
		return err
	}
	ap, err := m.approvalOnTask(c, in.ApprovalID)
	if err != nil {
		return err
	}
	if ap.Status != ApprovalPending {
		return newErr(CodeApprovalAlreadyDecided, "approval %s is already %s", ap.ID, ap.Status)
	}
	if !slices.Contains(ApprovalDecisions, in.Decision) {
		return newErr(CodeSemanticCommandInvalid, "approval decision must be approved, rejected or cancelled")
	}
	if err := required(in.Note, "approval decision note"); err != nil {
		return err
	}
	if in.Decision == ApprovalApproved {
		if err := m.checkCurrent("approval "+ap.ID, ap.TargetRevisionID); err != nil {
			return err
		}
	}
	var target *Task
	requester := m.requesterEligible(ap)
	if requester != nil {
		for _, id := range ap.TaskIDs {
			t := m.idx.tasks[id]
			if t == nil || !eq(t.AssigneeActorID, requester.ID) || t.CheckoutRunID != nil || t.ExecutionRunID != nil {
				continue
			}
			if (t.Status == TaskTodo || t.Status == TaskBlocked || t.Status == TaskInReview) && !m.hasUnresolvedBlockers(t.ID, "") {
				target = t
				break
			}
		}
		if target == nil {
			target = &Task{ID: m.newID("task"), CompanyID: m.st.Company.ID, Identifier: m.st.Company.IssuePrefix + "-APPROVAL-" + ap.ID,
				Title: "Continue after approval " + ap.ID, Description: strp("Continue the work that waited on approval " + ap.ID + "."),
				Status: TaskTodo, Priority: "medium", WorkMode: "standard", AssigneeActorID: strp(requester.ID)}
			m.addTask(target)
			c.ref("task", target.ID)
		}
	}
	decidedAt := m.now()
	edit(m, ap, func(a *Approval) {
		a.Status = in.Decision
		a.DecisionNote = strp(in.Note)
		a.DecidedAt = strp(decidedAt)
	})
	if target != nil {
		w := m.scheduleWake(requester.ID, target.ID, WakeApprovalResolved, mustJSON(map[string]string{"approvalId": ap.ID, "decision": string(in.Decision)}), 0)
		c.wakes = append(c.wakes, w.ID)
	}
	c.ref("approval", ap.ID)
	return nil
}

func (m *Memory) commentOnApproval(c *cmdCtx) error {
	var in struct {
		ApprovalID string `json:"approvalId"`
		Body       string `json:"body"`
	}
	if err := decode(c.raw, &in); err != nil {
		return err
	}
	ap, err := m.approvalOnTask(c, in.ApprovalID)
	if err != nil {
		return err
	}
	if err := required(in.Body, "approval comment body"); err != nil {
		return err
	}
	cm := &ApprovalComment{ID: m.newID("approval-comment"), AuthorActorID: strp(c.actor.ID), Body: in.Body}
	cm.CreatedAt = m.now()
	appendv(m, &ap.Comments, cm)
	c.ref("approval", ap.ID)
	c.ref("approval-comment", cm.ID)
	return nil
}

// ServiceActions are the actions of control_workspace_service: start
// (status running, optionally with a URL), stop (stopped) and fail (failed).
var ServiceActions = []string{"start", "stop", "fail"}

func (m *Memory) controlWorkspaceService(c *cmdCtx) error {
	var in struct {
		ServiceID string  `json:"serviceId"`
		Action    string  `json:"action"`
		URL       *string `json:"url"`
	}
	if err := decode(c.raw, &in); err != nil {
		return err
	}
	svc := m.idx.services[in.ServiceID]
	if svc == nil || svc.TaskID != c.task.ID {
		return newErr(CodeWorkspaceServiceMissing, "workspace service %s does not exist on task %s", in.ServiceID, c.task.ID)
	}
	var status string
	url := svc.URL
	switch in.Action { // ServiceActions
	case "start":
		status = "running"
		if in.URL != nil {
			url = in.URL
		}
	case "stop":
		status, url = "stopped", nil
	case "fail":
		status, url = "failed", nil
	default:
		return newErr(CodeSemanticCommandInvalid, "workspace service action must be start, stop or fail")
	}
	at := m.now()
	edit(m, svc, func(s *WorkspaceService) {
		s.Status = status
		s.URL = url
		s.LastTransitionAt = at
	})
	c.ref("workspace-service", svc.ID)
	return nil
}

// BudgetStopComment is the system comment written when a budget hard stop halts a run.
const BudgetStopComment = "Budget hard stop reached: the run was stopped and the task blocked until the budget is raised."

func (m *Memory) recordBudgetUsage(c *cmdCtx) error {
	var in struct {
		Cents json.Number `json:"cents"`
	}
	if err := decode(c.raw, &in); err != nil {
		return newErr(CodeBudgetUsageInvalid, "budget usage cents must be a non-negative safe integer")
	}
	cents, ok := safeNonNegative(in.Cents)
	if !ok {
		return newErr(CodeBudgetUsageInvalid, "budget usage cents must be a non-negative safe integer")
	}
	budgets, err := m.effectiveBudgets(c.actor)
	if err != nil {
		return err
	}
	stopped := false
	for _, b := range budgets {
		edit(m, b, func(b *Budget) { b.SpentCents += cents })
		c.ref("budget", b.ID)
		if exceeded(b) {
			stopped = true
		}
	}
	if !stopped {
		return nil
	}
	edit(m, c.actor, func(a *Actor) { a.Status = ActorPaused })
	edit(m, c.run, func(r *Run) { r.Status = RunBudgetStopped })
	if err := m.transition(c, c.task, TaskBlocked); err != nil {
		return err
	}
	edit(m, c.task, func(t *Task) {
		t.CheckoutRunID = nil
		t.ExecutionRunID = nil
	})
	cm := m.addComment(c.task.ID, nil, BudgetStopComment)
	c.ref("comment", cm.ID)
	c.ref("actor", c.actor.ID)
	return nil
}

// setTaskTitle is set_task_title: the run's task gets the title (trimmed; not empty, at
// most MaxTaskTitleChars characters). The change is the command's audit record
// (semantic_command.applied, attributed to the run and its actor); its input, with the
// title, is the command's idempotency record.
func (m *Memory) setTaskTitle(c *cmdCtx) error {
	var in struct {
		Title string `json:"title"`
	}
	if err := decode(c.raw, &in); err != nil {
		return err
	}
	title := strings.TrimSpace(in.Title)
	if err := required(title, "task title"); err != nil {
		return err
	}
	if n := utf8.RuneCountInString(title); n > MaxTaskTitleChars {
		return newErr(CodeSemanticCommandInvalid, "task title has %d characters; at most %d", n, MaxTaskTitleChars)
	}
	edit(m, c.task, func(t *Task) { t.Title = title })
	return nil
}

func (m *Memory) finishTask(c *cmdCtx) error {
	var in struct {
		Summary string `json:"summary"`
	}
	if err := decode(c.raw, &in); err != nil {
		return err
	}
	if err := required(in.Summary, "finish summary"); err != nil {
		return err
	}
	if err := m.transition(c, c.task, TaskDone); err != nil {
		return err
	}
	at := m.now()
	edit(m, c.task, func(t *Task) { t.CompletedAt = strp(at) })
	m.actorComment(c, in.Summary)
	return nil
}

func (m *Memory) blockTask(c *cmdCtx) error {
	var in struct {
		Reason           string    `json:"reason"`
		BlockedByTaskIDs *[]string `json:"blockedByTaskIds"`
	}
	if err := decode(c.raw, &in); err != nil {
		return err
	}
	if err := required(in.Reason, "block reason"); err != nil {
		return err
	}
	if in.BlockedByTaskIDs != nil {
		if err := m.replaceDependencies(c, c.task, *in.BlockedByTaskIDs); err != nil {
			return err
		}
	}
	if err := m.transition(c, c.task, TaskBlocked); err != nil {
		return err
	}
	m.actorComment(c, in.Reason)
	return nil
}

func (m *Memory) requestReview(c *cmdCtx) error {
	var in struct {
		Summary string `json:"summary"`
	}
	if err := decode(c.raw, &in); err != nil {
		return err
	}
	if err := m.transition(c, c.task, TaskInReview); err != nil {
		return err
	}
	if err := required(in.Summary, "review summary"); err != nil {
		return err
	}
	m.actorComment(c, in.Summary)
	return nil
}

func (m *Memory) releaseTask(c *cmdCtx) error {
	var in struct {
		Reason string `json:"reason"`
	}
	if err := decode(c.raw, &in); err != nil {
		return err
	}
	if err := required(in.Reason, "release reason"); err != nil {
		return err
	}
	if !eq(c.task.CheckoutRunID, c.run.ID) || !eq(c.task.ExecutionRunID, c.run.ID) {
		return newErr(CodeReleaseLockMismatch, "fixture run %s does not hold the lock of task %s", c.run.ID, c.task.ID)
	}
	if err := m.transition(c, c.task, TaskTodo); err != nil {
		return err
	}
	edit(m, c.task, func(t *Task) {
		t.CheckoutRunID = nil
		t.ExecutionRunID = nil
	})
	m.actorComment(c, in.Reason)
	return nil
}

func (m *Memory) scheduleWakeCommand(c *cmdCtx) error {
	var in struct {
		Reason     string          `json:"reason"`
		Payload    json.RawMessage `json:"payload"`
		DelayTicks json.Number     `json:"delayTicks"`
	}
	if err := decode(c.raw, &in); err != nil {
		return err
	}
	delay, ok := safeNonNegative(in.DelayTicks)
	if !ok {
		return newErr(CodeWakeDelayInvalid, "wake delayTicks must be a non-negative safe integer")
	}
	if c.task.AssigneeActorID == nil {
		return newErr(CodeWakeAssigneeMissing, "task %s has no assignee to wake", c.task.ID)
	}
	if err := required(in.Reason, "wake reason"); err != nil {
		return err
	}
	payload, err := canonicalOr(in.Payload, "{}")
	if err != nil {
		return err
	}
	w := m.scheduleWake(*c.task.AssigneeActorID, c.task.ID, WakeReason(in.Reason), payload, delay)
	c.ref("wake", w.ID)
	c.wakes = append(c.wakes, w.ID)
	return nil
}

func itoa(n int64) string {
	b, _ := json.Marshal(n)
	return string(b)
}

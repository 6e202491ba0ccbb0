package catalog

import (
	"encoding/hex"
	"errors"
	"fmt"
	"github.com/agentproof/agentproof/environment/container"
	"maps"
	"path"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"

	"github.com/agentproof/agentproof/agent/driver"
	"github.com/agentproof/agentproof/agent/script"
	"github.com/agentproof/agentproof/controlplane"
	"github.com/agentproof/agentproof/match"
	"github.com/agentproof/agentproof/verdict"
)

// statusNames spells control-plane statuses as the catalog's YAML does.
func statusNames[S ~string](statuses ...S) []string {
	out := make([]string, len(statuses))
	for i, s := range statuses {
		out[i] = string(s)
	}
	return out
}

// IDPattern is the grammar of suite, profile, environment, case and group ids: lower-case
// letters and digits in dash-separated words, at most 100 characters. Dots are excluded
// so that a cell id "<suite>.<profile>.<environment>.<case>" splits unambiguously.
var IDPattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9]+(?:-[a-z0-9]+)*$`) })

// CredentialPattern is the grammar of credential names (environment-variable style).
var CredentialPattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Z][A-Z0-9_]*$`) })

const maxIDLength = 100

// RetrySingleAttempt is the automaticRetryPolicy of a case that must never be retried
// automatically (its first attempt's outcome is the result, whatever it was).
const RetrySingleAttempt = "single_attempt"

// Enumerations of the catalog's closed fields (the harness's catalog format, plus
// agentproof's own builtin qualification source). A case's flow is not among them: the
// QualificationBuiltin is the modelQualification source of a profile whose model is
// agentproof's own or none (built-in agents, the scripted model, an exec agent with no
// provider's model): no provider sets its pace.
const QualificationBuiltin = "builtin"

// flows are the flow registry's (WithFlows).
var (
	Generations          = []string{"legacy", "native"}
	QualificationSources = []string{"adapter_constant", "qualified_runner_profile", "openrouter_rankings_snapshot", QualificationBuiltin}
	CredentialScopes     = []string{"profile", "environment"}
	CredentialKinds      = []string{CredentialKindEnv, CredentialKindLoginFile}
	EnvironmentDrivers   = []string{"local", "sandbox", "container"}
	EnvironmentProviders = []string{"local", "daytona", "sandbox", "container"}
	LifecycleSetups      = []string{"instance_managed", "create_via_api"}
	LifecycleModes       = []string{LifecycleModePerTurn, LifecycleModeWarm}
	LifecycleProbes      = []string{"run_context_via_api"}
	LifecycleCleanups    = []string{"instance_shutdown", "delete_via_api_and_destroy_leases"}
	TargetKinds          = []string{"local", "remote"}
	TargetTransports     = []string{"", "sandbox"}
	WorkModes            = []string{"standard", "planning", "ask"}
	IssueStates          = statusNames(controlplane.TaskDone, controlplane.TaskInReview, controlplane.TaskBlocked, controlplane.TaskInProgress)
	RunStates            = statusNames(controlplane.CompletionStatuses...)
	ToolReviews          = []string{"approve", "decline", "always", "restart"}
	RetryPolicies        = []string{"", RetrySingleAttempt}
	TurnTriggers         = script.Triggers
	daytonaImageRE       = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?i)^.+@sha256:[0-9a-f]{64}$`) })
	sha256HexRE          = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[0-9a-f]{64}$`) })
	configurationKeyRE   = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9][a-z0-9._-]*$`) })
)

// toolCommand returns the semantic-command table row (controlplane.Commands) of an
// agent-facing command kind; ok is false for any other string. Reference-script steps
// use exactly these commands and arguments.
func toolCommand(kind string) (controlplane.CommandSpec, bool) {
	c, ok := controlplane.LookupCommand(controlplane.CommandKind(kind))
	return c, ok && c.Tool
}

// toolCommandNames are the agent-facing command kinds, sorted.
func toolCommandNames() []string {
	var out []string
	for _, c := range controlplane.Commands() {
		if c.Tool {
			out = append(out, string(c.Kind))
		}
	}
	slices.Sort(out)
	return out
}

// GrantableClaims are the capability claims a profile or case may grant its agent
// (capabilityGrants): the claim of every agent-facing command of the semantic-command
// table (controlplane.Commands with Tool set and a Claim), sorted, without duplicates.
func GrantableClaims() []string {
	var out []string
	for _, c := range controlplane.Commands() {
		if c.Tool && c.Claim != "" && !slices.Contains(out, c.Claim) {
			out = append(out, c.Claim)
		}
	}
	slices.Sort(out)
	return out
}

// grants checks a capabilityGrants list: every entry a grantable claim, none twice.
func (v *validator) grants(owner string, field *[]string, ownerPtr any) {
	allowed, list := GrantableClaims(), *field
	for i := range list {
		switch {
		case !slices.Contains(allowed, list[i]):
			v.add(v.at(&list[i], field, ownerPtr), "%s capabilityGrants[%d] %q is not a grantable claim (one of %s)", owner, i, list[i], strings.Join(allowed, ", "))
		case slices.Contains(list[:i], list[i]):
			v.add(v.at(&list[i], field, ownerPtr), "%s capabilityGrants[%d] %q is listed twice", owner, i, list[i])
		}
	}
}

// commentingNames are the command kinds that post a comment and so may carry
// present: true, in table order.
func commentingNames() []string {
	var out []string
	for _, c := range controlplane.Commands() {
		if c.Tool && c.Commenting {
			out = append(out, string(c.Kind))
		}
	}
	return out
}

type validator struct {
	c  *Catalog
	ps *problems

	groups      map[string]*Group
	credentials map[string]*Credential
	profiles    map[string]*Profile
	envs        map[string][]*Environment // id → variants
	envByRef    map[string]*Environment   // "id" and "id@key" → environment
	cases       map[string]*Case
	rankings    map[string]*Ranking
	flows       map[Flow]FlowContract // the flows loading was given (WithFlows), nil for any
}

// at returns the recorded position of the value ptr points to, or of the first
// fallback that has one.
func (v *validator) at(ptrs ...any) Pos {
	for _, p := range ptrs {
		if pos, ok := v.c.posOf(p); ok {
			return pos
		}
	}
	return Pos{}
}

func (v *validator) add(p Pos, format string, args ...any) { v.ps.add(p, format, args...) }

func oneOf[T ~string](list []T) string {
	var q []string
	for _, s := range list {
		if s == "" {
			continue
		}
		q = append(q, string(s))
	}
	return strings.Join(q, ", ")
}

// enum checks an enumerated string field.
func (v *validator) enum(what string, field *string, allowed []string, owner any, required bool) {
	enumOf(v, what, field, allowed, owner, required)
}

// enumOf checks that *field is one of allowed (or empty when not required).
func enumOf[T ~string](v *validator, what string, field *T, allowed []T, owner any, required bool) {
	if *field == "" {
		if required {
			v.add(v.at(field, owner), "%s is required (one of %s)", what, oneOf(allowed))
		}
		return
	}
	if !slices.Contains(allowed, *field) {
		v.add(v.at(field, owner), "%s %q is not one of %s", what, *field, oneOf(allowed))
	}
}

// fixtureFlows lists the fixture programs' flows (FlowContract.FixtureProgram) among
// those loading was given, sorted.
func (v *validator) fixtureFlows() []string {
	var out []string
	for _, name := range v.flowNames() {
		if v.flows[Flow(name)].FixtureProgram {
			out = append(out, name)
		}
	}
	return out
}

// caseFlow checks a case's flow against the flows loading was given (WithFlows) and
// returns its contract; known is false when loading was given none or the flow is not
// among them, and then no check that depends on the flow is made.
func (v *validator) caseFlow(cs *Case) (fc FlowContract, known bool) {
	if cs.Flow == "" {
		v.add(v.at(&cs.Flow, cs), "case %s flow is required%s", cs.ID, v.flowList(" (one of %s)"))
		return FlowContract{}, false
	}
	if v.flows == nil {
		return FlowContract{}, false
	}
	fc, known = v.flows[cs.Flow]
	if !known {
		v.add(v.at(&cs.Flow, cs), "case %s flow %q is not a flow this agentproof plays%s; the flows it plays: %s", cs.ID, cs.Flow, didYouMean([]string{string(cs.Flow)}, v.flowNames()), strings.Join(v.flowNames(), ", "))
	}
	return fc, known
}

// flowNames are the names of the flows loading was given, sorted.
func (v *validator) flowNames() []string {
	var out []string
	for f := range v.flows {
		out = append(out, string(f))
	}
	slices.Sort(out)
	return out
}

// flowList formats the flows loading was given with format (one %s), "" when it was
// given none.
func (v *validator) flowList(format string) string {
	if v.flows == nil {
		return ""
	}
	return fmt.Sprintf(format, strings.Join(v.flowNames(), ", "))
}

func (v *validator) required(what string, field *string, owner any) {
	if strings.TrimSpace(*field) == "" {
		v.add(v.at(field, owner), "%s is required", what)
	}
}

func (v *validator) id(kind string, field *string, owner any) bool {
	if *field == "" {
		v.add(v.at(field, owner), "%s id is required", kind)
		return false
	}
	if len(*field) > maxIDLength || !IDPattern().MatchString(*field) {
		v.add(v.at(field, owner), "%s id %q must be lower-case words of letters and digits joined by single dashes (%s), at most %d characters", kind, *field, IDPattern(), maxIDLength)
		return false
	}
	return true
}

func (v *validator) groupRefs(owner string, groups []string, ownerPtr any) {
	for i := range groups {
		if v.groups[groups[i]] == nil {
			v.add(v.at(&groups[i], ownerPtr), "%s declares unknown group %q (declare it under groups)", owner, groups[i])
		}
	}
}

func validate(c *Catalog, ps *problems, o loadOptions) {
	v := &validator{
		c: c, ps: ps,
		groups: map[string]*Group{}, credentials: map[string]*Credential{}, profiles: map[string]*Profile{},
		envs: map[string][]*Environment{}, envByRef: map[string]*Environment{}, cases: map[string]*Case{},
		rankings: map[string]*Ranking{}, flows: o.flows,
	}

	for _, g := range nonNil(v, c.Groups, "group") {
		if v.id("group", &g.ID, g) && v.dup("group", g.ID, &g.ID, firstID(v.groups[g.ID], func(g *Group) *string { return &g.ID })) {
			v.groups[g.ID] = g
		}
	}
	for _, cr := range nonNil(v, c.Credentials, "credential") {
		if cr.ID == "" || !CredentialPattern().MatchString(cr.ID) {
			v.add(v.at(&cr.ID, cr), "credential id %q must match %s", cr.ID, CredentialPattern())
		} else if v.dup("credential", cr.ID, &cr.ID, firstID(v.credentials[cr.ID], func(c *Credential) *string { return &c.ID })) {
			v.credentials[cr.ID] = cr
		}
		v.enum("credential scope", &cr.Scope, CredentialScopes, cr, true)
		v.validateCredentialKind(cr)
	}
	for _, r := range nonNil(v, c.Rankings, "ranking") {
		v.validateRanking(r)
	}
	for _, e := range nonNil(v, c.Environments, "environment") {
		v.validateEnvironment(e)
	}
	for _, p := range nonNil(v, c.Profiles, "profile") {
		v.validateProfile(p)
	}
	v.validateCases(nonNil(v, c.Cases, "case"))
	suites := nonNil(v, c.Suites, "suite")
	c.suiteByID = map[string]*Suite{}
	for _, s := range suites {
		if v.id("suite", &s.ID, s) && v.dup("suite", s.ID, &s.ID, firstID(c.suiteByID[s.ID], func(s *Suite) *string { return &s.ID })) {
			c.suiteByID[s.ID] = s
		}
	}
	// Suite references are always resolved; matrices, sizes and fingerprints only when
	// every declaration is sound, since a broken profile or case would make every
	// count it touches wrong.
	declarationsOK := len(v.ps.list) == 0
	expected := 0
	for _, s := range suites {
		expected += max(0, s.ExpectedMatrixSize)
	}
	c.byCellID = make(map[string]*Cell, min(expected, 1<<20))
	c.Cells = make([]*Cell, 0, min(expected, 1<<20))
	total := 0
	for _, s := range suites {
		v.validateSuiteFields(s)
		v.validateSuite(s, declarationsOK)
		total += s.ExpectedMatrixSize
	}
	if len(v.ps.list) == 0 && total != len(c.Cells) {
		v.add(Pos{}, "the catalog's expected size is %d cells (sum of expectedMatrixSize); the matrix has %d", total, len(c.Cells))
	}
	v.validateKnownFailures(len(v.ps.list) == 0)
	c.idx = buildIndex(c.Cells)
}

// nonNil drops null list entries, reporting each.
func nonNil[T any](v *validator, list []*T, kind string) []*T {
	out := list[:0:0]
	for i := range list {
		if list[i] == nil {
			v.add(v.at(&list[i]), "empty %s entry", kind)
			continue
		}
		out = append(out, list[i])
	}
	return out
}

// dup reports a duplicate id at field, naming where first (the id field of the first
// declaration, nil when the id is new) is declared — in a merged catalog that is often
// another file — and returns whether the id is new.
func (v *validator) dup(kind, id string, field, first *string) bool {
	if first != nil {
		v.add(v.at(field), "duplicate %s id %q (first declared at %s)", kind, id, v.at(first).Location())
		return false
	}
	return true
}

// firstID returns the id field of an earlier declaration, nil when there is none.
func firstID[T any](earlier *T, id func(*T) *string) *string {
	if earlier == nil {
		return nil
	}
	return id(earlier)
}

func (v *validator) scanPayload(ptr any, where string) {
	n := v.c.rawOf(ptr)
	if n == nil {
		return
	}
	pos := v.at(ptr)
	s := &payloadScanner{file: pos.File, ps: v.ps, credentials: v.credentials, seen: map[*yaml.Node]bool{}}
	s.scan(n, where)
}

func (v *validator) validateRanking(r *Ranking) {
	v.required("ranking schema", &r.Schema, r)
	v.required("ranking snapshotId", &r.SnapshotID, r)
	if r.SnapshotID != "" {
		if v.rankings[r.SnapshotID] != nil {
			v.add(v.at(&r.SnapshotID, r), "duplicate ranking snapshotId %q", r.SnapshotID)
		} else {
			v.rankings[r.SnapshotID] = r
		}
	}
	v.required("ranking sourceUrl", &r.SourceURL, r)
	v.required("ranking capturedAt", &r.CapturedAt, r)
	if len(r.Models) == 0 {
		v.add(v.at(&r.Models, r), "ranking %s has no models", r.SnapshotID)
	}
	ids := map[string]bool{}
	for i, m := range r.Models {
		if m == nil {
			v.add(v.at(&r.Models[i], r), "empty ranking model entry")
			return
		}
		if m.Rank != i+1 {
			v.add(v.at(&m.Rank, m), "ranking model %d has rank %d; ranks must be 1, 2, … in order", i+1, m.Rank)
		}
		v.required("ranking model id", &m.ID, m)
		if ids[m.ID] {
			v.add(v.at(&m.ID, m), "duplicate ranking model id %q", m.ID)
		}
		ids[m.ID] = true
	}
	if !sha256HexRE().MatchString(r.ContentHash) {
		v.add(v.at(&r.ContentHash, r), "ranking contentHash must be 64 lower-case hex digits")
		return
	}
	got, err := r.ComputeContentHash()
	if err != nil {
		v.add(v.at(r), "ranking %s: %v", r.SnapshotID, err)
		return
	}
	if got != r.ContentHash {
		v.add(v.at(&r.ContentHash, r), "ranking %s contentHash %s does not match its models (computed %s); review the snapshot and update the hash", r.SnapshotID, r.ContentHash, got)
	}
}

func (v *validator) validateEnvironment(e *Environment) {
	ok := v.id("environment", &e.ID, e)
	if e.ConfigurationKey != "" && (len(e.ConfigurationKey) > maxIDLength || !configurationKeyRE().MatchString(e.ConfigurationKey)) {
		v.add(v.at(&e.ConfigurationKey, e), "environment configurationKey %q must be lower-case letters, digits, '.', '_' or '-'", e.ConfigurationKey)
	}
	if e.ConfigurationKey == "default" {
		v.add(v.at(&e.ConfigurationKey, e), "environment configurationKey \"default\" is reserved for environments without one; omit it")
	}
	if ok {
		ref := envRef(e)
		if first := v.envByRef[ref]; first != nil {
			v.add(v.at(&e.ID, e), "duplicate environment %q (first declared at %s)", ref, v.at(&first.ID, first).Location())
		} else {
			v.envByRef[ref] = e
			v.envs[e.ID] = append(v.envs[e.ID], e)
		}
	}
	v.required("environment label", &e.Label, e)
	v.groupRefs("environment "+e.ID, e.Groups, e)
	v.enum("environment driver", &e.Driver, EnvironmentDrivers, e, true)
	v.enum("environment provider", &e.Provider, EnvironmentProviders, e, true)
	if e.Credential != "" {
		v.credential(&e.Credential, e, "environment", e.ID)
	}
	v.enum("lifecycle setup", &e.Lifecycle.Setup, LifecycleSetups, e, true)
	v.enum("lifecycle probe", &e.Lifecycle.Probe, LifecycleProbes, e, true)
	v.enum("lifecycle cleanup", &e.Lifecycle.Cleanup, LifecycleCleanups, e, true)
	v.enum("expectedExecutionTarget kind", &e.ExpectedExecutionTarget.Kind, TargetKinds, e, true)
	v.enum("expectedExecutionTarget transport", &e.ExpectedExecutionTarget.Transport, TargetTransports, e, false)
	if e.AttemptDeadlineMs < 0 {
		v.add(v.at(&e.AttemptDeadlineMs, e), "attemptDeadlineMs must not be negative")
	}
	if r := e.Resources; r != nil && (r.CPU <= 0 || r.MemoryGiB <= 0 || r.DiskGiB <= 0) {
		v.add(v.at(r, e), "environment %s resources cpu, memoryGiB and diskGiB must all be positive", e.ID)
	}
	if r := e.Resources; r != nil && r.PIDs < 0 {
		v.add(v.at(&r.PIDs, e), "environment %s resources pids must be positive when set", e.ID)
	}
	if e.Provider == "sandbox" {
		v.validateSandboxEnvironment(e)
	}
	if e.Provider == "container" || e.Driver == "container" {
		v.validateContainerEnvironment(e)
	}
	if img, ok := e.Config["image"]; ok && e.Provider == "daytona" {
		s, _ := img.(string)
		if !daytonaImageRE().MatchString(s) {
			v.add(v.at(&e.Config, e), "environment %s config.image must be pinned by an immutable digest (<name>@sha256:<64 hex>)", e.ID)
		}
	}
	v.scanPayload(&e.Config, "environment "+e.ID+" config")
	v.validateWorkspace(e.Workspace, e, "environment "+e.ID)
}

// validateSandboxEnvironment checks what the sandbox provider (package
// environment/sandbox) needs beyond every environment's fields: the sandbox driver,
// resources either absent (the environment declares no limit: its agents get the
// machine's own) or a complete shape including pids (the limits are pinned, never the
// machine's defaults), and, when present, a boolean config.reuseLease.
func (v *validator) validateSandboxEnvironment(e *Environment) {
	if e.Driver != "sandbox" {
		v.add(v.at(&e.Driver, e), "environment %s has provider sandbox, which needs driver sandbox (got %q)", e.ID, e.Driver)
	}
	if r := e.Resources; r != nil && r.PIDs == 0 {
		v.add(v.at(r, e), "sandbox environment %s must pin resources.pids (the most processes and threads its agent may run)", e.ID)
	}
	if reuse, ok := e.Config["reuseLease"]; ok {
		if _, isBool := reuse.(bool); !isBool {
			v.add(v.at(&e.Config, e), "environment %s config.reuseLease must be true or false", e.ID)
		}
	}
}

// validateContainerEnvironment checks what the container provider (package
// environment/container) needs: the container driver and provider together, a
// complete resource shape including pids, a boolean config.reuseLease, and the image:
// config.image named by its digest (<name>@sha256:<64 hex>; a tag alone is refused) or
// config.imageFrom naming an image the harness builds on this machine and pins by
// digest before the campaign starts (busybox-static, nodejs), exactly one of them; and an
// optional config.workdir, an absolute path inside.
func (v *validator) validateContainerEnvironment(e *Environment) {
	if e.Driver != "container" || e.Provider != "container" {
		v.add(v.at(&e.Driver, e), "environment %s: a container environment needs driver container and provider container (got driver %q, provider %q)", e.ID, e.Driver, e.Provider)
	}
	if r := e.Resources; r == nil || r.PIDs == 0 {
		v.add(v.at(e), "container environment %s must pin resources {cpu, memoryGiB, diskGiB, pids} (the limits are pinned, never the engine's defaults)", e.ID)
	}
	if reuse, ok := e.Config["reuseLease"]; ok {
		if _, isBool := reuse.(bool); !isBool {
			v.add(v.at(&e.Config, e), "environment %s config.reuseLease must be true or false", e.ID)
		}
	}
	if wd, ok := e.Config["workdir"]; ok {
		if s, _ := wd.(string); s == "" || s[0] != '/' || path.Clean(s) != s || s == "/" || strings.ContainsAny(s, ":,") {
			v.add(v.at(&e.Config, e), "environment %s config.workdir %v must be an absolute, clean path other than / (where the workspace is mounted inside and seeded from the image)", e.ID, wd)
		}
	}
	v.validateContainerMounts(e)
	img, hasImage := e.Config["image"]
	from, hasFrom := e.Config["imageFrom"]
	switch {
	case hasImage && hasFrom:
		v.add(v.at(&e.Config, e), "environment %s config: image and imageFrom are exclusive", e.ID)
	case hasImage:
		s, _ := img.(string)
		if msg := container.ImageRefProblem(s); msg != "" {
			v.add(v.at(&e.Config, e), "environment %s config.image: %s", e.ID, msg)
		}
	case hasFrom:
		if s, _ := from.(string); !slices.Contains(container.ImageSources, s) {
			v.add(v.at(&e.Config, e), "environment %s config.imageFrom %q is not an image the harness builds (%s)", e.ID, from, strings.Join(container.ImageSources, ", "))
		}
	default:
		v.add(v.at(&e.Config, e), "container environment %s needs config.image (<name>@sha256:<64 hex>) or config.imageFrom (%s)", e.ID, strings.Join(container.ImageSources, ", "))
	}
}

// validateContainerMounts checks a container environment's optional
// config.workspaceMounts (a map of container path → workspace directory, "." for all
// of it) and config.tmpfs (a list of container paths), as ContainerMounts reads them.
func (v *validator) validateContainerMounts(e *Environment) {
	mounts, tmpfs, probs := ContainerMounts(e)
	probs = append(probs, container.MountProblems(mounts, tmpfs)...)
	for _, p := range probs {
		v.add(v.at(&e.Config, e), "environment %s config: %s", e.ID, p)
	}
}

// ContainerMounts reads a container environment's config.workspaceMounts (container
// path → workspace directory) and config.tmpfs (container paths); the problems name a
// value of the wrong type. Both nil when absent.
func ContainerMounts(e *Environment) (map[string]string, []string, []string) {
	var probs []string
	var mounts map[string]string
	if raw, ok := e.Config["workspaceMounts"]; ok {
		m, isMap := raw.(map[string]any)
		if !isMap {
			probs = append(probs, "workspaceMounts must map container paths to workspace directories")
		}
		for k, val := range m {
			s, isStr := val.(string)
			if !isStr {
				probs = append(probs, "workspaceMounts."+k+" must be a workspace directory (a string)")
				continue
			}
			if mounts == nil {
				mounts = map[string]string{}
			}
			mounts[k] = s
		}
	}
	var tmpfs []string
	if raw, ok := e.Config["tmpfs"]; ok {
		l, isList := raw.([]any)
		if !isList {
			probs = append(probs, "tmpfs must be a list of container paths")
		}
		for i, val := range l {
			s, isStr := val.(string)
			if !isStr {
				probs = append(probs, fmt.Sprintf("tmpfs[%d] must be a container path (a string)", i))
				continue
			}
			tmpfs = append(tmpfs, s)
		}
	}
	return mounts, tmpfs, probs
}

// envRef is how suites name an environment: "id", or "id@configurationKey".
func envRef(e *Environment) string {
	if e.ConfigurationKey == "" {
		return e.ID
	}
	return e.ID + "@" + e.ConfigurationKey
}

// credential returns the credential that a profile or an environment (holder, its kind
// what: "profile" or "environment", its id) names in *name when it is declared with the
// holder's scope (scope what); otherwise it reports why and returns nil.
func (v *validator) credential(name *string, holder any, what, id string) *Credential {
	cr := v.credentials[*name]
	switch {
	case cr == nil:
		v.add(v.at(name, holder), "%s %s names unknown credential %q (declare it under credentials)", what, id, *name)
	case cr.Scope != what:
		v.add(v.at(name, holder), "%s %s credential %q has scope %q; its credential must have scope %s", what, id, *name, cr.Scope, what)
	default:
		return cr
	}
	return nil
}

func (v *validator) validateProfile(p *Profile) {
	if v.id("profile", &p.ID, p) && v.dup("profile", p.ID, &p.ID, firstID(v.profiles[p.ID], func(p *Profile) *string { return &p.ID })) {
		v.profiles[p.ID] = p
	}
	v.required("profile label", &p.Label, p)
	v.enum("profile generation", &p.Generation, Generations, p, true)
	v.groupRefs("profile "+p.ID, p.Groups, p)
	if d, err := driver.Parse(p.DriverText); err == nil {
		p.Driver = d // the one parse: every later check and every reader uses p.Driver
	} else {
		v.enum("profile driver", &p.DriverText, driver.Names(), p, true) // the same list Parse accepts
	}
	v.required("profile provider", &p.Provider, p)
	v.required("profile model", &p.Model, p)
	v.enum("modelQualification source", &p.ModelQualification.Source, QualificationSources, p, true)
	v.required("modelQualification qualificationId", &p.ModelQualification.QualificationID, p)
	if p.Credential != "" {
		if cr := v.credential(&p.Credential, p, "profile", p.ID); cr != nil && cr.Kind == CredentialKindLoginFile {
			v.validateLoginFileProfile(p)
		}
	}
	if len(p.SupportedEnvironments) == 0 {
		v.add(v.at(&p.SupportedEnvironments, p), "profile %s lists no supportedEnvironments", p.ID)
	}
	for i := range p.SupportedEnvironments {
		if len(v.envs[p.SupportedEnvironments[i]]) == 0 {
			v.add(v.at(&p.SupportedEnvironments[i], p), "profile %s supports unknown environment %q", p.ID, p.SupportedEnvironments[i])
		}
	}
	if r := p.Ranking; r != nil {
		snap := v.rankings[r.SnapshotID]
		switch {
		case snap == nil:
			v.add(v.at(&r.SnapshotID, r), "profile %s ranking names unknown snapshot %q", p.ID, r.SnapshotID)
		case r.Rank < 1 || r.Rank > len(snap.Models) || snap.Models[r.Rank-1] == nil:
			v.add(v.at(&r.Rank, r), "profile %s ranking rank %d is not in snapshot %s", p.ID, r.Rank, r.SnapshotID)
		case snap.Models[r.Rank-1].ID != r.CanonicalModelID:
			v.add(v.at(&r.CanonicalModelID, r), "profile %s ranking canonicalModelId %q is not rank %d of snapshot %s (%q)", p.ID, r.CanonicalModelID, r.Rank, r.SnapshotID, snap.Models[r.Rank-1].ID)
		}
	}
	if live, ok := p.DriverConfig["live"].(map[string]any); ok {
		if ev, _ := live["envVar"].(string); v.credentials[ev] != nil && v.credentials[ev].Kind == CredentialKindLoginFile {
			v.add(v.at(&p.DriverConfig, p), "profile %s driverConfig live.envVar %q is a login file; a live provider's key must be an env credential", p.ID, ev)
		}
	}
	v.scanPayload(&p.DriverConfig, "profile "+p.ID+" driverConfig")
	v.enum("profile runnerLifecycleMode", &p.RunnerLifecycleMode, LifecycleModes, p, false)
	if d := p.Driver; !d.IsZero() && p.RunnerLifecycleMode == LifecycleModeWarm && !d.Warmable() {
		v.add(v.at(&p.RunnerLifecycleMode, p), "profile %s runnerLifecycleMode warm needs a session driver (%s<agent>, %s<agent> or %s<agent>); driver %s runs one process per run", p.ID, driver.KindACP, driver.KindRPC, driver.KindApp, p.Driver)
	}
	v.grants("profile "+p.ID, &p.CapabilityGrants, p)
	if p.Driver.Kind == driver.KindExec {
		v.validateExecConfig(p)
	}
}

// validateCases registers case ids, then checks the cases concurrently: rendering
// templates and compiling matchers is most of validation's work. Each worker collects
// its own problems; they are merged (and later sorted by position) afterwards.
func (v *validator) validateCases(cases []*Case) {
	for _, cs := range cases {
		if v.id("case", &cs.ID, cs) && v.dup("case", cs.ID, &cs.ID, firstID(v.cases[cs.ID], func(c *Case) *string { return &c.ID })) {
			v.cases[cs.ID] = cs
		}
	}
	workers := min(runtime.GOMAXPROCS(0), max(1, len(cases)/32))
	results := make([]*problems, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			vc := *v // shares the read-only indexes; problems are per worker
			vc.ps = &problems{limit: maxProblems}
			for i := w; i < len(cases); i += workers {
				vc.validateCase(cases[i])
			}
			results[w] = vc.ps
		}()
	}
	wg.Wait()
	for _, r := range results {
		for _, p := range r.list {
			v.ps.add(p.Pos, "%s", p.Message)
		}
		v.ps.dropped += r.dropped
	}
}

// validateCase checks one case; it only reads the validator's indexes.
func (v *validator) validateCase(cs *Case) {
	fc, known := v.caseFlow(cs)
	v.caseFields(cs, fc, known)
	if known {
		v.caseContract(cs, fc)
	}
	vars, ok := v.caseTemplates(cs)
	if !ok {
		return
	}
	v.validateMatchers(cs, vars)
	v.validateReference(cs, vars, fc, known)
}

// caseFields checks the fields every case has, whatever its flow; of its flow's
// contract (when known) only whether its agent works a task.
func (v *validator) caseFields(cs *Case, fc FlowContract, known bool) {
	name := "case " + cs.ID
	v.required("case label", &cs.Label, cs)
	v.groupRefs(name, cs.Groups, cs)
	v.enum("case workMode", &cs.WorkMode, WorkModes, cs, true)
	if cs.ExpectedRunCount < 1 {
		v.add(v.at(&cs.ExpectedRunCount, cs), "%s expectedRunCount must be at least 1", name)
	}
	if m := cs.MinimumExpectedRunCount; m != nil && (*m < 1 || *m > cs.ExpectedRunCount) {
		v.add(v.at(m, cs), "%s minimumExpectedRunCount must be between 1 and expectedRunCount", name)
	}
	for env, ms := range cs.AttemptTimeoutMs {
		p := func() Pos { return v.at(mapEntry{mapPointer(cs.AttemptTimeoutMs), env}, &cs.AttemptTimeoutMs, cs) }
		if len(v.envs[env]) == 0 {
			v.add(p(), "%s attemptTimeoutMs names unknown environment %q", name, env)
		}
		if ms <= 0 {
			v.add(p(), "%s attemptTimeoutMs.%s must be positive (milliseconds)", name, env)
		}
	}
	if cs.TurnTimeoutMs < 0 {
		v.add(v.at(&cs.TurnTimeoutMs, cs), "%s turnTimeoutMs must not be negative", name)
	}
	v.enum("expectedTerminalState issue", &cs.ExpectedTerminalState.Issue, IssueStates, cs, known && !fc.FixtureProgram)
	v.enum("expectedTerminalState run", &cs.ExpectedTerminalState.Run, RunStates, cs, true)
	v.enum("toolReviewDecision", &cs.ToolReviewDecision, ToolReviews, cs, false)
	v.enum("automaticRetryPolicy", &cs.AutomaticRetryPolicy, RetryPolicies, cs, false)
	v.grants(name, &cs.CapabilityGrants, cs)
	if cs.Untitled && cs.Title != "" {
		v.add(v.at(&cs.Title, cs), "%s is untitled: its task is created with an empty title, so title must be empty", name)
	}
	v.validateWorkspace(cs.Workspace, cs, name)
	v.validateVerify(cs, name)
	v.validateCommandMatchers(cs, name)
}

// caseContract checks a case against its flow's contract: the fields of a task its
// agent works (none for a fixture program's flow), the fields the flow needs, the
// flow-only fields it does not accept, and the flow's own rules.
func (v *validator) caseContract(cs *Case, fc FlowContract) {
	name := "case " + cs.ID
	if fc.FixtureProgram {
		if cs.Untitled {
			v.add(v.at(&cs.Untitled, cs), "%s: untitled applies only to cases whose agent works a task", name)
		}
	} else {
		if !cs.Untitled {
			v.required(name+" title", &cs.Title, cs)
		}
		v.required(name+" prompt", &cs.Prompt, cs)
		v.required(name+" marker", &cs.Marker, cs)
	}
	for _, n := range fc.Needs {
		v.need(cs, n)
	}
	for _, f := range FlowOnlyFields {
		if set, at := flowOnlyField(cs, f); set && !slices.Contains(fc.Accepts, f) {
			v.add(v.at(at, cs), "%s: %s applies only to flow %s", name, f, strings.Join(v.accepting(f), " or "))
		}
	}
	if fc.Check != nil {
		fc.Check(cs, CaseProblems{v: v, cs: cs})
	}
}

// flowOnlyField reports whether a case sets flow-only field f, and where.
func flowOnlyField(cs *Case, f CaseField) (set bool, at any) {
	switch f {
	case FieldRestartServer:
		return cs.RestartServerBeforeAnswer, &cs.RestartServerBeforeAnswer
	}
	return false, nil
}

// accepting lists the flows loading was given that accept flow-only field f, sorted.
func (v *validator) accepting(f CaseField) []string {
	var out []string
	for _, name := range v.flowNames() {
		if slices.Contains(v.flows[Flow(name)].Accepts, f) {
			out = append(out, name)
		}
	}
	if len(out) == 0 {
		out = []string{"(none here)"}
	}
	return out
}

// need checks one field a case's flow needs (Need).
func (v *validator) need(cs *Case, n Need) {
	what := ""
	if n.What != "" {
		what = " (" + n.What + ")"
	}
	needs := fmt.Sprintf("case %s: flow %s needs", cs.ID, cs.Flow)
	switch n.Field {
	case FieldRevisionRequest:
		v.needString(&cs.RevisionRequest, cs, needs+" revisionRequest"+what)
	case FieldWorkspaceFile:
		v.needString(&cs.WorkspaceFile, cs, needs+" workspaceFile"+what)
	case FieldFollowups:
		v.needList(&cs.Followups, len(cs.Followups), cs, n, needs+" followups", what)
	case FieldTurnMarkers:
		v.needList(&cs.TurnMarkers, len(cs.TurnMarkers), cs, n, needs+" turnMarkers", what)
	case FieldTurnTimeout:
		if cs.TurnTimeoutMs <= 0 {
			v.add(v.at(&cs.TurnTimeoutMs, cs), "%s a positive turnTimeoutMs%s", needs, what)
		}
	case FieldPlanMarkers:
		if cs.PlanMarkers == nil {
			v.add(v.at(cs), "%s planMarkers {draft, revised}%s", needs, what)
			return
		}
		v.required("case "+cs.ID+" planMarkers draft", &cs.PlanMarkers.Draft, cs.PlanMarkers)
		v.required("case "+cs.ID+" planMarkers revised", &cs.PlanMarkers.Revised, cs.PlanMarkers)
	case FieldQuestionAnswer:
		if cs.QuestionAnswer == nil {
			v.add(v.at(cs), "%s questionAnswer {optionLabel, expectedMarker}%s", needs, what)
			return
		}
		v.required("case "+cs.ID+" questionAnswer optionLabel", &cs.QuestionAnswer.OptionLabel, cs.QuestionAnswer)
		v.required("case "+cs.ID+" questionAnswer expectedMarker", &cs.QuestionAnswer.ExpectedMarker, cs.QuestionAnswer)
	default:
		v.add(v.at(&cs.Flow, cs), "%s %q, which is not a field a flow may need (one of %s)", needs, n.Field, oneOf(NeedableFields))
	}
}

// needString reports an empty string field a flow needs.
func (v *validator) needString(field *string, cs *Case, needs string) {
	if strings.TrimSpace(*field) == "" {
		v.add(v.at(field, cs), "%s", needs)
	}
}

// needList reports a list field of n entries that a flow needs with exactly need.Count
// entries (at least one when Count is 0).
func (v *validator) needList(field any, n int, cs *Case, need Need, needs, what string) {
	switch {
	case need.Count == 0 && n == 0:
		v.add(v.at(field, cs), "%s with at least one entry%s", needs, what)
	case need.Count > 0 && n != need.Count:
		entries := "entries"
		if need.Count == 1 {
			entries = "entry"
		}
		v.add(v.at(field, cs), "%s with exactly %d %s%s, got %d", needs, need.Count, entries, what, n)
	}
}

// caseTemplates renders a case's templates with sample values: its marker templates
// (which may use only the nonce), its workspace file (a relative path), then every
// other template with the case's variables, which it returns; ok is false when a
// marker template did not render (the variables cannot be made).
func (v *validator) caseTemplates(cs *Case) (vars map[string]string, ok bool) {
	name := "case " + cs.ID
	mv := markerVars(sampleNonce)
	markersOK := true
	for _, f := range markerFields(cs) {
		if _, err := renderString(*f.p, mv); err != nil {
			v.add(v.at(f.p, cs), "%s %s: %v (marker templates may use only {{nonce}})", name, f.what, err)
			markersOK = false
		}
	}
	if cs.WorkspaceFile != "" && markersOK {
		wf, _ := renderString(cs.WorkspaceFile, mv)
		if !localPath(wf) {
			v.add(v.at(&cs.WorkspaceFile, cs), "%s workspaceFile %q must be a relative path inside the workspace", name, cs.WorkspaceFile)
		}
	}
	if !markersOK {
		return nil, false
	}
	vars, err := caseVars(cs, sampleNonce, "native", "local")
	if err != nil {
		v.add(v.at(cs), "%s: %v", name, err)
		return nil, false
	}
	tmpl := func(what string, p *string) {
		if _, err := renderString(*p, vars); err != nil {
			v.add(v.at(p, cs), "%s %s: %v (variables here: %s)", name, what, err, strings.Join(slices.Sorted(maps.Keys(vars)), ", "))
		}
	}
	tmpl("title", &cs.Title)
	tmpl("prompt", &cs.Prompt)
	tmpl("revisionRequest", &cs.RevisionRequest)
	for i := range cs.Followups {
		tmpl(fmt.Sprintf("followups[%d]", i), &cs.Followups[i])
	}
	return vars, true
}

// markerField is a marker template of a case: its name and where it is.
type markerField struct {
	what string
	p    *string
}

// markerFields lists a case's marker templates: marker, workspaceFile, the plan
// markers, the question answer's marker and option, the turn markers.
func markerFields(cs *Case) []markerField {
	out := []markerField{{"marker", &cs.Marker}, {"workspaceFile", &cs.WorkspaceFile}}
	if cs.PlanMarkers != nil {
		out = append(out, markerField{"planMarkers.draft", &cs.PlanMarkers.Draft}, markerField{"planMarkers.revised", &cs.PlanMarkers.Revised})
	}
	if cs.QuestionAnswer != nil {
		out = append(out, markerField{"questionAnswer.expectedMarker", &cs.QuestionAnswer.ExpectedMarker}, markerField{"questionAnswer.optionLabel", &cs.QuestionAnswer.OptionLabel})
	}
	for i := range cs.TurnMarkers {
		out = append(out, markerField{fmt.Sprintf("turnMarkers[%d]", i), &cs.TurnMarkers[i]})
	}
	return out
}

// localPath reports whether p is a clean relative path that stays inside its root.
func localPath(p string) bool {
	if p == "" || strings.HasPrefix(p, "/") || strings.Contains(p, "\\") {
		return false
	}
	c := path.Clean(p)
	return c == p && c != "." && c != ".." && !strings.HasPrefix(c, "../")
}

// validateMatchers renders each matcher with sample values and compiles it with
// match.CompileAll, reporting every problem at the offending field.
func (v *validator) validateMatchers(cs *Case, vars map[string]string) {
	if len(cs.Matchers) == 0 {
		v.add(v.at(&cs.Matchers, cs), "case %s declares no matchers", cs.ID)
		return
	}
	rendered := make([]match.Spec, len(cs.Matchers))
	renderOK := true
	for i := range cs.Matchers {
		if t := cs.Matchers[i].Turn; t > cs.ExpectedRunCount && cs.ExpectedRunCount > 0 {
			v.add(v.at(&cs.Matchers[i].Turn, &cs.Matchers[i], cs), "case %s matchers[%d]: turn %d is past the case's %d expected runs", cs.ID, i, t, cs.ExpectedRunCount)
		}
		r, err := renderMatcher(cs.Matchers[i], vars)
		if err != nil {
			v.add(v.at(&cs.Matchers[i], cs), "case %s matchers[%d]: %v", cs.ID, i, err)
			renderOK = false
		}
		rendered[i] = r
	}
	if !renderOK {
		return
	}
	_, err := match.CompileAll(rendered)
	if err == nil {
		return
	}
	var all match.SpecErrors
	if !errors.As(err, &all) {
		v.add(v.at(&cs.Matchers, cs), "case %s matchers: %v", cs.ID, err)
		return
	}
	for _, se := range all {
		m := &cs.Matchers[se.Index]
		fields := map[string]any{
			"kind": &m.Kind, "expected": &m.Expected, "count": &m.Count, "pattern": &m.Pattern,
			"flags": &m.Flags, "path": &m.Path, "name": &m.Name, "mimeType": &m.MimeType,
			"schema": &m.Schema, "turn": &m.Turn, "normalize": &m.Normalize,
		}
		msg := se.Error()
		if se.Construct != "" && !strings.Contains(msg, se.Construct) {
			msg += " (" + se.Construct + " is a JavaScript-only construct; RE2 does not support it)"
		}
		pos := v.at(fields[se.Field], m, cs)
		if se.Pointer != "" {
			// the keyword at fault inside a free-form value (a schema's format or $ref)
			if n := yamlPointer(v.c.rawOf(fields[se.Field]), se.Pointer); n != nil {
				pos.Line, pos.Column = n.Line, n.Column
			}
		}
		v.add(pos, "case %s matchers[%d]: %s", cs.ID, se.Index, msg)
	}
}

// yamlPointer returns the node a JSON Pointer (RFC 6901) names inside n: for a mapping
// member, the node of its key (the line where the keyword is written); nil when n is nil
// or the pointer does not lead anywhere. Aliases are followed.
func yamlPointer(n *yaml.Node, pointer string) *yaml.Node {
	if n == nil || !strings.HasPrefix(pointer, "/") {
		return nil
	}
	at := n
	for _, tok := range strings.Split(pointer[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		for n.Kind == yaml.AliasNode && n.Alias != nil {
			n = n.Alias
		}
		switch n.Kind {
		case yaml.MappingNode:
			var next *yaml.Node
			for i := 0; i+1 < len(n.Content); i += 2 {
				if n.Content[i].Value == tok {
					at, next = n.Content[i], n.Content[i+1]
					break
				}
			}
			if next == nil {
				return nil
			}
			n = next
		case yaml.SequenceNode:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(n.Content) {
				return nil
			}
			at, n = n.Content[i], n.Content[i]
		default:
			return nil
		}
	}
	return at
}

// validateReference checks a case's reference script: one turn per run its flow
// carries out (when the flow's contract is known: FlowContract.ScriptTurns), each
// with valid steps.
func (v *validator) validateReference(cs *Case, vars map[string]string, fc FlowContract, known bool) {
	ref := cs.Reference
	if ref == nil {
		return
	}
	name := "case " + cs.ID + " reference"
	if want := fc.ScriptTurns(cs.ExpectedRunCount); known && len(ref.Turns) != want {
		v.add(v.at(&ref.Turns, ref, cs), "%s has %d turns; expectedRunCount is %d (one turn per run that does not retry a killed one: %d)", name, len(ref.Turns), cs.ExpectedRunCount, want)
	}
	for ti, t := range ref.Turns {
		if t == nil {
			v.add(v.at(&ref.Turns[ti], ref), "%s: empty turn", name)
			continue
		}
		tname := fmt.Sprintf("%s turns[%d]", name, ti)
		v.enum(tname+" trigger", &t.Trigger, TurnTriggers, t, true)
		if ti == 0 && t.Trigger != "" && t.Trigger != "assignment" {
			v.add(v.at(&t.Trigger, t), "%s: the first turn's trigger must be assignment", tname)
		}
		if len(t.Steps) == 0 {
			v.add(v.at(&t.Steps, t), "%s has no steps", tname)
		}
		if t.Task < 0 {
			v.add(v.at(&t.Task, t), "%s task %d must be 1 or more (the agent's k-th task), or absent for the first", tname, t.Task)
		} else if ti > 0 && ref.Turns[ti-1] != nil && max(t.Task, 1) < max(ref.Turns[ti-1].Task, 1) {
			v.add(v.at(&t.Task, t), "%s belongs to task %d after a turn of task %d; list the turns task by task", tname, max(t.Task, 1), ref.Turns[ti-1].Task)
		}
		presents := 0
		for si, st := range t.Steps {
			if st == nil {
				v.add(v.at(&t.Steps[si], t), "%s: empty step", tname)
				continue
			}
			sname := fmt.Sprintf("%s steps[%d]", tname, si)
			kinds := 0
			for _, set := range []bool{st.Command != "", st.Edit != nil, st.Wait != nil, st.Run != nil} {
				if set {
					kinds++
				}
			}
			switch {
			case kinds > 1:
				v.add(v.at(st), "%s has more than one of command, edit, wait and run; use one step for each", sname)
			case kinds == 0:
				v.add(v.at(st), "%s needs a command, an edit, a wait or a run", sname)
			case st.Command != "":
				v.validateCommand(st, sname, vars)
			case st.Edit != nil:
				v.validateEdit(st, sname, vars)
			case st.Run != nil:
				v.validateRun(st, sname, vars)
			default:
				v.validateWait(st, sname, vars)
			}
			if st.Present {
				presents++
				if c, _ := toolCommand(st.Command); !c.Commenting {
					v.add(v.at(&st.Present, st), "%s: present applies only to commands that post a comment (%s)", sname, strings.Join(commentingNames(), ", "))
				}
			}
		}
		if presents > 1 {
			v.add(v.at(t), "%s marks %d steps present; at most one comment is a run's user-facing message", tname, presents)
		}
	}
}

func (v *validator) validateCommand(st *ReferenceStep, sname string, vars map[string]string) {
	spec, ok := toolCommand(st.Command)
	if !ok {
		v.add(v.at(&st.Command, st), "%s: unknown command %q (one of %s)", sname, st.Command, strings.Join(toolCommandNames(), ", "))
		return
	}
	_, homeBytes := st.FromHome["contentBase64"]
	for _, req := range spec.Required {
		_, ok := st.Args[req]
		_, fromHome := st.FromHome[req]
		if !ok && !fromHome && !(homeBytes && (req == "sha256" || req == "byteSize")) {
			v.add(v.at(&st.Args, st), "%s: command %s needs args.%s", sname, st.Command, req)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(st.FromHome)) {
		if !slices.Contains(spec.Required, k) && !slices.Contains(spec.Optional, k) {
			v.add(v.at(&st.FromHome, st), "%s: command %s has no argument %q for fromHome (arguments: %s)", sname, st.Command, k, strings.Join(append(spec.Required, spec.Optional...), ", "))
		}
		p, err := renderString(st.FromHome[k], vars)
		switch {
		case err != nil:
			v.add(v.at(&st.FromHome, st), "%s fromHome.%s: %v", sname, k, err)
		case !localPath(p):
			v.add(v.at(&st.FromHome, st), "%s fromHome.%s %q must be a relative path inside the agent's home", sname, k, st.FromHome[k])
		}
	}
	for _, k := range slices.Sorted(maps.Keys(st.Args)) {
		if k != "taskId" && !slices.Contains(spec.Required, k) && !slices.Contains(spec.Optional, k) {
			v.add(v.at(mapEntry{mapPointer(st.Args), k}, &st.Args, st), "%s: command %s has no argument %q (arguments: %s)", sname, st.Command, k, strings.Join(append(spec.Required, spec.Optional...), ", "))
		}
	}
	if _, err := renderValue(st.Args, vars); err != nil {
		v.add(v.at(&st.Args, st), "%s args.%v", sname, err)
	}
	v.scanPayload(&st.Args, sname+" args")
}

func (v *validator) validateEdit(st *ReferenceStep, sname string, vars map[string]string) {
	e := st.Edit
	n := 0
	for _, set := range []bool{e.Write != nil, e.WriteHex != nil, e.Append != nil, e.Delete} {
		if set {
			n++
		}
	}
	if n != 1 {
		v.add(v.at(e, st), "%s edit needs exactly one of write, writeHex, append or delete", sname)
	}
	if e.Root != "" && e.Root != EditRootWorkspace && e.Root != EditRootAgentHome {
		v.add(v.at(&e.Root, e), "%s edit root %q must be %s (the default) or %s", sname, e.Root, EditRootWorkspace, EditRootAgentHome)
	}
	p, err := renderString(e.Path, vars)
	switch {
	case err != nil:
		v.add(v.at(&e.Path, e), "%s edit path: %v", sname, err)
	case !localPath(p):
		v.add(v.at(&e.Path, e), "%s edit path %q must be a relative path inside the workspace", sname, e.Path)
	}
	for what, s := range map[string]*string{"write": e.Write, "writeHex": e.WriteHex, "append": e.Append} {
		if s == nil {
			continue
		}
		r, err := renderString(*s, vars)
		if err != nil {
			v.add(v.at(s, e), "%s edit %s: %v", sname, what, err)
		} else if what == "writeHex" {
			// the nonce may be any NoncePattern text: only a literal part that is
			// not hexadecimal is an error here (the rendered bytes are checked when
			// the agent writes them)
			if !strings.Contains(*s, "{{") {
				if _, herr := hex.DecodeString(r); herr != nil {
					v.add(v.at(s, e), "%s edit writeHex is not hexadecimal: %v", sname, herr)
				}
			}
		}
	}
}

func (v *validator) validateWait(st *ReferenceStep, sname string, vars map[string]string) {
	w := st.Wait
	for what, p := range map[string]*string{"ready": &w.Ready, "release": &w.Release} {
		r, err := renderString(*p, vars)
		switch {
		case err != nil:
			v.add(v.at(p, w), "%s wait %s: %v", sname, what, err)
		case !localPath(r):
			v.add(v.at(p, w), "%s wait %s %q must be a relative path inside the workspace", sname, what, *p)
		}
	}
	if w.TimeoutMs < 1 || w.TimeoutMs > 600000 {
		v.add(v.at(&w.TimeoutMs, w), "%s wait timeoutMs %d must be 1…600000 ms", sname, w.TimeoutMs)
	}
}

// validateRun checks a run step: a command of at least one element, each a template
// that renders, and a deadline of 1…600000 ms.
func (v *validator) validateRun(st *ReferenceStep, sname string, vars map[string]string) {
	r := st.Run
	if len(r.Command) == 0 || r.Command[0] == "" {
		v.add(v.at(r, st), "%s run needs a command: the program and its arguments", sname)
	}
	for i := range r.Command {
		if _, err := renderString(r.Command[i], vars); err != nil {
			v.add(v.at(&r.Command[i], r), "%s run command[%d]: %v", sname, i, err)
		}
	}
	if r.TimeoutMs < 1 || r.TimeoutMs > 600000 {
		v.add(v.at(&r.TimeoutMs, r), "%s run timeoutMs %d must be 1…600000 ms", sname, r.TimeoutMs)
	}
}

// validateSuiteFields checks what a suite declares on its own.
func (v *validator) validateSuiteFields(s *Suite) {
	v.required("suite "+s.ID+" label", &s.Label, s)
	v.required("suite "+s.ID+" description", &s.Description, s)
	v.groupRefs("suite "+s.ID, s.Groups, s)
	if s.ExpectedMatrixSize < 0 {
		v.add(v.at(&s.ExpectedMatrixSize, s), "suite %s expectedMatrixSize must not be negative", s.ID)
	}
	for _, p := range slices.Sorted(maps.Keys(s.ExpectedVerdicts)) {
		if want := s.ExpectedVerdicts[p]; !want.Valid() {
			v.add(v.at(mapEntry{mapPointer(s.ExpectedVerdicts), p}, &s.ExpectedVerdicts, s), "suite %s expectedVerdicts.%s %q is not one of %s", s.ID, p, want, oneOf(verdict.Verdicts))
		}
	}
	if s.DefinitionMetadata != nil {
		v.scanPayload(s.DefinitionMetadata, "suite "+s.ID+" definitionMetadata")
	}
}

// validateSuite resolves a suite's references, builds its matrix and fingerprint.
func (v *validator) validateSuite(s *Suite, declarationsOK bool) {
	name := "suite " + s.ID
	before := len(v.ps.list)
	resolve := func(kind string, refs []string, owner any, known func() []string, look func(string) bool) {
		if len(refs) == 0 {
			v.add(v.at(owner), "%s lists no %ss", name, kind)
		}
		seen := map[string]bool{}
		for i := range refs {
			if seen[refs[i]] {
				v.add(v.at(&refs[i], owner), "%s lists %s %q twice", name, kind, refs[i])
				continue
			}
			seen[refs[i]] = true
			if !look(refs[i]) {
				v.add(v.at(&refs[i], owner), "%s names unknown %s %q%s", name, kind, refs[i], didYouMean([]string{refs[i]}, known()))
			}
		}
	}
	s.profiles, s.envs, s.cases = nil, nil, nil
	resolve("profile", s.Profiles, s, func() []string { return slices.Sorted(maps.Keys(v.profiles)) }, func(id string) bool {
		p := v.profiles[id]
		if p != nil {
			s.profiles = append(s.profiles, p)
		}
		return p != nil
	})
	resolve("environment", s.Environments, s, func() []string { return slices.Sorted(maps.Keys(v.envByRef)) }, func(ref string) bool {
		e := v.envByRef[ref]
		if e != nil {
			s.envs = append(s.envs, e)
		}
		return e != nil
	})
	resolve("case", s.Cases, s, func() []string { return slices.Sorted(maps.Keys(v.cases)) }, func(id string) bool {
		cs := v.cases[id]
		if cs != nil {
			s.cases = append(s.cases, cs)
		}
		return cs != nil
	})
	envIDs := map[string]string{}
	for i, e := range s.envs {
		if prev, ok := envIDs[e.ID]; ok {
			v.add(v.at(&s.Environments[i], s), "%s lists environments %q and %q, which share id %s and would give cells the same ids", name, prev, envRef(e), e.ID)
		}
		envIDs[e.ID] = envRef(e)
	}
	for _, p := range slices.Sorted(maps.Keys(s.ExpectedVerdicts)) {
		if !slices.Contains(s.Profiles, p) {
			v.add(v.at(mapEntry{mapPointer(s.ExpectedVerdicts), p}, &s.ExpectedVerdicts, s), "%s expectedVerdicts names %q, which is not one of its profiles", name, p)
		}
	}
	if s.ExpectedVerdicts != nil {
		for i, p := range s.Profiles {
			if _, ok := s.ExpectedVerdicts[p]; !ok {
				v.add(v.at(&s.Profiles[i], s), "%s is a calibration suite (it has expectedVerdicts) but declares no expected verdict for profile %q", name, p)
			}
		}
	}
	if !declarationsOK || len(v.ps.list) > before {
		return
	}
	v.validateMatrix(s, name)
}

// validateMatrix builds the matrix of a suite whose references resolved, checks its
// exclusions, its size and every cell (a deadline, the reference script its driver
// needs, fixture drivers on the fixture programs' flows only, a unique id), and records its
// cells and fingerprint.
func (v *validator) validateMatrix(s *Suite, name string) {
	all, cells := buildMatrix(s, s.ExpectedVerdicts, v.credentials)
	inMatrix := make(map[string]bool, len(all))
	for _, id := range all {
		inMatrix[id] = true
	}
	seenEx := map[string]bool{}
	for i, id := range s.ExcludedExecutionIDs {
		switch {
		case seenEx[id]:
			v.add(v.at(&s.ExcludedExecutionIDs[i], s), "%s excludes %q twice", name, id)
		case !inMatrix[id]:
			v.add(v.at(&s.ExcludedExecutionIDs[i], s), "%s excludes %q, which is not in its matrix", name, id)
		}
		seenEx[id] = true
	}
	if len(cells) != s.ExpectedMatrixSize {
		v.add(v.at(&s.ExpectedMatrixSize, s), "%s: expected %d cells (expectedMatrixSize); the matrix has %d", name, s.ExpectedMatrixSize, len(cells))
	}
	for _, cell := range cells {
		if cell.AttemptTimeoutMs <= 0 {
			v.add(v.at(&cell.Case.AttemptTimeoutMs, cell.Case), "case %s has no attemptTimeoutMs for environment %s and the environment has no attemptDeadlineMs (cell %s)", cell.Case.ID, cell.Environment.ID, cell.ID)
		}
		v.verifyEnvironment(cell)
		d := cell.Profile.Driver // the zero Name when refused above
		if d.NeedsReference() {
			if cell.Case.Reference == nil {
				v.add(v.at(cell.Case), "case %s has no reference script, which profile %s (driver %s) needs (cell %s)", cell.Case.ID, cell.Profile.ID, cell.Profile.Driver, cell.ID)
			}
		}
		if fc, known := v.flows[cell.Case.Flow]; known && !d.IsZero() {
			if _, fixture := d.Fixture(); fixture != fc.FixtureProgram {
				v.add(v.at(&s.Cases, s), "cell %s pairs driver %s with flow %s; fixture drivers run exactly the flows of the fixture programs (%s)", cell.ID, cell.Profile.Driver, cell.Case.Flow, strings.Join(v.fixtureFlows(), ", "))
			}
		}
		if prev := v.c.byCellID[cell.ID]; prev != nil {
			v.add(v.at(s), "duplicate cell id %s", cell.ID)
			continue
		}
		v.c.byCellID[cell.ID] = cell
	}
	fp, err := fingerprint(s)
	if err != nil {
		v.add(v.at(s), "%s: computing its fingerprint: %v", name, err)
		return
	}
	s.Fingerprint = fp
	v.c.Cells = append(v.c.Cells, cells...)
}

// mapPointer is the identity of a map value, as the decoder recorded it.
func mapPointer[V any](m map[string]V) uintptr {
	if m == nil {
		return 0
	}
	return reflectValue(&m).Pointer()
}

// Credential kinds (Credential.Kind; "" is CredentialKindEnv).
const (
	CredentialKindEnv       = "env"
	CredentialKindLoginFile = "login_file"
)

// validateCredentialKind checks a credential's kind and, for a login file, its path
// below HOME (relative, at most four components, none empty, "." or "..").
func (v *validator) validateCredentialKind(cr *Credential) {
	v.enum("credential kind", &cr.Kind, CredentialKinds, cr, false)
	if cr.Kind != CredentialKindLoginFile {
		if cr.LoginFile != "" {
			v.add(v.at(&cr.LoginFile, cr), "credential %s has loginFile but kind %q; loginFile needs kind %s", cr.ID, cr.Kind, CredentialKindLoginFile)
		}
		return
	}
	if cr.Scope == "environment" {
		v.add(v.at(&cr.Scope, cr), "credential %s is a login file; a login file has scope profile", cr.ID)
	}
	p := cr.LoginFile
	bad := p == "" || strings.HasPrefix(p, "/") || strings.ContainsRune(p, 0) || strings.Count(p, "/") > 3
	for _, c := range strings.Split(p, "/") {
		bad = bad || c == "" || c == "." || c == ".."
	}
	if bad {
		v.add(v.at(&cr.LoginFile, cr), "credential %s loginFile %q must be a relative path below HOME (at most 4 components, none empty, \".\" or \"..\"), e.g. .grok/auth.json", cr.ID, p)
	}
}

// validateLoginFileProfile checks a profile whose credential is a login file: the
// fixtures stage seeds it into the company-scoped HOME the agent launches with, which
// only an exec agent (one process per run, HOME set by the runner) takes; a
// session or CLI driver keeps a HOME of its own per run or session, a built-in or
// fixture agent reads no login file. The environments it supports must be local (a
// sandbox lease binds nothing of the instance home). docs/secrets.md "Login files".
func (v *validator) validateLoginFileProfile(p *Profile) {
	if d := p.Driver; !d.IsZero() && d.Kind != driver.KindExec {
		v.add(v.at(&p.Credential, p), "profile %s credential %q is a login file, which is seeded into the HOME of an exec agent only; driver %s launches with a HOME of its own (docs/secrets.md \"Login files\")", p.ID, p.Credential, p.Driver)
	}
	for i, id := range p.SupportedEnvironments {
		for _, e := range v.envs[id] {
			if e.Driver != "local" {
				v.add(v.at(&p.SupportedEnvironments[i], p), "profile %s credential %q is a login file, seeded into the instance home, which a %s environment (%s) does not bind; a login file needs a local environment", p.ID, p.Credential, e.Driver, id)
				break
			}
		}
	}
}

// PinEnvironmentConfig sets env's config key to value — a value the harness resolved
// before the campaign (a container image built on this machine, pinned by digest) —
// and recomputes the definition hash of every suite that runs in env, so that the
// pinned value is part of the suite definition. env must be one of c's environments.
// Errors: env is not c's, or a fingerprint cannot be computed.
func (c *Catalog) PinEnvironmentConfig(env *Environment, key string, value any) error {
	if !slices.Contains(c.Environments, env) {
		return fmt.Errorf("environment %s is not this catalog's", env.ID)
	}
	if env.Config == nil {
		env.Config = map[string]any{}
	}
	env.Config[key] = value
	for _, s := range c.Suites {
		if !slices.Contains(s.envs, env) {
			continue
		}
		fp, err := fingerprint(s)
		if err != nil {
			return fmt.Errorf("suite %s: %w", s.ID, err)
		}
		s.Fingerprint = fp
	}
	return nil
}

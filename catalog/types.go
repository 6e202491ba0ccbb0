package catalog

import (
	"go.yaml.in/yaml/v3"

	"github.com/agentproof/agentproof/agent/driver"
	"github.com/agentproof/agentproof/agent/script"
	"github.com/agentproof/agentproof/canonjson"
	"github.com/agentproof/agentproof/match"
	"github.com/agentproof/agentproof/verdict"
)

// Catalog is a loaded, validated catalog: every declaration of every file in file-name
// order and, within a file, document and declaration order, plus the matrix built from
// it. A Catalog is immutable once Load returns it and is
// safe for concurrent readers.
type Catalog struct {
	Groups       []*Group
	Credentials  []*Credential
	Profiles     []*Profile
	Environments []*Environment
	Cases        []*Case
	Suites       []*Suite
	Rankings     []*Ranking
	// KnownFailures is the baseline of known failures (the knownFailures entries of
	// every file, in file order), each bound to its cell.
	KnownFailures []*KnownFailure

	// Cells is the matrix of every suite (profiles × environments × cases) in suite
	// declaration order, manual-only suites included.
	Cells []*Cell

	// origins maps a file's display name to where it was read from (validation
	// resolves workspace sources relative to it).
	origins   map[string]origin
	pos       []map[any]Pos        // per file: value address → position
	raw       []map[any]*yaml.Node // per file: free-form value address → its node
	byCellID  map[string]*Cell
	suiteByID map[string]*Suite
	idx       *matrixIndex
}

// Pos is a position in a catalog file: File is the slash-separated path as given to
// Load, Line and Column are 1-based (0 when unknown).
type Pos struct {
	File   string
	Line   int
	Column int
}

// Group is a selectable group label (every group a declaration names must be
// declared). ID follows the id grammar (see IDPattern).
type Group struct {
	ID          string `yaml:"id"`
	Description string `yaml:"description"`
}

// Credential names a secret a cell needs, for example OPENAI_API_KEY. Scope
// "profile" credentials may be a profile's credential, scope "environment" ones (for
// example DAYTONA_API_KEY) only an environment's. Catalog files never hold the value:
// they refer to a credential by name, and a SecretRef's secretId may be that name.
//
// Kind is "env" (the default: a value the runner binds to an environment variable) or
// "login_file" (a CLI's login file, for example a subscription's auth.json: stored as a
// login_file secret and seeded into a company-scoped HOME at LoginFile, the file's path
// below HOME; package loginfile, docs/secrets.md "Login files"). A login file never
// enters agent configuration.
type Credential struct {
	ID          string `yaml:"id"`
	Description string `yaml:"description"`
	Scope       string `yaml:"scope"`
	Kind        string `yaml:"kind"`
	LoginFile   string `yaml:"loginFile"`
}

// Profile is an agent profile: which agent driver
// runs, with which model and credential, where it may run, and what runtime metadata a
// run must report.
type Profile struct {
	ID         string   `yaml:"id"`
	Label      string   `yaml:"label"`
	Generation string   `yaml:"generation"` // legacy | native; also the expected runtime mode
	Groups     []string `yaml:"groups"`
	// DriverText is the driver as the catalog spells it: "fixture:pass|fail|hang|noisy",
	// "reference", "nop", "wrong", "leaky" (the reference agent that also leaks its
	// credentials), "exec" (a command and args of your own, in driverConfig),
	// "exec:<cli>" (a pinned real agent CLI; package agent), "acp:<agent>" (an Agent
	// Client Protocol agent driven as a session; docs/acp.md), "rpc:pi", "app:codex"
	// (Codex through its app-server; docs/clis.md) or
	// "hostile:<attack>" (package driver lists them all). Validation parses it once
	// into Driver and refuses a name that is not a driver; nothing else reads it.
	DriverText string `yaml:"driver"`
	// Driver is DriverText parsed (set by validation; the zero Name before it). Every
	// reader of a loaded catalog classifies the profile's agent by it.
	Driver driver.Name `yaml:"-"`
	// DriverConfig is the driver's configuration, free-form but scanned for raw secrets;
	// values of any "env" map in it must be secret references.
	DriverConfig            map[string]any      `yaml:"driverConfig"`
	AdapterType             string              `yaml:"adapterType"`
	Provider                string              `yaml:"provider"`
	Model                   string              `yaml:"model"`
	ModelQualification      Qualification       `yaml:"modelQualification"`
	Ranking                 *ProfileRanking     `yaml:"ranking"`
	Credential              string              `yaml:"credential"` // a declared profile-scope credential, or "" for none
	SupportedEnvironments   []string            `yaml:"supportedEnvironments"`
	ExpectedRuntimeMetadata ExpectedRuntimeMeta `yaml:"expectedRuntimeMetadata"`
	// QualificationCandidate profiles are never retried automatically (a retry could
	// hide the candidate's own flakiness).
	QualificationCandidate bool `yaml:"qualificationCandidate"`
	// RunnerLifecycleMode is how the heartbeat runner keeps the agent's process
	// (api.LifecycleMode): per_turn (the default: one
	// process per run) or warm (one process and one session serve every run of the
	// cell; session drivers only, acp:<agent>; docs/acp.md "Warm lifecycle").
	RunnerLifecycleMode string `yaml:"runnerLifecycleMode"`
	// CapabilityGrants are the run capabilities (claims of the semantic-command table,
	// for example governance:approvals:request) the fixture registry grants the agent it
	// creates for this profile, besides its case's (Cell.CapabilityGrants). Each must be
	// a claim of an agent-facing command (GrantableClaims); docs/journeys.md
	// "Capability grants".
	CapabilityGrants []string `yaml:"capabilityGrants"`
}

// Runner lifecycle modes (Profile.RunnerLifecycleMode; the values of
// api.LifecycleMode).
const (
	LifecycleModePerTurn = "per_turn"
	LifecycleModeWarm    = "warm"
)

// Qualification records why a profile's model is the one to test:
// Source is adapter_constant, qualified_runner_profile, openrouter_rankings_snapshot or
// builtin (agentproof's own agents); QualificationID follows the source's convention.
type Qualification struct {
	Source          string `yaml:"source"`
	QualificationID string `yaml:"qualificationId"`
}

// ProfileRanking ties a profile to a ranking snapshot entry (docs/breadth.md).
type ProfileRanking struct {
	Rank             int    `yaml:"rank"`
	CanonicalModelID string `yaml:"canonicalModelId"`
	SnapshotID       string `yaml:"snapshotId"`
	CapturedAt       string `yaml:"capturedAt"`
	SourceURL        string `yaml:"sourceUrl"`
}

// ExpectedRuntimeMeta is what a run of the profile must report (graded by the
// runtime_metadata check against what the runner observed launching).
type ExpectedRuntimeMeta struct {
	AdapterType string `yaml:"adapterType"`
	Provider    string `yaml:"provider"`
}

// Environment is where an agent executes (docs/environments.md). Two
// environments may share an ID when their ConfigurationKey differs (the warm Daytona
// variant); suites then name the variant as "<id>@<configurationKey>".
type Environment struct {
	ID               string    `yaml:"id"`
	ConfigurationKey string    `yaml:"configurationKey"` // "" means "default" in the fingerprint
	Label            string    `yaml:"label"`
	Groups           []string  `yaml:"groups"`
	Driver           string    `yaml:"driver"`   // local | sandbox | container
	Provider         string    `yaml:"provider"` // local | daytona | sandbox | container
	Credential       string    `yaml:"credential"`
	Lifecycle        Lifecycle `yaml:"lifecycle"`
	// AttemptDeadlineMs is the attempt timeout (ms) of a case that declares none for
	// this environment.
	AttemptDeadlineMs int64 `yaml:"attemptDeadlineMs"`
	// Resources is the billable resource shape and the limits the environment declares
	// (CPU, memory and disk always together, never a provider's default). A sandbox
	// environment without it declares no limit (its agents get the machine's own); one
	// with it runs only where every limit is enforced (docs/environments.md).
	Resources               *Resources      `yaml:"resources"`
	ExpectedExecutionTarget ExecutionTarget `yaml:"expectedExecutionTarget"`
	// Config is the environment payload's driver configuration, scanned for raw secrets.
	Config map[string]any `yaml:"config"`
	// Workspace is where each attempt's workspace is seeded from when the case
	// declares none (nil: it starts empty).
	Workspace *Workspace `yaml:"workspace"`
}

// Lifecycle is an environment's setup/probe/cleanup contract.
type Lifecycle struct {
	Setup   string `yaml:"setup"`   // instance_managed | create_via_api
	Probe   string `yaml:"probe"`   // run_context_via_api
	Cleanup string `yaml:"cleanup"` // instance_shutdown | delete_via_api_and_destroy_leases
}

// Resources is a pinned billable resource shape: CPU cores, memory and disk in GiB, and
// PIDs, the most processes and threads the environment's agent may run at once
// (enforced by the sandbox provider's pids cgroup; required there, optional elsewhere).
type Resources struct {
	CPU       int `yaml:"cpu"`
	MemoryGiB int `yaml:"memoryGiB"`
	DiskGiB   int `yaml:"diskGiB"`
	PIDs      int `yaml:"pids"`
}

// ExecutionTarget is where a run must report it executed.
type ExecutionTarget struct {
	Kind      string `yaml:"kind"` // local | remote
	Transport string `yaml:"transport"`
}

// Case is a task case (docs/matchers.md for its matchers). Its string
// fields marked "template" may contain placeholders {{name}} (see Template) rendered
// per attempt with a fresh nonce.
type Case struct {
	ID                        string           `yaml:"id"`
	Label                     string           `yaml:"label"`
	Groups                    []string         `yaml:"groups"`
	WorkMode                  string           `yaml:"workMode"` // standard | planning | ask
	Flow                      Flow             `yaml:"flow"`
	ExpectedRunCount          int              `yaml:"expectedRunCount"`
	MinimumExpectedRunCount   *int             `yaml:"minimumExpectedRunCount"`
	AttemptTimeoutMs          map[string]int64 `yaml:"attemptTimeoutMs"` // environment id → ms
	TurnTimeoutMs             int64            `yaml:"turnTimeoutMs"`
	ExpectedTerminalState     TerminalState    `yaml:"expectedTerminalState"`
	Title                     string           `yaml:"title"`           // template
	Prompt                    string           `yaml:"prompt"`          // template
	Marker                    string           `yaml:"marker"`          // template over {{nonce}}: the visible final marker
	Followups                 []string         `yaml:"followups"`       // templates; warm_three_turn needs exactly two
	RevisionRequest           string           `yaml:"revisionRequest"` // template; plan_revision_acceptance
	QuestionAnswer            *QuestionAnswer  `yaml:"questionAnswer"`  // question_resume_completion
	PlanMarkers               *PlanMarkers     `yaml:"planMarkers"`     // plan flows
	TurnMarkers               []string         `yaml:"turnMarkers"`     // templates over {{nonce}}; warm_three_turn
	WorkspaceFile             string           `yaml:"workspaceFile"`   // template over {{nonce}}: workspace-relative path
	RestartServerBeforeAnswer bool             `yaml:"restartServerBeforeQuestionAnswer"`
	// ServerProcess asks for the attempt's control-plane instance as an `agentproof
	// serve` child process in every `run --instance` mode (docs/ARCHITECTURE.md
	// "Control-plane instances"); false lets run choose.
	ServerProcess        bool             `yaml:"serverProcess"`
	ToolReviewDecision   string           `yaml:"toolReviewDecision"` // approve | decline | always | restart
	AutomaticRetryPolicy string           `yaml:"automaticRetryPolicy"`
	Matchers             []match.Spec     `yaml:"matchers"` // string fields are templates
	Reference            *ReferenceScript `yaml:"reference"`
	// CapabilityGrants are the run capabilities the case's agent needs (claims of the
	// semantic-command table; GrantableClaims), granted by the fixture registry when it
	// creates the agent, with the profile's (Cell.CapabilityGrants). Nothing is granted
	// implicitly: a command whose claim no grant gives is refused
	// (operation_not_authorized) and the run fails.
	CapabilityGrants []string `yaml:"capabilityGrants"`
	// Untitled cases create their task with an empty title (the prompt alone says what
	// to do and the agent names the task); Title must then be empty.
	Untitled bool `yaml:"untitled"`
	// Workspace is where each attempt's workspace is seeded from (nil: it starts
	// empty, or from the environment's).
	Workspace *Workspace `yaml:"workspace"`
	// Verify is the case's verifier: commands run after the agent's last turn (nil:
	// none).
	Verify *Verify `yaml:"verify"`
}

// TerminalState is the issue and run state a case must end in.
type TerminalState struct {
	Issue string `yaml:"issue"` // done | in_review | blocked | in_progress
	Run   string `yaml:"run"`   // succeeded | failed | cancelled
}

// QuestionAnswer is the deterministic human answer of a question flow: the option the
// harness picks and the marker the agent must then emit (templates).
type QuestionAnswer struct {
	OptionLabel    string `yaml:"optionLabel"`
	ExpectedMarker string `yaml:"expectedMarker"`
}

// PlanMarkers are the draft and revised plan markers (templates over {{nonce}}).
type PlanMarkers struct {
	Draft   string `yaml:"draft"`
	Revised string `yaml:"revised"`
}

// A case's reference script (package agent/script), by the catalog's names.
type (
	// ReferenceScript is what the built-in agents do for a case (script.Script).
	ReferenceScript = script.Script
	// ReferenceTurn is one run of a reference script (script.Turn).
	ReferenceTurn = script.Turn
	// ReferenceStep is one step of a turn (script.Step).
	ReferenceStep = script.Step
	// WorkspaceWait is a step's bounded file wait (script.Wait).
	WorkspaceWait = script.Wait
	// WorkspaceRun is a step's program run in the workspace (script.Run).
	WorkspaceRun = script.Run
	// WorkspaceEdit is a step's change of one file (script.Edit).
	WorkspaceEdit = script.Edit
)

// Edit roots (WorkspaceEdit.Root).
const (
	// EditRootWorkspace: the run's workspace (the default).
	EditRootWorkspace = script.RootWorkspace
	// EditRootAgentHome: the agent's registered home (AGENT_HOME).
	EditRootAgentHome = script.RootAgentHome
)

// Suite is one durable testing purpose: its profiles × environments × cases are its
// matrix of cells.
type Suite struct {
	ID                   string   `yaml:"id"`
	Label                string   `yaml:"label"`
	Description          string   `yaml:"description"`
	Groups               []string `yaml:"groups"`
	Profiles             []string `yaml:"profiles"`
	Environments         []string `yaml:"environments"` // "<id>" or "<id>@<configurationKey>"
	Cases                []string `yaml:"cases"`
	ExcludedExecutionIDs []string `yaml:"excludedExecutionIds"`
	ExpectedMatrixSize   int      `yaml:"expectedMatrixSize"`
	// DefinitionMetadata is free-form, fingerprinted in declaration order
	// (FingerprintJSON).
	DefinitionMetadata *Metadata `yaml:"definitionMetadata"`
	// ManualOnly suites are selected only when named with --suite or --id.
	ManualOnly bool `yaml:"manualOnly"`
	// ExpectedVerdicts makes a calibration suite: profile id → the verdict its cells
	// must produce (passed, failed or inconclusive). Such a cell counts as passed exactly
	// when the observed verdict equals the expected one.
	ExpectedVerdicts map[string]verdict.Verdict `yaml:"expectedVerdicts"`

	// Fingerprint is the suite definition hash (SHA-256 of FingerprintJSON), 64
	// lower-case hex digits.
	Fingerprint string `yaml:"-"`

	profiles []*Profile // resolved Profiles, in suite order
	envs     []*Environment
	cases    []*Case
}

// ResolvedProfiles returns the suite's profiles in suite order.
func (s *Suite) ResolvedProfiles() []*Profile { return s.profiles }

// ResolvedEnvironments returns the suite's environments in suite order.
func (s *Suite) ResolvedEnvironments() []*Environment { return s.envs }

// ResolvedCases returns the suite's cases in suite order.
func (s *Suite) ResolvedCases() []*Case { return s.cases }

// KnownFailure is an entry of the baseline of known failures (a catalog's
// `knownFailures`, by convention in a file known-failures.yaml): a cell expected to
// fail, with the observed behaviour as the reason, what it is expected to end as
// (failed or inconclusive) and since when (the runner's version it was first observed
// with, for example "codex-acp 0.16.0"). The cell still runs and is graded; the result
// model reports it as a known failure when it ends as expected and as an unexpected
// pass — which fails the campaign, so the baseline cannot rot — when it passes
// (docs/regressions.md "Known failures").
type KnownFailure struct {
	Cell     string          `yaml:"cell"`
	Reason   string          `yaml:"reason"`
	Expected verdict.Verdict `yaml:"expected"`
	Since    string          `yaml:"since"`
	// Source is where the entry is declared ("file:line").
	Source string `yaml:"-"`
}

// Metadata is a YAML mapping kept in declaration order, so that it encodes like the
// JavaScript object literal it replaces (canonjson.Object for mappings, []any for
// sequences, string, float64, bool or nil for scalars).
type Metadata struct {
	Value canonjson.Object
}

// Ranking is a reviewed model-ranking snapshot (docs/breadth.md). ContentHash must be the
// SHA-256 of the JSON.stringify form of Models with keys rank, id, name,
// supportedParameters.
type Ranking struct {
	Schema            string          `yaml:"schema"`
	SnapshotID        string          `yaml:"snapshotId"`
	Ranking           string          `yaml:"ranking"`
	RequiredParameter string          `yaml:"requiredParameter"`
	SourceURL         string          `yaml:"sourceUrl"`
	CapturedAt        string          `yaml:"capturedAt"`
	ContentHash       string          `yaml:"contentHash"`
	Models            []*RankingModel `yaml:"models"`
}

// RankingModel is one ranked model of a snapshot.
type RankingModel struct {
	Rank                int      `yaml:"rank"`
	ID                  string   `yaml:"id"`
	Name                string   `yaml:"name"`
	SupportedParameters []string `yaml:"supportedParameters"`
}

// posOf returns the recorded position of the value p points to.
func (c *Catalog) posOf(p any) (Pos, bool) {
	for _, m := range c.pos {
		if pos, ok := m[p]; ok {
			return pos, true
		}
	}
	return Pos{}, false
}

// rawOf returns the YAML node a free-form value was decoded from.
func (c *Catalog) rawOf(p any) *yaml.Node {
	for _, m := range c.raw {
		if n, ok := m[p]; ok {
			return n
		}
	}
	return nil
}

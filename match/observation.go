package match

import "encoding/json"

// Observation is the evidence one attempt's matchers are evaluated against
// (docs/matchers.md). Each group of fields records whether it was observed, so a
// matcher whose evidence is missing reports NotReached instead of passing or failing:
//
//   - Message is the user-facing reply (the run's presentation comment, else all its
//     comments joined with "\n"); HasMessage says it was read (an observed empty reply
//     is HasMessage with Message ""). Turns are the per-turn messages of a multi-turn
//     flow, turn 1 first; a matcher with turn n reads Turns[n-1].
//   - IssueStatus, RunStatus, RuntimeMode ("legacy" | "native") and Environment (the
//     environment id): "" means not observed. RuntimeMode and Environment are what the
//     heartbeat runner recorded launching the runs, never the catalog's declaration.
//   - RuntimeFacts are, per run in order, the runtime keys (RuntimeKeys) the runner
//     recorded launching it; HasRuntimeFacts says they were collected.
//   - Files maps workspace-relative, slash-separated, clean paths to their content, read
//     from the attempt's workspace snapshot only; HasWorkspaceSnapshot says a snapshot
//     exists (a path absent from Files is then a missing file).
//   - HomeFiles maps the agent's managed home (AGENT_HOME) paths to their bytes as
//     downloaded through the control plane's public file API (each download checked
//     against its SHA-256); HasHomeFiles says the home was downloaded.
//   - Artifacts are the attempt's artifacts; HasArtifacts says they were collected. An
//     artifact whose bytes were downloaded (through the public artifact download) has
//     Downloaded set and the bytes in Content.
//   - JSON is a composite JSON document such as {issue, runs, interactions, documents,
//     comments}; nil means none was observed.
//   - Processes are, per run in order, the agent process that carried out the run
//     (its pid and start time, read by the heartbeat runner from /proc when the run's
//     turn started); HasProcesses says they were collected (a run whose identity was
//     not recorded has a zero ProcessIdentity).
//   - Watches are, per run in order, what the workspace watcher observed while the
//     run's agent could act; HasWatches says they were collected.
//   - Secrets are values that must never appear in an Outcome's Detail, Expected or
//     Observed (replaced by "[REDACTED]"); empty strings are ignored.
//
// Evaluation only reads an Observation.
type Observation struct {
	Message              string              `json:"message,omitempty"`
	HasMessage           bool                `json:"hasMessage"`
	Turns                []string            `json:"turns,omitempty"`
	IssueStatus          string              `json:"issueStatus,omitempty"`
	RunStatus            string              `json:"runStatus,omitempty"`
	RuntimeMode          string              `json:"runtimeMode,omitempty"`
	Environment          string              `json:"environment,omitempty"`
	RuntimeFacts         []map[string]string `json:"runtimeFacts,omitempty"`
	HasRuntimeFacts      bool                `json:"hasRuntimeFacts"`
	Files                map[string][]byte   `json:"files,omitempty"`
	HasWorkspaceSnapshot bool                `json:"hasWorkspaceSnapshot"`
	HomeFiles            map[string][]byte   `json:"homeFiles,omitempty"`
	HasHomeFiles         bool                `json:"hasHomeFiles"`
	Artifacts            []Artifact          `json:"artifacts,omitempty"`
	HasArtifacts         bool                `json:"hasArtifacts"`
	JSON                 json.RawMessage     `json:"json,omitempty"`
	Processes            []ProcessIdentity   `json:"processes,omitempty"`
	HasProcesses         bool                `json:"hasProcesses"`
	Watches              []RunWatch          `json:"watches,omitempty"`
	HasWatches           bool                `json:"hasWatches"`
	Verifiers            []VerifierRun       `json:"verifiers,omitempty"`
	HasVerifiers         bool                `json:"hasVerifiers"`
	Secrets              []string            `json:"-"`
}

// Artifact is one artifact an attempt produced: its name, media type, the lower-case
// hex SHA-256 and size in bytes it was registered with, and — when Downloaded — the
// bytes its public download returned (Content; never encoded into results).
type Artifact struct {
	Name       string `json:"name"`
	MimeType   string `json:"mimeType,omitempty"`
	SHA256     string `json:"sha256,omitempty"`
	ByteSize   int64  `json:"byteSize"`
	Downloaded bool   `json:"downloaded,omitempty"`
	Content    []byte `json:"-"`
}

// Outcome is one matcher's result. Exactly one of Passed and NotReached is true, or
// neither (failed). Expected is what the matcher wanted (normalised text, count, path,
// value…), Observed what it found (nil when nothing was found); both are redacted, and
// an observed message or file content longer than DetailLimit bytes is cut to
// DetailLimit bytes ending with "…[truncated]" (the full text is evidence, kept
// elsewhere).
// Detail is "matched" when Passed, "not reached: <reason>" when NotReached, and
// otherwise `expected <JSON of the matcher>; observed <JSON of Observed>`; it
// is at most DetailLimit bytes and never contains an Observation secret.
type Outcome struct {
	Kind       Kind   `json:"kind"`
	Passed     bool   `json:"passed"`
	NotReached bool   `json:"notReached,omitempty"`
	Expected   any    `json:"expected,omitempty"`
	Observed   any    `json:"observed,omitempty"`
	Detail     string `json:"detail"`
}

// DetailLimit is the maximum length of Outcome.Detail, in bytes.
const DetailLimit = 4096

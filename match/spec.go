// Package match is agentproof's deterministic grading library: it evaluates a case's
// matchers against an observation and returns one outcome per matcher
// (docs/matchers.md).
package match

// Kind names what a matcher grades: the value of a Spec's kind field, one of Kinds (the
// Kind constants). Its JSON and YAML form is the plain string.
type Kind string

// Spec is one matcher as a catalog case declares it (YAML or JSON). Kind selects the
// matcher; which other fields are required depends on the kind:
//
//	message_exact, message_contains        expected (string)
//	message_occurrences                    expected (string), count (int ≥ 0)
//	message_regex                          pattern (RE2), flags (subset of "ims")
//	message_ordered                        expected ([]string)
//	issue_status, run_status               expected (string)
//	runtime_mode                           expected ("legacy" | "native")
//	environment                            expected (environment id)
//	file_exists                            path (workspace-relative), sha256, source (optional)
//	file_absent                            path (workspace-relative), source (optional)
//	file_exact, file_contains              path, expected (string), sha256, source (optional); file_exact: encoding (optional)
//	artifact_exists                        name, mimeType, sha256, expected (string), encoding (optional)
//	json_path                              path (RFC 9535 or legacy dot form), expected (any JSON)
//	json_schema                            schema (JSON Schema draft 2020-12 document)
//	runtime_metadata                       expected ({runtime key: string}, see RuntimeKeys)
//	blocker_guidance                       (no parameters; see KindBlockerGuidance)
//	plan_revisions                         name (document key, default plan), expected ([{steps, contains?, outcome}], see KindPlanRevisions)
//	process_identity                       samePidAcrossTurns (bool, required; see KindProcessIdentity)
//	no_mutation                            path (workspace-relative; see KindNoMutation)
//	permission_order                       path (workspace-relative; see KindPermissionOrder)
//	task_title                             expected (control title, string) or expected (keyword groups) and count (tool-call bound); see KindTaskTitle
//	chat_handoff                           name (assignee), expected (plan text), count (provider turns); see KindChatHandoff
//	command                                name (verifier step), exitCode, expected, pattern/flags, tests; see KindCommand
//
// The message kinds also accept turn (int ≥ 1): evaluate against that turn's message
// (Observation.Turns) instead of the whole message; 0 or absent means the whole message.
//
// The text comparisons (message_exact, message_contains, message_occurrences,
// message_ordered, file_exact, file_contains) accept normalize: "nfc" (the default when
// absent), "nfkc" or "none", the Unicode normalisation form both sides are put in before
// they are compared (NormalizeNFC, NormalizeNFKC, NormalizeNone; docs/matchers.md).
//
// The file kinds read the attempt's workspace snapshot, or with source: agent_home the
// agent's managed home as downloaded through the control plane's public file API
// (Observation.HomeFiles). sha256 (64 lower-case hex digits) additionally requires the
// observed bytes to hash to it. artifact_exists checks an artifact's downloaded bytes
// whenever they were downloaded (they must hash to its declared sha256 and have its
// declared byteSize); with sha256 or expected it requires them: sha256 is the bytes'
// SHA-256, expected their text (compared like file_exact, with normalize).
//
// String fields may hold templates (for example a per-attempt marker); the catalog
// renders them before a Spec reaches Compile for evaluation.
type Spec struct {
	Kind      Kind   `json:"kind" yaml:"kind"`
	Expected  any    `json:"expected,omitempty" yaml:"expected,omitempty"`
	Count     *int   `json:"count,omitempty" yaml:"count,omitempty"`
	Pattern   string `json:"pattern,omitempty" yaml:"pattern,omitempty"`
	Flags     string `json:"flags,omitempty" yaml:"flags,omitempty"`
	Path      string `json:"path,omitempty" yaml:"path,omitempty"`
	Name      string `json:"name,omitempty" yaml:"name,omitempty"`
	MimeType  string `json:"mimeType,omitempty" yaml:"mimeType,omitempty"`
	Schema    any    `json:"schema,omitempty" yaml:"schema,omitempty"`
	Turn      int    `json:"turn,omitempty" yaml:"turn,omitempty"`
	Normalize string `json:"normalize,omitempty" yaml:"normalize,omitempty"`
	SHA256    string `json:"sha256,omitempty" yaml:"sha256,omitempty"`
	Source    string `json:"source,omitempty" yaml:"source,omitempty"`
	// Encoding is file_exact's and artifact_exists's form of expected: EncodingText
	// (absent) or EncodingHex, the hexadecimal form of the exact bytes (a binary file:
	// compared byte for byte, never normalised).
	Encoding string `json:"encoding,omitempty" yaml:"encoding,omitempty"`
	// SamePIDAcrossTurns is process_identity's parameter.
	SamePIDAcrossTurns *bool `json:"samePidAcrossTurns,omitempty" yaml:"samePidAcrossTurns,omitempty"`
	// ExitCode and Tests are command's parameters (KindCommand).
	ExitCode *int       `json:"exitCode,omitempty" yaml:"exitCode,omitempty"`
	Tests    *TestsSpec `json:"tests,omitempty" yaml:"tests,omitempty"`
}

// Expected encodings (Spec.Encoding of file_exact and artifact_exists).
const (
	// EncodingText: expected is the text (the default).
	EncodingText = "text"
	// EncodingHex: expected is the hexadecimal form of the exact bytes.
	EncodingHex = "hex"
)

// File sources (Spec.Source of the file kinds).
const (
	// SourceWorkspace: the attempt's workspace snapshot (the default).
	SourceWorkspace = "workspace"
	// SourceAgentHome: the agent's managed home, downloaded through the public file API.
	SourceAgentHome = "agent_home"
)

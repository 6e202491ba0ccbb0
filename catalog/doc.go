// Package catalog is agentproof's declarative contract data: suites of agent profiles ×
// environments × task cases. It loads a
// catalog from YAML, validates all of it at once, builds the matrix of cells, selects
// cells for a run and computes each suite's definition fingerprint.
//
// # Format
//
// A catalog is a directory of *.yaml files (any split, any depth, read in path order;
// a file may hold several documents; a *.yml file in it is a problem, never silently
// ignored). Each document is a mapping with the top-level
// keys groups, credentials, profiles, environments, cases, suites and rankings, each a
// list; catalog/schema/catalog.schema.json (SchemaJSON) describes one document. Keys are
// strict: an unknown or duplicate key, or a value of the wrong YAML type, is a problem
// at its line and column, never ignored. YAML anchors and aliases work (merge keys
// "<<" do not); alias expansion is bounded. The embedded default catalog
// (catalog/default/*.yaml, Default) is used when no catalog is named. Several parts —
// the default catalog and any number of directories or files (Sources, LoadSources) —
// merge into one catalog: a user's suite may name the default's profiles, environments
// and cases, and an id declared in two parts is a duplicate naming both files. A YAML
// syntax error is reported at the line holding the offending text (syntaxErrorLine), not
// at the parser's context mark.
//
// Templates: case strings such as title, prompt and matcher parameters hold
// placeholders "{{name}}" rendered per attempt (Cell.Render) with a fresh nonce. Marker
// templates (marker, planMarkers, questionAnswer, turnMarkers, workspaceFile) may use
// only {{nonce}}; the others may also use the rendered markers ({{marker}},
// {{draftMarker}}, {{revisedMarker}}, {{answerMarker}}, {{answerOption}},
// {{turnMarker1}}…, {{workspaceFile}}), the expected terminal state ({{issueStatus}},
// {{runStatus}}) and the cell ({{runtimeMode}} = the profile's generation,
// {{environment}} = the environment id).
//
// Reference scripts: a case's reference script has one turn per expected run; each turn
// names the wake that starts it and lists steps, each one semantic command (a kind and
// the arguments of the control plane's semantic-command table, controlplane.Commands)
// or one workspace edit. The built-in reference
// agent carries them out; `present: true` marks the comment that is the run's
// user-facing message. Secrets appear only as {type: secret_ref, secretId, version:
// latest}, where secretId names a declared credential (resolved per attempt) or is a
// UUID.
//
// # Validation
//
// Load reports every problem together in a *ValidationError, each with
// file:line:column, in two phases: first everything that does not decode (malformed
// YAML, unknown keys, wrong types, oversized files — fixing these first avoids
// spurious follow-up problems), then every semantic rule: id grammar (IDPattern) and
// duplicates per kind, unknown groups, credentials, environments, profiles and cases,
// enumerations, the flow of each case against the flows loading was given (WithFlows:
// the flow registry's names and contracts, FlowContract: the fields each flow needs,
// the flow-only fields it accepts, its own rules), templates, matcher specs (match.CompileAll, so RE2-incompatible regular
// expressions are rejected naming the JavaScript-only construct, an unknown normalize
// form, a JSON Schema "format" agentproof does not assert and a $ref outside the schema
// at the line of the keyword; docs/matchers.md), reference scripts,
// the raw-secret scan (a free-form payload may hold no credential-shaped key or
// value), secret references, per-suite and total matrix sizes,
// exclusions that are not in the matrix, calibration verdicts, ranking content
// hashes and the driverConfig of exec profiles (validateExecConfig: an existing
// executable at an absolute path, string args, bounded timeoutMs and maxOutputBytes).
// LoadDir reads regular files only: a FIFO, device or socket is a problem naming it and
// is never opened for reading (files are opened with O_NONBLOCK and checked again, so a
// FIFO cannot block loading).
//
// # Decisions where sources differ
//
//   - Two environments may share an id when their configurationKey differs (the warm
//     Daytona variant); suites name such a variant "<id>@<configurationKey>"
//     and may not list two variants of one id.
//   - The raw-credential key rule applies to free-form payloads
//     (driverConfig, environment config, command args, definitionMetadata), where the
//     original applied it to built agent and environment payloads; the key-shape rule
//     applies to every string of every file.
//   - agentproof adds the process_exit flow (the fixture programs of suite
//     calibration), the builtin qualification source and expectedVerdicts (calibration
//     suites). None of them enters the fingerprint, whose shape stays byte-compatible
//     with the original harness's: change a suite's definitionMetadata to mark such a
//     change.
//   - Fingerprint metadata is encoded as a JavaScript object would be: integer-like keys
//     first in numeric order, then insertion order; numbers as JavaScript numbers.
//   - Case ask-question is single_turn with one run, as in the original harness; the structured
//     question/answer/resume behaviour belongs to the question_resume_completion cases.
package catalog

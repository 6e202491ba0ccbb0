// Package controlplane is the deterministic control-plane state machine: its state,
// operations, commands, determinism, faults and errors are described in
// docs/control-plane.md.
//
// Port is the interface every control plane of agentproof implements: lifecycle
// (Start/Stop), runs with atomic checkout (OpenRun/OpenFixtureRun, Context), PRP and
// native events (AppendEvent, ReplayEvents with an exclusive cursor), semantic commands
// with idempotency and an optional expected revision (ApplyCommand/TryApplyCommand),
// session checkpoints, terminal reconciliation with blocker-wake fan-out (CompleteRun),
// and introspection (Snapshot, DecisionRecords, Serialize). Errors carry the state
// machine's code in an *Error (see CodeOf, a Code), which survives a JSON round trip.
//
// Memory is the in-memory adapter. It does no I/O and reads no wall clock and no
// randomness: timestamps come from the fixture clock (epoch 2026-08-09T00:00:00.000Z +
// tick·1000 ms, the tick advancing on every read), ids are fixture-<kind>-<nnnn> from
// per-kind counters, and Serialize is sorted-key canonical JSON (package canonjson)
// under the tag paperclip.capability.mock-state.v1; Restore reads it back. Every value
// it returns is a copy. A command is executed once under an undo log: if it fails, or
// if a retryable fault hits it, the log is rolled back, so a rejected command costs
// what its own changes cost and never copies the world.
//
// Command kinds: nineteen semantic command kinds, among them create_skill and
// reassign_task (docs/control-plane.md, "Commands"), and agentproof's own
// set_task_title. The
// semantic-command table (Commands: kind, claim, arguments, description, whether it is
// an agent-facing tool and whether it posts a presentable comment) is the one list of
// them: the state machine dispatches and authorizes by it, package mcp builds its tools
// from it and package catalog checks reference scripts against it.
//
// Beyond the port (docs/files.md): content-addressed blobs and managed files (files.go;
// register_deliverable verifies its artifact's declared size and SHA-256 against its
// bytes), agent homes saved with receipts and conflicts (home.go), board operations
// with idempotency keys, and Retry (board operation retry_run, OpenInput.RetryOf,
// run status interrupted). Board is the interface of that side; Memory implements it.
//
// Vocabularies: every closed string of the state (task, run, interaction, approval and
// wake statuses, wake reasons, lifecycle, work dispositions; status.go) and every error
// code (Code, with its Class; errors.go) is a named string type whose constants are the
// exact wire values.
//
// Deliberate choices (each also noted at its code): a completion's terminal is
// validated against the terminal schema so that run status always comes from a valid
// terminal;
// unknown command kinds, priorities, create_task statuses, approval decisions and
// workspace actions fail with semantic_command_invalid; schedule_wake requires a
// reason; PRP sourceSeq is bounded to JavaScript safe integers. Semantic-tool runtime
// receipts (a per-run snapshot store with compare-and-swap) are not implemented (the
// state keeps an empty semanticToolRuntimes map so that serialized states stay
// compatible).
package controlplane

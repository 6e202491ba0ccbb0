// Package mcp exposes the control plane's agent-facing semantic commands to real agent
// CLIs (Codex, OpenCode, Claude Code) as MCP tools, built
// on the official MCP Go SDK. `agentproof mcp` serves one run's tools on stdio.
//
// # Tools
//
// One tool per agent-facing semantic command (the rows of the
// semantic-command table controlplane.Commands with Tool set, in its order):
// report_progress, write_document, request_human_input, register_deliverable,
// finish_task, block_task, request_review, create_task, set_dependencies,
// request_approval, decide_approval, comment_on_approval, control_workspace_service,
// schedule_wake, reassign_task, create_skill, set_task_title,
// post_chat_reply, handoff_conversation; plus the read tools get_task_context,
// list_documents and read_document. Names are exactly these; the CLIs add their own
// prefix (Codex: mcp__agentproof__finish_task). A tool's arguments are the command's
// fields without kind and taskId (every command acts on the run's own task):
// the table row gives the required and optional names and the description (the same
// arguments a reference script step carries, so a step's args are valid tool
// arguments), Tools

// gives each one a bounded schema (maxLength, maxItems, enum, minimum/maximum).
//
// Schemas stay in the subset every client accepts: an object at the
// top with properties and required, one type name per property, no $ref, no
// oneOf/anyOf/allOf, no null types, no format and no additionalProperties (OpenAI's
// strict mode and Codex's schema sanitizer mishandle it). Unknown arguments are still
// refused: DecodeArguments validates against the published schema plus
// additionalProperties false. Observed with the pinned CLIs (internal/cli
// TestMCPWithRealCodex / TestMCPWithRealOpenCode): Codex 0.171 hands the model type,
// enum, items, properties, required and description only (it drops maxLength, pattern,
// maxItems, minimum, maximum), OpenCode 1.18.33 keeps every keyword and adds
// additionalProperties false itself; so each bound is also stated in words in its
// property's description ("[not empty, at most 12000 characters]").
//
// Two conventions are resolved by the server, as the reference agent resolves them:
// write_document without baseRevisionId writes on top of the document's latest
// revision (null when the document is new); request_human_input's targetDocumentKey
// becomes that document's latest revision id.
//
// # Calls
//
// Every call goes to the agent API (package client) with the run token; the run id is
// AGENTPROOF_RUN_ID or, when unset, the run the token names. Idempotency key of a
// command call (IdempotencyKey): "agentproof-mcp/<tool>/" + 32 hex digits of the
// SHA-256 of the RFC 8785 encoding of [runID, tool, arguments without present]. A client
// retrying a call therefore gets the control plane's duplicate answer instead of a
// second application, and within one process a retry resends the exact command first
// sent (resolved baseRevisionId included); the price is that an identical second call
// in the same run is a duplicate too. Retryable control-plane errors are retried up to
// 4 times with the same envelope; after a refusal (a non-retryable control-plane error,
// which records nothing under the key) an identical later call is resolved afresh.
//
// Results are one text content holding JSON: for a command the control plane's
// CommandResult plus commentId and presented (CommandResult); for the read tools the
// run context, the document list or one document revision. Failures are tool errors
// (isError true) whose text is "<code>: <message>": the control plane's code and
// message for a denial (e.g. "task_transition_illegal: ..."), invalid_arguments for
// arguments that do not fit the schema, document_missing / revision_missing from the
// read side, agent_api_unreachable for transport failures. The token never appears in
// a result or in the log (stderr, one line per call).
//
// # The run's message (presentation)
//
// controlplane.State.RunMessage returns the comment named
// by the run result's presentationDecision.commentId, else every comment the run's
// commands created joined with "\n". A CLI run is completed by its exec driver, not by
// this server, so the server records which comment is presented: the comment of the
// last successful presenting call, where finish_task, request_review and block_task
// present by default, report_progress presents only with present: true, and
// present: false opts any of them out. When AGENTPROOF_AGENT_STATE_DIR is set the
// record is written (atomically, after each presenting call) with
// agent.WritePresentation (<stateDir>/agentproof-mcp/presentation-<run>.json). The
// heartbeat runner reads it back with agent.ReadPresentation when the CLI exits and
// puts {"presentationDecision": {"commentId": p.CommentID}} in the run result (p.Text is
// the summary); without a record there is no presentationDecision and all the run's
// comments are the message.
package mcp

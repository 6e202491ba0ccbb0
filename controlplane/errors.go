package controlplane

import (
	"errors"
	"fmt"
)

// Code is the code of an *Error: one of the catalogue codes below, a transport code of the HTTP API (package api), or a scripted
// fault's code (FaultRule.Code, any string). Its JSON form is the plain string.
type Code string

// The state machine's error codes, plus the board
// operations' board_input_invalid and environment_conflict and the store's
// store_unavailable.
const (
	// Lifecycle and fixture state.
	CodeMockAlreadyRunning  Code = "mock_already_running"
	CodeMockNotRunning      Code = "mock_not_running"
	CodeFixtureStateInvalid Code = "fixture_state_invalid"

	// Lookup and scope.
	CodeRunMissing              Code = "run_missing"
	CodeActorMissing            Code = "actor_missing"
	CodeTaskMissing             Code = "task_missing"
	CodeCompanyScopeViolation   Code = "company_scope_violation"
	CodeTaskScopeViolation      Code = "task_scope_violation"
	CodeApprovalMissing         Code = "approval_missing"
	CodeApprovalScopeViolation  Code = "approval_scope_violation"
	CodeInteractionMissing      Code = "interaction_missing"
	CodeWorkspaceServiceMissing Code = "workspace_service_missing"

	// Open and checkout.
	CodeRunBindingConflict         Code = "run_binding_conflict"
	CodeActorNotActive             Code = "actor_not_active"
	CodeBudgetHardStop             Code = "budget_hard_stop"
	CodeCheckoutConflict           Code = "checkout_conflict"
	CodeTerminalTaskRequiresResume Code = "terminal_task_requires_resume"
	CodeTaskTransitionIllegal      Code = "task_transition_illegal"

	// Events and replay.
	CodeNativeEventInvalid        Code = "native_event_invalid"
	CodeNativeEventReplayConflict Code = "native_event_replay_conflict"
	CodeNativeEventSequenceGap    Code = "native_event_sequence_gap"
	CodeReplayBindingMismatch     Code = "replay_binding_mismatch"

	// Run state.
	CodeRunNotWritable Code = "run_not_writable"

	// Semantic commands.
	CodeIdempotencyKeyRequired   Code = "idempotency_key_required"
	CodeIdempotencyConflict      Code = "idempotency_conflict"
	CodeStateRevisionConflict    Code = "state_revision_conflict"
	CodeOperationNotAuthorized   Code = "operation_not_authorized"
	CodeTaskOwnershipViolation   Code = "task_ownership_violation"
	CodeSelfApprovalForbidden    Code = "self_approval_forbidden"
	CodeSemanticCommandInvalid   Code = "semantic_command_invalid"
	CodeDocumentRevisionConflict Code = "document_revision_conflict"
	CodeInteractionTargetMissing Code = "interaction_target_missing"
	CodeInteractionTargetStale   Code = "interaction_target_stale"
	// CodeTargetRevisionSuperseded: accepting a confirmation, or approving an approval,
	// whose target document revision is no longer the document's latest (409: the human
	// acted on an older plan revision; the plan flow).
	CodeTargetRevisionSuperseded      Code = "target_revision_superseded"
	CodeInteractionAlreadyResolved    Code = "interaction_already_resolved"
	CodeInteractionOutcomeInvalid     Code = "interaction_outcome_invalid"
	CodeArtifactInvalid               Code = "artifact_invalid"
	CodeDependencyCycle               Code = "dependency_cycle"
	CodeApprovalAlreadyDecided        Code = "approval_already_decided"
	CodeBudgetUsageInvalid            Code = "budget_usage_invalid"
	CodeReleaseLockMismatch           Code = "release_lock_mismatch"
	CodeWakeDelayInvalid              Code = "wake_delay_invalid"
	CodeWakeAssigneeMissing           Code = "wake_assignee_missing"
	CodeInvalidSkillDocument          Code = "invalid_skill_document"
	CodeReassignmentCurrentTask       Code = "reassignment_current_task"
	CodeReassignmentStateDenied       Code = "reassignment_state_denied"
	CodeReassignmentTargetUnavailable Code = "reassignment_target_unavailable"
	CodeReassignmentConflict          Code = "reassignment_conflict"

	// Completion.
	CodeNativeResultInvalid          Code = "native_result_invalid"
	CodeNativeResultReplayConflict   Code = "native_result_replay_conflict"
	CodeTerminalEventMissing         Code = "terminal_event_missing"
	CodeTerminalReconciliationFailed Code = "terminal_reconciliation_failed"

	// Board operations (agentproof's board API over the state machine).
	CodeBoardInputInvalid   Code = "board_input_invalid"
	CodeEnvironmentConflict Code = "environment_conflict"

	// CodeStoreUnavailable: a durable store (package controlplane/store) could not
	// commit; retryable.
	CodeStoreUnavailable Code = "store_unavailable"

	// Managed files and blobs (files.go, home.go).
	//
	// CodeBlobInvalid: a SHA-256 that is not 64 lower-case hex digits, a negative size,
	// or bytes that do not hash to the SHA-256 and size they are recorded under.
	CodeBlobInvalid Code = "blob_invalid"
	// CodeBlobMissing: no bytes are stored under the SHA-256 (in this company).
	CodeBlobMissing Code = "blob_missing"
	// CodeArtifactContentMissing: register_deliverable names a SHA-256 whose bytes were
	// never uploaded (and the command carries none).
	CodeArtifactContentMissing Code = "artifact_content_missing"
	// CodeArtifactDigestMismatch: register_deliverable's declared sha256 or byteSize
	// does not match its bytes (the inline content, or the stored blob).
	CodeArtifactDigestMismatch Code = "artifact_digest_mismatch"
	// CodeFileMissing: no managed file with that id (or in that scope).
	CodeFileMissing Code = "file_missing"
	// CodeFileRevisionConflict: put_file's expectedSha256 is not the file's current
	// SHA-256 (someone changed the file since it was read).
	CodeFileRevisionConflict Code = "file_revision_conflict"
	// CodeFileConflictMissing: no file conflict with that id.
	CodeFileConflictMissing Code = "file_conflict_missing"
	// CodeFileConflictStale: resolve_file_conflict names a current SHA-256 that is not
	// the file's current one: the reviewed file changed again.
	CodeFileConflictStale Code = "file_conflict_stale"
	// CodeFileConflictResolved: the conflict was already resolved.
	CodeFileConflictResolved Code = "file_conflict_already_resolved"
	// CodeHomeSaveConflict: a run's home was already saved with a different receipt.
	CodeHomeSaveConflict Code = "home_save_conflict"

	// Retry (board operation retry_run, open with retryOf).
	//
	// CodeRunNotRetryable: the run is not failed or interrupted, or its task is done or
	// cancelled, or an open names a retryOf that was not asked for.
	CodeRunNotRetryable Code = "run_not_retryable"
	// CodeConversationMissing: no conversation has the id (board operation
	// chat_message).
	CodeConversationMissing Code = "conversation_missing"
	// CodeNotConversation: a chat command (post_chat_reply, handoff_conversation) from a
	// run whose task is not a conversation's.
	CodeNotConversation Code = "task_not_conversation"
	// CodeRunAlreadyRetried: the run already has a retry (asked for or opened).
	CodeRunAlreadyRetried Code = "run_already_retried"
	// CodeRunNotSteerable: the run has no running turn of an agent that takes steering
	// messages (a Pi run between its prompt and its end), or the agent refused the
	// message (the heartbeat runner's Steer).
	CodeRunNotSteerable Code = "run_not_steerable"
)

// Codes of the HTTP API around the state machine (packages server, server/heartbeat
// and client; api.Error bodies).
const (
	// CodeInvalidRequest: a malformed request (bad JSON, a bad path id, a missing field).
	CodeInvalidRequest Code = "invalid_request"
	// CodeUnauthorized: no or a wrong board or run token.
	CodeUnauthorized Code = "unauthorized"
	// CodeForbidden: a valid token that may not do this.
	CodeForbidden Code = "forbidden"
	// CodeNotFound: no such route.
	CodeNotFound Code = "not_found"
	// CodeCompanyMissing: no such company in the instance.
	CodeCompanyMissing Code = "company_missing"
	// CodeRequestTooLarge: a request body over api.MaxBodyBytes.
	CodeRequestTooLarge Code = "request_too_large"
	// CodeRequestTimeout: the body did not arrive within the server's body timeout (a
	// client trickling its body); the connection is closed.
	CodeRequestTimeout Code = "request_timeout"
	// CodeSecretRefRequired: a credential given as a raw value instead of a secret
	// reference.
	CodeSecretRefRequired Code = "secret_ref_required"
	// CodeSecretMissing: a secret reference names no stored secret.
	CodeSecretMissing Code = "secret_missing"
	// CodeInternalError: an error without a code (a bug or an I/O failure); its
	// message is never the underlying error's.
	CodeInternalError Code = "internal_error"
	// CodeCancellationConflict: a Stop with an earlier or different intent, after an
	// earlier uncorrelated Stop, by a different board actor, or of a terminal run
	// without this intent.
	CodeCancellationConflict Code = "cancellation_conflict"
	// CodeCancellationRequestIDInvalid: a cancellationRequestId that is not a UUID.
	CodeCancellationRequestIDInvalid Code = "cancellation_request_id_invalid"
	// CodeIdempotencyKeyInvalid: an Idempotency-Key header on a route that takes none,
	// or one that is empty.
	CodeIdempotencyKeyInvalid Code = "idempotency_key_invalid"
)

// Class is what kind of refusal a Code is; package server maps it to an HTTP status.
type Class int

// Classes of codes (HTTP statuses as package server answers them).
const (
	// ClassRefused: the operation is not possible in this state (422); also every
	// code this package does not know (scripted fault codes).
	ClassRefused Class = iota
	// ClassInvalid: malformed or invalid input (400).
	ClassInvalid
	// ClassUnauthorized: not authenticated (401).
	ClassUnauthorized
	// ClassForbidden: authenticated, but outside the caller's scope (403).
	ClassForbidden
	// ClassMissing: the entity does not exist (404).
	ClassMissing
	// ClassConflict: conflicts with what already happened (409).
	ClassConflict
	// ClassTooLarge: the request is too large (413).
	ClassTooLarge
	// ClassTimeout: the request did not arrive in time (408).
	ClassTimeout
	// ClassUnavailable: a transient failure; retry (503).
	ClassUnavailable
	// ClassInternal: a failure of the server itself (500).
	ClassInternal
)

// codeClasses classifies every code of this package that is not ClassRefused.
var codeClasses = map[Code]Class{
	CodeFixtureStateInvalid:          ClassInvalid,
	CodeNativeEventInvalid:           ClassInvalid,
	CodeSemanticCommandInvalid:       ClassInvalid,
	CodeInteractionOutcomeInvalid:    ClassInvalid,
	CodeArtifactInvalid:              ClassInvalid,
	CodeBudgetUsageInvalid:           ClassInvalid,
	CodeWakeDelayInvalid:             ClassInvalid,
	CodeNativeResultInvalid:          ClassInvalid,
	CodeBoardInputInvalid:            ClassInvalid,
	CodeIdempotencyKeyRequired:       ClassInvalid,
	CodeInvalidRequest:               ClassInvalid,
	CodeSecretRefRequired:            ClassInvalid,
	CodeCancellationRequestIDInvalid: ClassInvalid,
	CodeIdempotencyKeyInvalid:        ClassInvalid,
	CodeBlobInvalid:                  ClassInvalid,
	CodeArtifactDigestMismatch:       ClassInvalid,

	CodeUnauthorized: ClassUnauthorized,

	CodeForbidden:              ClassForbidden,
	CodeCompanyScopeViolation:  ClassForbidden,
	CodeTaskScopeViolation:     ClassForbidden,
	CodeApprovalScopeViolation: ClassForbidden,

	CodeNotFound:                 ClassMissing,
	CodeCompanyMissing:           ClassMissing,
	CodeSecretMissing:            ClassMissing,
	CodeRunMissing:               ClassMissing,
	CodeActorMissing:             ClassMissing,
	CodeTaskMissing:              ClassMissing,
	CodeApprovalMissing:          ClassMissing,
	CodeInteractionMissing:       ClassMissing,
	CodeWorkspaceServiceMissing:  ClassMissing,
	CodeInteractionTargetMissing: ClassMissing,
	CodeWakeAssigneeMissing:      ClassMissing,
	CodeTerminalEventMissing:     ClassMissing,
	CodeBlobMissing:              ClassMissing,
	CodeArtifactContentMissing:   ClassMissing,
	CodeFileMissing:              ClassMissing,
	CodeFileConflictMissing:      ClassMissing,
	CodeConversationMissing:      ClassMissing,

	CodeMockAlreadyRunning:         ClassConflict,
	CodeRunBindingConflict:         ClassConflict,
	CodeCheckoutConflict:           ClassConflict,
	CodeNativeEventReplayConflict:  ClassConflict,
	CodeIdempotencyConflict:        ClassConflict,
	CodeStateRevisionConflict:      ClassConflict,
	CodeDocumentRevisionConflict:   ClassConflict,
	CodeInteractionAlreadyResolved: ClassConflict,
	CodeTargetRevisionSuperseded:   ClassConflict,
	CodeApprovalAlreadyDecided:     ClassConflict,
	CodeReassignmentConflict:       ClassConflict,
	CodeNativeResultReplayConflict: ClassConflict,
	CodeEnvironmentConflict:        ClassConflict,
	CodeCancellationConflict:       ClassConflict,
	CodeFileRevisionConflict:       ClassConflict,
	CodeFileConflictStale:          ClassConflict,
	CodeFileConflictResolved:       ClassConflict,
	CodeHomeSaveConflict:           ClassConflict,
	CodeRunNotRetryable:            ClassConflict,
	CodeNotConversation:            ClassConflict,
	CodeRunAlreadyRetried:          ClassConflict,
	CodeRunNotSteerable:            ClassConflict,

	CodeRequestTooLarge: ClassTooLarge,
	CodeRequestTimeout:  ClassTimeout,

	CodeStoreUnavailable: ClassUnavailable,

	CodeInternalError: ClassInternal,
}

// Class returns the class of c; ClassRefused for every code not listed (the
// state-machine refusals such as CodeTaskTransitionIllegal, and scripted fault codes).
func (c Code) Class() Class {
	if k, ok := codeClasses[c]; ok {
		return k
	}
	return ClassRefused
}

// Error is the state machine's typed error. Code is one of
// the catalogue codes of this file (for example CodeCheckoutConflict) or a scripted
// fault code; Retryable is true only for scripted faults and CodeStoreUnavailable. Its
// JSON form {code, message, retryable} survives a round trip over HTTP.
type Error struct {
	Code      Code   `json:"code"`
	Message   string `json:"message"`
	Retryable bool   `json:"retryable"`
}

// Error returns "<code>: <message>".
func (e *Error) Error() string { return string(e.Code) + ": " + e.Message }

// CodeOf returns the Code of the first *Error in err's chain, or "" when there is none.
func CodeOf(err error) Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

// IsRetryable reports whether err carries a retryable *Error (a scripted fault).
func IsRetryable(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Retryable
}

func newErr(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

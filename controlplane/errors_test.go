package controlplane

import (
	"go/ast"
	"go/parser"
	"go/token"
	"testing"
)

// TestCodeClasses: every Code constant of the package has the class the HTTP API
// answers it with (table below), and the table names every constant, so a new code is
// classified deliberately. Unknown codes (scripted faults) are refusals.
func TestCodeClasses(t *testing.T) {
	t.Parallel()
	want := map[Code]Class{
		CodeMockAlreadyRunning: ClassConflict, CodeMockNotRunning: ClassRefused, CodeFixtureStateInvalid: ClassInvalid,
		CodeRunMissing: ClassMissing, CodeActorMissing: ClassMissing, CodeTaskMissing: ClassMissing,
		CodeCompanyScopeViolation: ClassForbidden, CodeTaskScopeViolation: ClassForbidden,
		CodeApprovalMissing: ClassMissing, CodeApprovalScopeViolation: ClassForbidden, CodeInteractionMissing: ClassMissing,
		CodeWorkspaceServiceMissing: ClassMissing, CodeRunBindingConflict: ClassConflict, CodeActorNotActive: ClassRefused,
		CodeBudgetHardStop: ClassRefused, CodeCheckoutConflict: ClassConflict, CodeTerminalTaskRequiresResume: ClassRefused,
		CodeTaskTransitionIllegal: ClassRefused, CodeNativeEventInvalid: ClassInvalid,
		CodeNativeEventReplayConflict: ClassConflict, CodeNativeEventSequenceGap: ClassRefused,
		CodeReplayBindingMismatch: ClassRefused, CodeRunNotWritable: ClassRefused,
		CodeIdempotencyKeyRequired: ClassInvalid, CodeIdempotencyConflict: ClassConflict,
		CodeStateRevisionConflict: ClassConflict, CodeOperationNotAuthorized: ClassRefused,
		CodeTaskOwnershipViolation: ClassRefused, CodeSelfApprovalForbidden: ClassRefused,
		CodeSemanticCommandInvalid: ClassInvalid, CodeDocumentRevisionConflict: ClassConflict,
		CodeInteractionTargetMissing: ClassMissing, CodeInteractionTargetStale: ClassRefused, CodeTargetRevisionSuperseded: ClassConflict,
		CodeInteractionAlreadyResolved: ClassConflict, CodeInteractionOutcomeInvalid: ClassInvalid,
		CodeArtifactInvalid: ClassInvalid, CodeDependencyCycle: ClassRefused, CodeApprovalAlreadyDecided: ClassConflict,
		CodeBudgetUsageInvalid: ClassInvalid, CodeReleaseLockMismatch: ClassRefused, CodeWakeDelayInvalid: ClassInvalid,
		CodeWakeAssigneeMissing: ClassMissing, CodeInvalidSkillDocument: ClassRefused,
		CodeReassignmentCurrentTask: ClassRefused, CodeReassignmentStateDenied: ClassRefused,
		CodeReassignmentTargetUnavailable: ClassRefused, CodeReassignmentConflict: ClassConflict,
		CodeNativeResultInvalid: ClassInvalid, CodeNativeResultReplayConflict: ClassConflict,
		CodeTerminalEventMissing: ClassMissing, CodeTerminalReconciliationFailed: ClassRefused,
		CodeBoardInputInvalid: ClassInvalid, CodeEnvironmentConflict: ClassConflict, CodeStoreUnavailable: ClassUnavailable,
		CodeInvalidRequest: ClassInvalid, CodeUnauthorized: ClassUnauthorized, CodeForbidden: ClassForbidden,
		CodeNotFound: ClassMissing, CodeCompanyMissing: ClassMissing, CodeRequestTooLarge: ClassTooLarge, CodeRequestTimeout: ClassTimeout,
		CodeSecretRefRequired: ClassInvalid, CodeSecretMissing: ClassMissing, CodeInternalError: ClassInternal,
		CodeCancellationConflict: ClassConflict, CodeCancellationRequestIDInvalid: ClassInvalid,
		CodeIdempotencyKeyInvalid: ClassInvalid, CodeBlobInvalid: ClassInvalid, CodeBlobMissing: ClassMissing,
		CodeArtifactContentMissing: ClassMissing, CodeArtifactDigestMismatch: ClassInvalid, CodeFileMissing: ClassMissing,
		CodeFileRevisionConflict: ClassConflict, CodeFileConflictMissing: ClassMissing, CodeFileConflictStale: ClassConflict,
		CodeFileConflictResolved: ClassConflict, CodeHomeSaveConflict: ClassConflict, CodeRunNotRetryable: ClassConflict,
		CodeConversationMissing: ClassMissing, CodeNotConversation: ClassConflict,
		CodeRunAlreadyRetried: ClassConflict, CodeRunNotSteerable: ClassConflict,
		"scripted_retryable_error": ClassRefused,
	}
	for code, class := range want {
		if got := code.Class(); got != class {
			t.Errorf("%s.Class() = %d, want %d", code, got, class)
		}
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "errors.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	ast.Inspect(f, func(node ast.Node) bool {
		vs, ok := node.(*ast.ValueSpec)
		if !ok || vs.Type == nil {
			return true
		}
		if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != "Code" {
			return true
		}
		for i, name := range vs.Names {
			lit := vs.Values[i].(*ast.BasicLit)
			n++
			if _, ok := want[Code(lit.Value[1:len(lit.Value)-1])]; !ok {
				t.Errorf("code %s is missing from this test's table", name.Name)
			}
		}
		return true
	})
	if n != len(want)-1 {
		t.Errorf("errors.go declares %d codes, the table has %d", n, len(want)-1)
	}
}

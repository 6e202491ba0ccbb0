// Package reference is the built-in reference agent: a deterministic
// agent that carries out a case's rendered reference script (script.Script)
// through a controlplane.Port — the HTTP client in a real run, controlplane.Memory in
// tests — one turn per run.
//
// One run of the agent (Execute):
//
//  1. reads the run context (Port.Context) and the agent's session for the run's task
//     (Session, a small JSON file in the agent's state directory: how many turns are
//     done and the latest revision id of every document the agent wrote);
//  2. takes the next turn of the script when its trigger accepts the run's wake
//     (Accepts); a wake that does not fit (a stray retry, an unexpected comment) ends
//     the run without work and without advancing the session;
//  3. carries out the turn's steps in order: semantic commands through ApplyCommand
//     with deterministic idempotency keys ("agentproof-reference/turn-<t>/step-<s>",
//     retried with the same key on retryable errors), and workspace edits confined to
//     the workspace directory (os.Root; a path that leaves it is an error);
//  4. completes the run through CompleteRun with a run.terminal event and a
//     paperclip.run_result.v1 result whose reportedWorkDisposition follows the task's
//     status after the turn (Disposition) and whose presentationDecision.commentId is
//     the comment of the step marked present;
//  5. records the turn in the session.
//
// The wrong calibration agent is the same agent with WrongScript applied: every
// occurrence of the attempt's nonce is replaced by a different, deterministic one, so
// its markers, documents and files are plausible but wrong.
package reference

// Package attempt runs one attempt of one cell as a pipeline of stages and judges it
// (docs/ARCHITECTURE.md "Stages", "Honest blame", "Observed facts", "Verdicts"):
// provision (provision.go, seed.go) → fixtures (fixtures.go, adapter.go) → flow
// (flow.go, package campaign/flows) → observe (observe.go, runtime.go) → verify
// (verify.go, protect.go) → grade (grade.go) → teardown (teardown.go) → Judge
// (judge.go, blame.go). Each stage returns a value (Provisioned, Fixtures,
// FlowOutcome, Observation, Verification, Grades, Teardown); Judge is a pure
// function of them (Stages). LocalExecutor (executor.go) is the campaign.Executor that
// runs the stages with a private temp root and its own `agentproof serve` child.
//
// # Decisions where sources differ or are silent
//
//   - Every fault carries its origin (verdict.Fault): the harness's faults are
//     infrastructure (inconclusive), never the candidate's; a board refusal of a
//     fixture is permanent infrastructure. The text rules (ClassifyText) only
//     classify the words of a real CLI's failure.
//   - A missed deadline, a hang or a flood is blamed by Pace: the candidate's with a
//     built-in agent or the scripted model (offline, deterministic: no provider to
//     blame), provider variance live or with an exec agent, and for the
//     fixture programs the classes the process-control calibration documents
//     (a timeout provider_variance, an overflow permanent_infrastructure).
//   - A board that fails every look for flows.BoardPatience is the harness's fault,
//     not a slow agent's.
//   - Every attempt stores a fresh random canary secret (CanarySecretKey) and hands it
//     to its agent by reference; the leak scan looks for it and every credential value
//     in the closed instance home, the workspace and the attempt's evidence, so the scan
//     tests something even for cells without credentials.
//   - The attempt's secret set holds, besides credentials and the canary, the
//     instance's board token, master key and run-token key (api.RunTokenKey) in raw,
//     hex and base64 forms, and every credential in the forms it takes in files
//     (redact.CredentialForms). board.token and master.key themselves (0600 regular
//     files) are the only files of the home the persisted-state scan exempts.
//   - The wrong agent, which must otherwise fail by its markers alone, also writes the
//     campaign's canaries into its workspace in canary mode, so in canary mode its
//     cells fail with secret_leak.
//   - A printed secret (stdout, stderr, the termination summary) is redacted by the
//     heartbeat runner before it is stored; the runner counts it
//     (Termination.SecretsRedacted) and the attempt fails with secret_leak anyway.
//   - Required evidence (campaign.RequiredEvidence) is checked only for attempts that
//     reached grading; a missing file is inconclusive (permanent_infrastructure),
//     overridden by a leak. Nothing is copied from the agent's workspace into the
//     results beyond workspace-manifest.json; its logs are copied through the guard as
//     agent content (no HTML, XML or SVG).
//   - The agent gets exactly the run capabilities its cell declares
//     (catalog.Cell.CapabilityGrants: the profile's and the case's capabilityGrants, for
//     example governance:approvals:request for a plan approval), and none else: a
//     command needing another claim is refused and the run fails.
//   - The profile's runtime metadata check (a runtime_metadata matcher) follows the
//     case's matchers; a CLI cell's expectation includes the pinned version and the
//     binary digest its install recorded.
//   - A case's workMode (standard, planning, ask) is the created task's work mode.
//   - No project fixture is registered: no default case needs one.
package attempt

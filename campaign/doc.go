// Package campaign runs selected catalog cells as a campaign: it plans attempts,
// schedules them through an Executor with a concurrency bound and the automatic retry
// policy, judges each attempt into a verdict and reports progress (issue 9; spec
// runner-e2e-harness §3, §6, §9; DESIGN.md "Verdicts").
//
// The parts, in the order data flows:
//
//   - NewPlan validates Options (campaign id sanitised as spec §3 says, max parallelism,
//     0 or 1 automatic retries) and selects cells exactly as `agentproof list` does
//     (same *catalog.SelectionError values; an empty selector is refused).
//     Plan.Attempt renders attempt n of a cell with a fresh nonce — a function of
//     --seed, the cell id and n when a seed is given, random otherwise.
//   - Scheduler.Run runs the plan's cells through an Executor, at most MaxParallel at
//     once, retries at most once after transient_infrastructure or provider_variance
//     (ShouldRetry), stops starting attempts when its context is cancelled (running
//     attempts see their context cancelled; what finished is kept; the Summary is
//     Partial) and reports Events.
//   - Executor is the seam for the real executor (own `agentproof serve` child per
//     attempt, fixtures, flows through the HTTP API); it reports plain facts in an
//     AttemptOutcome, and Judge turns them into a Judgement (verdict, FailureClass,
//     reason) by ordered rules, the same for every executor. ClassifyError applies the
//     ordered text rules of spec §9 to attempt errors. Counted maps a calibration
//     cell's observed verdict against its expected one.
//   - Registry is the fixture registry of spec §6 and seed 000 ("New Paperclip object
//     fixtures"): definitions with dependencies, set up depth-first in registration
//     order after the whole graph was checked, torn down in reverse completion order
//     (also after a partial setup), keeping only ids and sanitized metadata.
//   - LocalExecutor is the real Executor: a private temp root per attempt, its own
//     `agentproof serve` child (explicit environment, loopback port, own SQLite home),
//     the fixture graph company → secrets → environment → agent → task through the
//     board API, the case's flow played as the human (flow.go), the observation built
//     from API snapshots and the workspace, teardown, server stop (SIGTERM, SIGKILL
//     after StopGrace), a leak scan of the closed home, the workspace and the evidence,
//     and removal of the temp root. WriteResult turns a judged attempt into result.json.
//   - Display renders Events: a live multi-line display on a terminal, timestamped
//     plain lines otherwise, and always the final line
//     "Campaign <id>: <passed>/<selected> passed, <failed> failed, <inconclusive> inconclusive".
//
// Every file of an attempt goes through report.Guard (issue 11): allowlisted kinds only,
// raw scan, sanitise, re-scan, atomic write (temp file, fsync, rename, fsync of the
// directory); the leaks found on the way fail the attempt (secret_leak) and are listed,
// with every file's size and SHA-256, in evidence-manifest.json, written after
// result.json by WriteResult.
//
// # Decisions where sources differ or are silent
//
//   - Graph errors (unknown dependency, cycle) are all reported before any setup; the
//     upstream registry found them during its depth-first walk, after earlier fixtures
//     had been set up.
//   - A missed deadline is provider_variance (retryable, inconclusive); a collector
//     error and an unreached matcher are permanent_infrastructure ("missing required
//     evidence", spec §9); an error whose text matches no rule is candidate_failure
//     (the spec's default), which fails the attempt.
//   - A definite matcher failure fails the attempt even when another matcher was not
//     reached (the observation is final); a missed deadline, an infrastructure error
//     or an interruption make it inconclusive first.
//   - A calibration cell counts as passed exactly when observed equals expected;
//     otherwise it counts as inconclusive when the observed verdict is inconclusive
//     and as failed otherwise. A calibration attempt that already counts as passed is
//     not retried.
//   - A case's workMode (standard, planning, ask) is the created task's work mode.
//   - Every attempt stores a fresh random canary secret (CanarySecretKey) and hands it
//     to its agent by reference; the leak scan looks for it and every credential value
//     in the closed instance home, the workspace and the attempt's evidence, so the scan
//     tests something even for cells without credentials.
//   - The attempt's secret set holds, besides credentials and the canary, the
//     instance's board token, master key and run-token key (api.RunTokenKey) in raw,
//     hex and base64 forms, and every credential in the forms it takes in files
//     (redact.CredentialForms). board.token and master.key themselves (0600 regular
//     files) are the only files of the home the persisted-state scan exempts.
//   - Canary mode (LocalExecutor.Canaries, `run --canary`) adds fake secrets of every
//     shape, derived from the campaign id so that a test can recompute them (Canaries).
//     The leaky calibration agent leaks them; the wrong agent, which must otherwise
//     fail by its markers alone, also writes them into its workspace in canary mode
//     (the issue asks both to try), so in canary mode its cells fail with secret_leak.
//   - A printed secret (stdout, stderr, the termination summary) is redacted by the
//     heartbeat runner before it is stored; the runner counts it
//     (Termination.SecretsRedacted) and the attempt fails with secret_leak anyway.
//   - Required evidence (RequiredEvidence) is checked only for attempts that reached
//     grading; a missing file is a collector error (inconclusive,
//     permanent_infrastructure), overridden by a leak. Nothing is copied from the
//     agent's workspace into the results beyond workspace-manifest.json (paths, sizes,
//     hashes); its logs are copied through the guard as agent content (no HTML, XML
//     or SVG).
//   - An agent process that timed out is a missed deadline ("run <id> process":
//     provider_variance, inconclusive, retryable); one that exceeded its output bound
//     is a collector error (permanent_infrastructure, inconclusive): its exit is not a
//     result. The process_exit calibration relies on both.
//   - An interrupted attempt that does not count (AttemptResult.Counts) keeps its
//     evidence but gets no result.json. An interrupted campaign's report covers the
//     cells that finished, which makes it partial by spec §7.4's own rule (a suite lacks
//     cells) and keeps `agentproof report` regeneration byte-identical; the campaign
//     line still counts against the whole selection.
//   - The [project] fixture of spec §6 is not registered: no default case needs one.
//   - Campaign ids may not be "." or ".." or longer than MaxCampaignIDLength bytes
//     (they name a directory).
package campaign

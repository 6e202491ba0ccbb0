// Package campaign runs selected catalog cells as a campaign (docs/ARCHITECTURE.md
// "Data flow"): it plans attempts, schedules them
// through an Executor with a concurrency bound and the automatic retry policy, writes
// each attempt's result as it ends, counts verdicts and reports progress. The attempt
// itself — the pipeline of stages and its verdict — is package campaign/attempt.
//
// The parts, in the order data flows:
//
//   - NewPlan validates Options (campaign id sanitised: SanitizeCampaignID, max parallelism,
//     0 or 1 automatic retries) and selects cells exactly as `agentproof list` does
//     (same *catalog.SelectionError values; an empty selector is refused).
//     Plan.Attempt renders attempt n of a cell with a fresh nonce — a function of
//     --seed, the cell id and n when a seed is given, random otherwise.
//   - Scheduler.Run runs the plan's cells through an Executor, at most MaxParallel at
//     once, retries at most once after a retryable failure class (ShouldRetry), stops
//     starting attempts when its context is cancelled (running attempts see their
//     context cancelled; what finished is kept; the Summary is Partial) and reports
//     Events. As an attempt ends, its worker goroutine writes its result.json and
//     evidence-manifest.json (WriteResult, through the attempt's Evidence writer and
//     result.Guard) before taking the scheduler's lock; Observe only renders progress.
//   - Executor is the seam of the attempt: it returns an Outcome with the judgement
//     (package verdict's vocabulary), the facts result.json reports (Facts), the
//     evidence writer and the secret set. verdict.Counted maps a calibration cell's
//     observed verdict against its expected one.
//   - Display renders Events: a live multi-line display on a terminal, timestamped
//     plain lines otherwise, and always the final line
//     "Campaign <id>: <passed>/<selected> passed, <failed> failed, <inconclusive> inconclusive".
//
// Every file of an attempt goes through result.Guard: allowlisted kinds only, raw scan,
// sanitise, re-scan, atomic write (temp file, rename; result.json and
// evidence-manifest.json with fsync and a directory fsync, after one syncfs that makes
// the evidence before them durable: Evidence); the leaks found on the way fail the
// attempt (secret_leak) and are listed, with every file's size and SHA-256, in
// evidence-manifest.json, written after result.json by WriteResult.
//
// # Decisions where sources differ or are silent
//
//   - A calibration cell counts as passed exactly when observed equals expected;
//     otherwise it counts as inconclusive when the observed verdict is inconclusive
//     and as failed otherwise. A calibration attempt that already counts as passed is
//     not retried.
//   - An attempt that returns after the campaign was cancelled with an inconclusive
//     verdict is counted as interrupted. An interrupted attempt that does not count
//     (AttemptResult.Counts) keeps its evidence but gets no result.json. An interrupted
//     campaign's report covers the cells that finished, which makes it partial by
//     the campaign's own rule (a suite lacks cells) and keeps `agentproof report`
//     regeneration byte-identical; the campaign line still counts against the whole
//     selection.
//   - Canary mode (`run --canary`) adds fake secrets of every shape, derived from the
//     campaign id so that a test can recompute them (Canaries).
//   - result.json's runtimeMode is the one the heartbeat runner recorded launching
//     every run, "" when it was not observed: never the profile's declaration.
//   - Campaign ids may not be "." or ".." or longer than MaxCampaignIDLength bytes
//     (they name a directory).
package campaign

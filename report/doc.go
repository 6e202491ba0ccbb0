// Package report owns what a campaign leaves behind (spec runner-e2e-harness §7,
// DESIGN.md "Files a campaign writes"): the per-attempt result schema (Result,
// agentproof.result/v1), the campaign (Campaign, agentproof.campaign/v1) and history
// (History, agentproof.history/v1) schemas, best-attempt selection per expected cell,
// synthetic results for cells without one, and the renderers summary.md, junit.xml and
// the self-contained dashboard.html (plus an identical index.html). Generate writes all
// of them from the stored result.json files only, deterministically and atomically, so
// `agentproof report` reproduces what `agentproof run` wrote byte for byte; Merge brings
// attempt directories from separate machines into one campaign first.
//
// # Decisions where sources differ
//
//   - Verdicts replace the spec's passed/failed status: a Result carries verdict
//     passed|failed|inconclusive and, for calibration cells, expectedVerdict. What a cell
//     counts as in a campaign is Outcome (calibration: observed == expected).
//   - A synthetic result (an expected cell without a valid result.json) is inconclusive
//     with failure class permanent_infrastructure, not failed as in spec §7.3: missing
//     evidence is an infrastructure fault, which DESIGN.md "Verdicts" makes inconclusive
//     (exit 3). It still keeps the campaign from being green, and never satisfies a
//     calibration expectation, not even "inconclusive".
//   - The spec's "incomplete" count (a first-task check not reached) is not separate:
//     such results are inconclusive by the assurance rules.
//   - The execution id grammar is catalog.IDPattern for each of the four components;
//     the environment is any catalog environment id, not only local|daytona.
//   - The campaign is complete (Partial false) when every suite of the reporting catalog
//     that is not manual-only appears and every suite is complete (spec §7.4, newer
//     rule); so a manual-only suite never makes `run --all` partial.
//   - generatedAt is the latest finishedAt among the results and history's updatedAt
//     the newest campaign's generatedAt — never the wall clock, so regeneration is
//     byte-identical. The dashboard shows the history as of its own campaign
//     (History.Upto) for the same reason.
//   - A result.json that fails strict validation is kept as an invalid candidate: a valid
//     attempt of the same cell wins; without one the cell gets a synthetic result naming
//     the problems.
//   - JUnit: one <testsuite> per suite under a <testsuites> root instead of the spec's
//     single suite; inconclusive cells are <skipped> unless InconclusiveAsFailure.
//   - DESIGN.md lets report import billing and catalog; it also imports redact (a leaf
//     listed below it): Guard is the one choke point every results file passes
//     (allowlist by extension, raw scan, sanitise, re-scan, atomic write), used by
//     Generate, Merge and the executor. Clean content is written byte for byte, so
//     regeneration stays byte-identical.
//   - The evidence manifest (EvidenceManifest, agentproof.evidence-manifest/v1) keeps
//     the spec's {files, leaks, missing} and adds dropped (files the allowlist refused);
//     the upstream tag paperclip.runner-e2e.evidence/v1 is not reused.
//   - The evidence allowlist is the (json, log, txt, md, png, and xml/html only
//     when agentproof rendered them), stricter than spec §10.3, which also keeps css,
//     js, webm and inspected zip archives.
package report

// Package result is the model of what a campaign leaves behind, apart from its
// printers (package report): the per-attempt result (Result, result.json, schema
// agentproof.result/v1) and its strict validation, the evidence manifest
// (EvidenceManifest, evidence-manifest.json), the campaign (Campaign, campaign.json,
// agentproof.campaign/v1) with its counts, repeats, provenance and exit code, and the
// history (History, history.json, agentproof.history/v1). It loads stored results
// (LoadCandidates), chooses the best attempt per expected cell and repetition
// (ChooseRepeated) with synthetic results for cells without one, assembles a campaign
// from its directory (Assemble), merges attempt directories from separate machines
// (Merge), checks regressions against the latest green campaign (Baseline) and
// compares two campaigns (Compare); each returns values and writes nothing, except
// Merge and the writers below.
//
// Every file written into the results passes Guard, the one choke point: allowlist by
// extension (EvidenceKind), raw scan for secrets, sanitise, scan again, atomic write
// (atomicfile; GuardedWriter for a file produced in pieces; StageWrite and
// atomicfile.CommitStaged to put several files in place with one sync). Clean content is written byte for byte, so
// regeneration stays byte-identical. Merge scans every file of a shard through Guard
// and hard-links, instead of writing, one the guard leaves byte for byte when that is
// safe (same file system, mode FileMode, the merging user's file): no results file is
// ever written in place, so the shard and the combined campaign can share it.
//
// # Decisions
//
//   - A result carries verdict passed|failed|inconclusive and, for calibration cells,
//     expectedVerdict; what a cell counts as in a campaign is Outcome (calibration:
//     observed == expected).
//   - A synthetic result (an expected cell without a valid result.json) is inconclusive
//     with failure class permanent_infrastructure, not failed: missing evidence is an
//     infrastructure fault, which docs/ARCHITECTURE.md "Verdicts" makes inconclusive (exit 3). It
//     still keeps the campaign from being green, and never satisfies a calibration
//     expectation, not even "inconclusive".
//   - A first-task check not reached is not counted apart ("incomplete"): such results
//     are inconclusive by the assurance rules.
//   - The execution id grammar is catalog.IDPattern for each of the four components;
//     the environment is any catalog environment id.
//   - The campaign is complete (Partial false) when every suite of the reporting catalog
//     that is not manual-only appears and every suite is complete; so a manual-only
//     suite never makes `run --all` partial.
//   - generatedAt is the latest finishedAt among the results and history's updatedAt
//     the newest campaign's generatedAt — never the wall clock, so regeneration is
//     byte-identical (History.Upto gives the history as of a campaign).
//   - A result.json that fails strict validation is kept as an invalid candidate: a valid
//     attempt of the same cell wins; without one the cell gets a synthetic result naming
//     the problems.
//   - The evidence manifest keeps {files, leaks, missing} and adds dropped (files the
//     allowlist refused).
//   - The evidence allowlist keeps json, jsonl, log, txt, md and png, and xml/html only
//     when agentproof rendered them; css, js, webm and archives are never kept.
package result

// Package shard splits a campaign's selected cells into N shards of balanced expected
// duration, so that separate machines (CI jobs, Kubernetes pods) can each run one
// shard of the same plan, and checks that what is merged afterwards is the whole of
// that plan.
//
// A plan (Plan, the document `agentproof list --shards N` prints, schema
// agentproof.shards/v1) lists every shard's cells and the definition hash of every
// suite they come from. Its fingerprint is the SHA-256 of the shard count, the suites'
// definition hashes and the cells of each shard in order, so two plans with the same
// fingerprint run the same cells on the same shards. Expected durations come from a
// history (the median duration of each cell's executed attempts); a cell without
// history gets its attempt deadline scaled by the median ratio of observed duration
// to deadline of the cells that have one (the deadline itself when none has).
// Shards are filled longest-processing-time first: cells by expected duration,
// longest first, each to the shard with the least expected time so far.
package shard

// Package report prints a campaign: summary.md (Summary), junit.xml (JUnit), ctrf.json
// (CTRF, the Common Test Report Format), the
// self-contained dashboard.html with its transcript view (Dashboard; index.html is an
// identical copy) and the terminal text of a comparison (CompareText). Every printer
// takes the model of package result as input and returns bytes or writes to an
// io.Writer. Generate is the orchestration: it assembles the campaign from its stored
// result.json files (result.Assemble) and writes campaign.json, the printed files and
// the merged history.json through the evidence guard (result.Guard), deterministically
// and atomically, so `agentproof report` reproduces what `agentproof run` wrote byte
// for byte.
//
// JUnit has one <testsuite> per suite under a <testsuites> root; inconclusive cells
// are <skipped> unless the campaign counts inconclusive as failure.
package report

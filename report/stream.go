package report

import (
	"github.com/agentproof/agentproof/result"
	"github.com/agentproof/agentproof/verdict"
)

// Generate never holds every result of a campaign whole (docs/performance.md "Memory
// of run in N"): each result.json is decoded, sanitised and cut down to its summary
// (summaryResult) as it is read; the counts, summary.md, junit.xml, history.json and
// the dashboard's grid and triage list are made from the summaries; campaign.json and
// the dashboard's cards read each result whole again from its file (resultReader) one
// at a time while they are written.

// summaryResult cuts a sanitised result down to what the campaign's counts, summary.md,
// junit.xml, the history and the dashboard's grid and triage read (dir is its attempt
// directory relative to the campaign directory): the billing summary is computed and
// kept in place of the usage; the matcher results are kept whole for a result that does
// not count as passed (junit.xml lists each) and only the failed ones otherwise (the
// one-line reason quotes them); the evidence list up to the first file that names the
// attempt directory and the first one the dashboard can link (the only ones read);
// runtime facts only as the CLI provenance (name, version, digest); the termination
// only of a result failed for the candidate's fault whose agent's run ended abnormally
// (its summary leads the one-line reason: result.Headline). Other terminations, turn timings,
// leases, trajectories, the workspace diff and the run ids are dropped.
func summaryResult(r *result.Result, dir string) {
	bl := result.BillingOf(r)
	r.Billing, r.Usage, r.RuntimeUsage, r.RunIDs = &bl, nil, nil, nil
	if result.Outcome(r) == verdict.Passed {
		var failed []result.MatcherResult
		for _, m := range r.MatcherResults {
			if !m.Passed {
				failed = append(failed, m)
			}
		}
		r.MatcherResults = failed
	}
	last := -1
	seenDir, seenHref := false, false
	for i, f := range r.Evidence {
		e := dir + "/" + f // as the campaign's results hold it: relative to the campaign directory
		one := &result.Result{Evidence: []string{e}}
		if !seenDir && evidenceDir(one) != "" {
			seenDir, last = true, max(last, i)
		}
		if _, ok := evidenceHref(e); ok && !seenHref {
			seenHref, last = true, max(last, i)
		}
		if seenDir && seenHref {
			break
		}
	}
	r.Evidence = r.Evidence[:last+1]
	var clis []result.RuntimeFacts
	for _, rf := range r.RuntimeFacts {
		if rf.CLIName != "" {
			clis = append(clis, result.RuntimeFacts{CLIName: rf.CLIName, CLIVersion: rf.CLIVersion, BinarySHA256: rf.BinarySHA256})
		}
	}
	r.RuntimeFacts = clis
	if r.FailureClass != verdict.CandidateFailure || result.AbnormalEnd(r.Termination) == "" {
		r.Termination = nil
	}
	r.TurnTimings, r.Leases, r.Trajectories, r.WorkspaceDiff = nil, nil, nil, nil
}

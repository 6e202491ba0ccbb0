package attempt

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentproof/agentproof/campaign"
	"github.com/agentproof/agentproof/catalog"
	"github.com/agentproof/agentproof/environment"
	"github.com/agentproof/agentproof/match"
	"github.com/agentproof/agentproof/redact"
	"github.com/agentproof/agentproof/result"
	"github.com/agentproof/agentproof/verdict"
	"github.com/agentproof/agentproof/worker"
	"github.com/agentproof/agentproof/workspace"
)

// Regraded is one stored attempt graded again (Regrade): the judgement and the
// outcomes of the current case's matchers (then the runtime metadata check), and
// whether the verifier ran again against the kept final workspace.
type Regraded struct {
	Judgement verdict.Judgement
	Matchers  []match.Outcome
	Reran     bool
}

// Regrade grades the attempt stored in src again with cell's current matchers and
// verifier (docs/regrade.md), into the evidence writer ev of a new attempt directory
// (the results root's relative dir): it copies src's evidence (every file but
// result.json, evidence-manifest.json and, when the verifier runs again, the
// verifier's own files), rebuilds the observation from grading.json and
// workspace.FinalFile, runs the verifier's steps again — in the same isolation as the
// live run's verify stage, against a fresh copy of the final workspace — when the
// case has one, grades with the grade stage and judges with the stored Prejudged.
// Nothing in src is written. A fact the stored evidence does not hold leaves the
// matchers that read it not reached, naming what is missing; an attempt without
// grading.json is inconclusive, naming it.
func (x *LocalExecutor) Regrade(ctx context.Context, cell *catalog.Cell, campaignID, dir, src string, ev *campaign.Evidence) Regraded {
	secrets := redact.NewSet()
	g, err := ReadGrading(src)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			err = fmt.Errorf("the stored evidence has no %s (kept by agentproof since regrade exists): the observation its matchers graded is missing", GradingFile)
		}
		copyEvidence(src, ev, secrets, nil)
		return Regraded{Judgement: judgement(verdict.Inconclusive, verdict.PermanentInfrastructure, "regrade: "+err.Error())}
	}
	rc, err := cell.Render(g.Nonce)
	if err != nil {
		copyEvidence(src, ev, secrets, nil)
		return Regraded{Judgement: judgement(verdict.Inconclusive, verdict.PermanentInfrastructure, fmt.Sprintf("regrade: rendering case %s with the attempt's nonce: %v", cell.Case.ID, err))}
	}
	plan := campaign.AttemptPlan{CampaignID: campaignID, Cell: cell, Attempt: 1, Nonce: g.Nonce, Case: rc, Dir: dir}
	obs, unkept := storedObservation(src, g)
	a := &attempt{plan: plan, ev: ev, log: &flowLog{}}
	var fault *verdict.Fault
	out := Regraded{}
	if vf := cell.Case.Verify; vf != nil {
		ws, why, cleanup := x.regradeWorkspace(src, cell)
		defer cleanup()
		if why != "" {
			unkept[match.KindCommand] = why
			copyEvidence(src, ev, secrets, nil)
		} else {
			copyEvidence(src, ev, secrets, verifierFiles)
			v := x.runSteps(ctx, a, ws, vf.Steps, secrets)
			for i := range v.Records {
				v.Records[i].DurationMs = 0 // a regrade records no durations: the same inputs give the same bytes
			}
			writeJSON(ev, secrets, VerifyFile, verifyDocument(v))
			obs.Verifiers, obs.HasVerifiers, fault, out.Reran = v.Steps, v.Ran, v.Fault, true
		}
	} else {
		copyEvidence(src, ev, secrets, nil)
	}
	gr := grade(plan, obs, expectationsOf(plan, x.CLIs, g.Live))
	out.Matchers = notKept(gr.Matchers, unkept)
	pre := g.Prejudged
	for _, f := range []*verdict.Fault{fault, gr.Fault} {
		if f != nil && pre.Decided == nil {
			j := faultJudgement(f)
			pre.Decided = &j
		}
	}
	out.Judgement = pre.With(out.Matchers)
	return out
}

// storedObservation is the observation grading.json kept, with the workspace's file
// contents of the final workspace when it was kept whole; unkept maps the matcher
// kinds whose facts the stored evidence does not hold to what is missing.
func storedObservation(src string, g *Grading) (*match.Observation, map[match.Kind]string) {
	unkept := map[match.Kind]string{}
	if g.Observation == nil {
		return &match.Observation{}, unkept
	}
	obs := *g.Observation
	obs.Files, obs.HasWorkspaceSnapshot = nil, false
	final, why := readFinal(src)
	if final != nil {
		files, err := final.Files()
		if err != nil {
			why = workspace.FinalFile + ": " + err.Error()
		} else {
			obs.Files, obs.HasWorkspaceSnapshot = files, true
		}
	}
	if why != "" {
		for _, k := range []match.Kind{match.KindFileExists, match.KindFileAbsent, match.KindFileExact, match.KindFileContains} {
			unkept[k] = why
		}
	}
	obs.Artifacts = append([]match.Artifact(nil), obs.Artifacts...)
	for i := range obs.Artifacts {
		if obs.Artifacts[i].Downloaded {
			obs.Artifacts[i].Downloaded = false
			unkept[match.KindArtifactExists] = "the artifacts' bytes are not kept in the stored evidence"
		}
	}
	return &obs, unkept
}

// readFinal reads src's final workspace; why says what is missing when it cannot be
// used whole (not kept, unreadable, or truncated at its bound).
func readFinal(src string) (*workspace.Final, string) {
	b, err := os.ReadFile(filepath.Join(src, workspace.FinalFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, "the stored evidence has no " + workspace.FinalFile + " (the final workspace is kept only for a case with a verifier)"
	}
	if err != nil {
		return nil, workspace.FinalFile + ": " + err.Error()
	}
	var f workspace.Final
	if err := json.Unmarshal(b, &f); err != nil || f.Schema != workspace.FinalSchema {
		return nil, fmt.Sprintf("%s does not decode as %s: %v", workspace.FinalFile, workspace.FinalSchema, err)
	}
	if f.Truncated {
		return nil, fmt.Sprintf("%s is truncated at its bound of %d bytes (%s): raise the case's verify finalWorkspaceBytes or run --final-workspace-bytes", workspace.FinalFile, f.MaxBytes, f.Note)
	}
	return &f, ""
}

// regradeWorkspace makes the fresh copy of src's final workspace a regraded verifier
// runs in, in an attempt root of its own (claimed, removed by cleanup), or says why
// the verifier cannot run again here.
func (x *LocalExecutor) regradeWorkspace(src string, cell *catalog.Cell) (p *Provisioned, why string, cleanup func()) {
	cleanup = func() {}
	if prov := environment.ProviderName(cell.Environment.Provider); prov.Leased() {
		return nil, fmt.Sprintf("not run here: the verifier of environment %s runs in the cell's %s lease, which a regrade does not make", cell.Environment.ID, prov), cleanup
	}
	if tampered := storedTampering(src); len(tampered) > 0 {
		return nil, "the verifier is not run again: the agent changed files it depends on (" + strings.Join(tampered, ", ") + ")", cleanup
	}
	final, why := readFinal(src)
	if final == nil {
		return nil, why, cleanup
	}
	root, err := os.MkdirTemp(x.TempDir, worker.AttemptRootPrefix+"regrade-")
	if err != nil {
		return nil, "the verifier cannot run again: " + err.Error(), cleanup
	}
	claim, err := worker.ClaimAttemptRoot(root)
	if err != nil {
		_ = os.RemoveAll(root)
		return nil, "the verifier cannot run again: " + err.Error(), cleanup
	}
	cleanup = func() {
		_ = os.RemoveAll(root)
		_ = claim.Release()
	}
	ws := filepath.Join(root, "workspace")
	if err := final.Restore(ws); err != nil {
		return nil, "the verifier cannot run again: " + workspace.FinalFile + ": " + err.Error(), cleanup
	}
	return &Provisioned{Root: root, Workspace: ws}, "", cleanup
}

// storedTampering is the protected files verify.json of src says the agent changed.
func storedTampering(src string) []string {
	b, err := os.ReadFile(filepath.Join(src, VerifyFile))
	if err != nil {
		return nil
	}
	var doc struct {
		Tampered []string `json:"protectedChanged"`
	}
	if json.Unmarshal(b, &doc) != nil {
		return nil
	}
	return doc.Tampered
}

// verifierFiles reports whether rel is one of the verifier's own evidence files,
// which a verifier run again replaces.
func verifierFiles(rel string) bool {
	return rel == VerifyFile || strings.HasPrefix(rel, "logs/verify/")
}

// copyEvidence copies every evidence file of src into ev (through its guard, byte for
// byte when clean) but result.json, evidence-manifest.json and those skip reports.
func copyEvidence(src string, ev *campaign.Evidence, secrets *redact.Set, skip func(string) bool) {
	_ = filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return nil
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return nil
		}
		rel = filepath.ToSlash(rel)
		if rel == campaign.ResultFile || rel == result.EvidenceManifestFile || (skip != nil && skip(rel)) {
			return nil
		}
		if b, err := os.ReadFile(p); err == nil {
			ev.Write(secrets, rel, b, true)
		}
		return nil
	})
}

// notKept marks the not-reached outcomes of the kinds whose facts the stored evidence
// lacks with what is missing.
func notKept(ms []match.Outcome, unkept map[match.Kind]string) []match.Outcome {
	for i, m := range ms {
		if why, ok := unkept[m.Kind]; ok && m.NotReached {
			ms[i].Detail = "not reached: " + why + " (" + strings.TrimPrefix(m.Detail, "not reached: ") + ")"
			if len(ms[i].Detail) > match.DetailLimit {
				ms[i].Detail = ms[i].Detail[:match.DetailLimit]
			}
		}
	}
	return ms
}

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
	if cell.Case.Verify != nil {
		v, why := x.regradeVerifier(ctx, a, src, secrets)
		if why != "" {
			unkept[match.KindCommand] = why
		} else {
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

// regradeVerifier copies src's evidence into the new attempt directory and runs the
// current case's verifier again against a fresh copy of src's final workspace
// (regradeWorkspace), replacing the verifier's own evidence files; why says what kept
// it from running (then src's evidence is copied whole). A workspace whose lease
// destruction is not confirmed is the verification's fault (cleanup_failure), as in
// a run.
func (x *LocalExecutor) regradeVerifier(ctx context.Context, a *attempt, src string, secrets *redact.Set) (v Verification, why string) {
	p, why, release := x.regradeWorkspace(ctx, src, a.plan)
	if why != "" {
		copyEvidence(src, a.ev, secrets, nil)
		return v, why
	}
	copyEvidence(src, a.ev, secrets, verifierFiles)
	v = x.runSteps(ctx, a, p, a.plan.Cell.Case.Verify.Steps, secrets)
	for i := range v.Records {
		v.Records[i].DurationMs = 0 // a regrade records no durations: the same inputs give the same bytes
	}
	if problem := release(); problem != "" && v.Fault == nil {
		v.Fault = verdict.CleanupFault(fmt.Errorf("the verifier's %s lease of the regrade: %s", p.Lease.lease.Provider, problem))
	}
	writeJSON(a.ev, secrets, VerifyFile, verifyDocument(v))
	return v, ""
}

// regradeWorkspace makes the fresh copy of src's final workspace a regraded verifier
// runs in, in an attempt root of its own (claimed, removed by release): for a cell of
// a leased environment (sandbox, container) in a lease of that environment set up as
// a run does (regradeLease), else in the root's own directory. why says why the
// verifier cannot run again: what the stored evidence lacks, a verifier whose files
// the agent changed, or a machine that cannot provide the cell's environment (not
// run here, with the reason). release destroys the lease and the root; it returns
// the lease's cleanup problem ("" when confirmed or there is no lease).
func (x *LocalExecutor) regradeWorkspace(ctx context.Context, src string, plan campaign.AttemptPlan) (p *Provisioned, why string, release func() string) {
	release = func() string { return "" }
	if tampered := storedTampering(src); len(tampered) > 0 {
		return nil, "the verifier is not run again: the agent changed files it depends on (" + strings.Join(tampered, ", ") + ")", release
	}
	final, why := readFinal(src)
	if final == nil {
		return nil, why, release
	}
	env := plan.Cell.Environment
	leased := needsLease(env)
	if why := x.LeaseNotRunHere[plan.Cell.ID]; leased && why != "" {
		return nil, fmt.Sprintf("not run here: the verifier of environment %s runs in a %s lease, which this machine cannot provide: %s", env.ID, env.Provider, why), release
	}
	root, err := os.MkdirTemp(x.TempDir, worker.AttemptRootPrefix+"regrade-")
	if err != nil {
		return nil, "the verifier cannot run again: " + err.Error(), release
	}
	claim, err := worker.ClaimAttemptRoot(root)
	if err != nil {
		_ = os.RemoveAll(root)
		return nil, "the verifier cannot run again: " + err.Error(), release
	}
	removeRoot := func() {
		_ = os.RemoveAll(root)
		_ = claim.Release()
	}
	p = &Provisioned{Root: root, Workspace: filepath.Join(root, "workspace")}
	if leased {
		if p.Lease, why = x.regradeLease(ctx, plan, root); why == "" {
			p.Workspace = p.Lease.lease.Workspace
		}
	}
	if why == "" {
		why = restoreFinal(final, p)
	}
	release = func() string {
		problem := ""
		if p.Lease != nil {
			_, problem = p.Lease.release(context.WithoutCancel(ctx), nil)
		}
		removeRoot()
		return problem
	}
	if why != "" {
		if problem := release(); problem != "" {
			why += "; and the lease's cleanup: " + problem
		}
		return nil, why, func() string { return "" }
	}
	return p, "", release
}

// regradeLease sets up a lease of plan's environment under root/leases for a
// regraded verifier, as provisionLease does for a run (the environment's pinned
// shape, image, working directory and mounts) but with no endpoint: the verifier
// reaches neither a control plane nor a model. why names the failure.
func (x *LocalExecutor) regradeLease(ctx context.Context, plan campaign.AttemptPlan, root string) (*leaseHold, string) {
	env := plan.Cell.Environment
	dir := filepath.Join(root, "leases")
	if err := os.Mkdir(dir, 0o700); err != nil {
		return nil, "the verifier cannot run again: lease root: " + err.Error()
	}
	prov := leaseProvider(environment.ProviderName(env.Provider), x.Executable)
	mounts, tmpfs, _ := catalog.ContainerMounts(env) // validated at load
	l, err := prov.Setup(ctx, environment.LeaseSpec{EnvironmentID: env.ID, ConfigurationKey: env.ConfigurationKey,
		Shape: ShapeOf(env.Resources), Root: dir, Image: imageOf(env), Workdir: workdirOf(env),
		Owner: "regrade " + plan.CampaignID, WorkspaceMounts: mounts, Tmpfs: tmpfs})
	if err != nil {
		return nil, fmt.Sprintf("the verifier cannot run again: its %s lease setup failed: %v", prov.Name(), err)
	}
	return &leaseHold{provider: prov, lease: l}, ""
}

// restoreFinal writes the final workspace into p's workspace, emptied first (a
// container lease seeds its workspace from the image's working directory: what the
// agent removed must stay removed), and gives it to the lease's agent user when p
// has a lease. It returns what failed, "" when done.
func restoreFinal(final *workspace.Final, p *Provisioned) string {
	if p.Lease != nil {
		entries, err := os.ReadDir(p.Workspace)
		for _, e := range entries {
			if err == nil {
				err = os.RemoveAll(filepath.Join(p.Workspace, e.Name()))
			}
		}
		if err != nil {
			return "the verifier cannot run again: emptying the lease's workspace: " + err.Error()
		}
	}
	if err := final.Restore(p.Workspace); err != nil {
		return "the verifier cannot run again: " + workspace.FinalFile + ": " + err.Error()
	}
	if p.Lease == nil {
		return ""
	}
	disk, ok := p.Lease.provider.(environment.LeaseDisk)
	if !ok {
		return fmt.Sprintf("the verifier cannot run again: provider %s cannot give the workspace to its agent user", p.Lease.provider.Name())
	}
	if err := disk.Own(p.Lease.lease, p.Workspace); err != nil {
		return "the verifier cannot run again: giving the restored workspace to the lease's user: " + err.Error()
	}
	return ""
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

package attempt

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/agentproof/agentproof/match"
	"github.com/agentproof/agentproof/workspace"
)

// GradingFile is the evidence file that keeps what the grade stage graded and what
// the verdict decided apart from the matchers (Grading), so that the attempt can be
// graded again from its evidence (docs/regrade.md).
const GradingFile = "grading.json"

// DefaultFinalWorkspaceBytes is the default bound of LocalExecutor.FinalWorkspaceBytes
// (`run --final-workspace-bytes`).
const DefaultFinalWorkspaceBytes = workspace.DefaultFinalMaxBytes

// GradingSchema tags a Grading document.
const GradingSchema = "agentproof.grading/v1"

// Grading is grading.json: the attempt's nonce (the case's matchers are rendered with
// it), whether it ran against its profile's live provider (`run --live`: the runtime
// metadata check then expects the live provider's host), the observation its matchers graded (nil when nothing was observed), without
// the workspace's file contents (a case with a verifier keeps them in
// workspace.FinalFile) and without the verifier's runs (verify.json; a regrade runs
// the verifier again), and the judgement's parts the matchers cannot change
// (Prejudged). Everything in it passed the evidence guard: secrets are redacted.
type Grading struct {
	Schema      string             `json:"schema"`
	Nonce       string             `json:"nonce"`
	Live        bool               `json:"live,omitempty"`
	Observation *match.Observation `json:"observation"`
	Prejudged   Prejudged          `json:"prejudged"`
}

// writeGrading writes the attempt's grading.json.
func writeGrading(a *attempt, s *Stages, pre Prejudged, live bool) {
	g := Grading{Schema: GradingSchema, Nonce: a.plan.Nonce, Live: live, Prejudged: pre}
	if m := s.Observation.Match; m != nil {
		obs := *m
		obs.Files, obs.Verifiers, obs.HasVerifiers = nil, nil, false
		g.Observation = &obs
	}
	writeJSON(a.ev, s.secrets(), GradingFile, g)
}

// ReadGrading reads the grading.json of the attempt directory dir. Errors: the file
// is missing (wrapping fs.ErrNotExist: an attempt of an agentproof that did not keep
// it), does not decode, or has another schema.
func ReadGrading(dir string) (*Grading, error) {
	b, err := os.ReadFile(filepath.Join(dir, GradingFile))
	if err != nil {
		return nil, err
	}
	var g Grading
	if err := json.Unmarshal(b, &g); err != nil {
		return nil, fmt.Errorf("%s: %w", GradingFile, err)
	}
	if g.Schema != GradingSchema {
		return nil, fmt.Errorf("%s: schema %q, want %q", GradingFile, g.Schema, GradingSchema)
	}
	if g.Nonce == "" {
		return nil, errors.New(GradingFile + ": no nonce")
	}
	return &g, nil
}

package catalog

import (
	"slices"
	"strings"
)

// MatrixJob is one CI job of `agentproof list --matrix-json` (docs/harness.md,
// "Selection"), usable as a GitHub Actions matrix entry or a Kubernetes Indexed Job's work item.
// CredentialName is the profile's credential ("" when it needs none).
type MatrixJob struct {
	ExecutionID    string `json:"executionId"`
	SuiteID        string `json:"suiteId"`
	ProfileID      string `json:"profileId"`
	CredentialName string `json:"envVar"`
	EnvironmentID  string `json:"environmentId"`
	CaseID         string `json:"caseId"`
	TimeoutMinutes int    `json:"timeoutMinutes"`
	NeedsDaytona   bool   `json:"needsDaytona"`
}

// MatrixJSON is the whole --matrix-json document: jobs sorted by executionId, whether
// any needs Daytona, and the sorted execution ids.
type MatrixJSON struct {
	Include      []MatrixJob `json:"include"`
	NeedsDaytona bool        `json:"needsDaytona"`
	ExecutionIDs []string    `json:"executionIds"`
}

// NeedsDaytona reports whether the cell runs in a Daytona sandbox.
func (cell *Cell) NeedsDaytona() bool { return cell.Environment.Provider == "daytona" }

// TimeoutMinutes is the CI job timeout of the cell:
// max(40 for Daytona or 25, ceil((2·(attemptTimeoutMs + 90 s) + 5 min) / 1 min)).
// An 8-minute local case gives 25, a 12-minute case 32.
func (cell *Cell) TimeoutMinutes() int {
	floor := 25
	if cell.NeedsDaytona() {
		floor = 40
	}
	const minute = 60_000
	ms := 2*(cell.AttemptTimeoutMs+90_000) + 5*minute
	mins := int((ms + minute - 1) / minute)
	return max(floor, mins)
}

// Matrix builds the --matrix-json document for cells.
func Matrix(cells []*Cell) MatrixJSON {
	out := MatrixJSON{Include: make([]MatrixJob, 0, len(cells)), ExecutionIDs: make([]string, 0, len(cells))}
	for _, c := range cells {
		out.Include = append(out.Include, MatrixJob{
			ExecutionID:    c.ID,
			SuiteID:        c.Suite.ID,
			ProfileID:      c.Profile.ID,
			CredentialName: c.Profile.Credential,
			EnvironmentID:  c.Environment.ID,
			CaseID:         c.Case.ID,
			TimeoutMinutes: c.TimeoutMinutes(),
			NeedsDaytona:   c.NeedsDaytona(),
		})
		out.NeedsDaytona = out.NeedsDaytona || c.NeedsDaytona()
		out.ExecutionIDs = append(out.ExecutionIDs, c.ID)
	}
	slices.SortFunc(out.Include, func(a, b MatrixJob) int { return strings.Compare(a.ExecutionID, b.ExecutionID) })
	slices.Sort(out.ExecutionIDs)
	return out
}

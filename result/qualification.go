package result

import (
	"cmp"
	"slices"
	"strings"
)

// QualificationSchema tags the runner qualification matrix (`agentproof matrix --json`).
const QualificationSchema = "agentproof.matrix/v1"

// Capability names a group of boundary cases a runner is qualified on.
type Capability string

// The capabilities, in the order the matrix shows them.
const (
	CapBasics      Capability = "basics"
	CapPermissions Capability = "permissions (approve / decline)"
	CapStop        Capability = "stop while pending"
	CapWarm        Capability = "warm session"
	CapQuestions   Capability = "native questions"
	CapSteering    Capability = "steering and follow-ups"
	CapPlans       Capability = "plans"
	CapRecovery    Capability = "recovery (crash, lost acknowledgement)"
	CapFiles       Capability = "files"
	CapJourneys    Capability = "journeys"
	CapOther       Capability = "other"
)

// capabilities lists the capabilities in order with the cases of the default catalog
// each groups; a case not listed is CapOther.
var capabilities = []struct {
	name  Capability
	cases []string
}{
	{CapBasics, []string{"message-marker", "process-exit"}},
	{CapPermissions, []string{"permission-approve-write", "permission-deny-write", "pi-permission-deny-write",
		"app-permission-approve-write", "app-permission-deny-write", "app-command-deny",
		"claude-permission-allow-write", "claude-permission-deny-write", "claude-command-deny"}},
	{CapStop, []string{"pending-permission-stop", "pi-pending-permission-stop", "pi-question-stop", "app-pending-permission-stop", "claude-pending-permission-stop"}},
	{CapWarm, []string{"warm-three-turn", "acp-warm-three-turn", "pi-warm-three-turn"}},
	{CapQuestions, []string{"ask-question", "structured-question-resume", "structured-question-restart-resume", "pi-native-question", "pi-confirm-negative"}},
	{CapSteering, []string{"pi-steering", "pi-follow-up", "blocker-guidance", "app-steering"}},
	{CapPlans, []string{"plan-approve-complete", "plan-revise-accept"}},
	{CapRecovery, []string{"crash-retry", "server-crash-retry", "lost-acknowledgement"}},
	{CapFiles, []string{"instruction-persistence"}},
	{CapJourneys, []string{"chat-handoff", "task-title-untitled", "task-title-control"}},
}

// CapabilityOf is the capability a case belongs to (CapOther when none lists it).
func CapabilityOf(caseID string) Capability {
	for _, c := range capabilities {
		if slices.Contains(c.cases, caseID) {
			return c.name
		}
	}
	return CapOther
}

// capabilityRank orders capabilities as listed, CapOther last.
func capabilityRank(c Capability) int {
	for i, x := range capabilities {
		if x.name == c {
			return i
		}
	}
	return len(capabilities)
}

// Qualification is the runner qualification matrix of a results directory: rows are
// runners (a profile in an environment, with its driver, model and agent CLI), columns
// are cases grouped by capability, and every cell holds the latest state of that
// runner on that case with its history over the campaigns, oldest first.
type Qualification struct {
	Schema       string                `json:"schema"`
	Campaigns    []QualifiedCampaign   `json:"campaigns"`
	Capabilities []QualifiedCapability `json:"capabilities"`
	Runners      []Runner              `json:"runners"`
}

// QualifiedCampaign is a campaign the matrix read: its id and generation time.
type QualifiedCampaign struct {
	CampaignID  string `json:"campaignId"`
	GeneratedAt string `json:"generatedAt"`
}

// QualifiedCapability is one column group: a capability and its cases, sorted.
type QualifiedCapability struct {
	Name  Capability `json:"name"`
	Cases []string   `json:"cases"`
}

// Runner is one row: the profile and environment, and of its latest campaign the
// driver, provider, model and agent CLI (name and version, "" for agentproof's own
// agents), then one cell per case it ran, in column order.
type Runner struct {
	Profile     string          `json:"profile"`
	Environment string          `json:"environment"`
	Driver      string          `json:"driver"`
	Provider    string          `json:"provider"`
	Model       string          `json:"model"`
	CLI         string          `json:"cli,omitempty"`
	CLIVersion  string          `json:"cliVersion,omitempty"`
	Cells       []QualifiedCell `json:"cells"`
}

// QualifiedCell is a runner on one case: the latest state, the CLI version it ran
// with, since when the state holds (the first campaign, and CLI version, of the latest
// run of equal states), the evidence of the latest attempt (relative to the results
// directory), why it was not run here (when it was not) and the history, oldest first.
type QualifiedCell struct {
	Case          string     `json:"case"`
	Capability    Capability `json:"capability"`
	State         CellState  `json:"state"`
	CLIVersion    string     `json:"cliVersion,omitempty"`
	SinceCampaign string     `json:"sinceCampaign"`
	SinceVersion  string     `json:"sinceVersion,omitempty"`
	Evidence      string     `json:"evidence,omitempty"`
	// Reason is why the cell was not run here, when that is its latest state.
	Reason  string           `json:"reason,omitempty"`
	History []QualifiedEntry `json:"history"`
}

// QualifiedEntry is one campaign of a cell's history: the campaign, its suite, the
// state (the worst over the suites that ran the case), the CLI version, the evidence
// directory (relative to the results directory) and, for a cell not run here, why.
type QualifiedEntry struct {
	CampaignID string    `json:"campaignId"`
	Suite      string    `json:"suite"`
	State      CellState `json:"state"`
	CLIVersion string    `json:"cliVersion,omitempty"`
	Evidence   string    `json:"evidence,omitempty"`
	// Reason is why the cell was not run here (StateNotRunHere only): this machine
	// could not provide its environment.
	Reason string `json:"reason,omitempty"`
}

// stateRank orders states for "worst of": failed, then inconclusive and missing, known
// failure, not run here, passed.
var stateRank = map[CellState]int{StateFailed: 0, StateInconclusive: 1, StateMissing: 2, StateKnownFailure: 3, StateNotRunHere: 4, StatePassed: 5}

// Qualify builds the qualification matrix of campaigns (each campaign's results as
// campaign.json holds them; any order: they are sorted by generation time, then id).
func Qualify(campaigns []*Campaign) *Qualification {
	slices.SortStableFunc(campaigns, func(a, b *Campaign) int {
		return cmp.Or(strings.Compare(a.GeneratedAt, b.GeneratedAt), strings.Compare(a.CampaignID, b.CampaignID))
	})
	q := &Qualification{Schema: QualificationSchema, Campaigns: []QualifiedCampaign{}, Capabilities: []QualifiedCapability{}, Runners: []Runner{}}
	rows := map[string]*Runner{}
	cells := map[string]map[string]*QualifiedCell{}
	cases := map[Capability][]string{}
	for _, c := range campaigns {
		q.Campaigns = append(q.Campaigns, QualifiedCampaign{CampaignID: c.CampaignID, GeneratedAt: c.GeneratedAt})
		for i := range c.Results {
			r := &c.Results[i]
			key := r.ProfileID + "\x00" + r.EnvironmentID
			row := rows[key]
			if row == nil {
				row = &Runner{Profile: r.ProfileID, Environment: r.EnvironmentID}
				rows[key], cells[key] = row, map[string]*QualifiedCell{}
			}
			row.describe(r)
			cell := cells[key][r.CaseID]
			if cell == nil {
				cell = &QualifiedCell{Case: r.CaseID, Capability: CapabilityOf(r.CaseID)}
				cells[key][r.CaseID] = cell
				if cap := cell.Capability; !slices.Contains(cases[cap], r.CaseID) {
					cases[cap] = append(cases[cap], r.CaseID)
				}
			}
			cell.add(c.CampaignID, r)
		}
	}
	for cap, cs := range cases {
		slices.Sort(cs)
		q.Capabilities = append(q.Capabilities, QualifiedCapability{Name: cap, Cases: cs})
	}
	slices.SortFunc(q.Capabilities, func(a, b QualifiedCapability) int { return capabilityRank(a.Name) - capabilityRank(b.Name) })
	column := map[string]int{}
	for _, qc := range q.Capabilities {
		for _, cs := range qc.Cases {
			column[cs] = len(column)
		}
	}
	for key, row := range rows {
		for _, cell := range cells[key] {
			cell.settle()
			row.Cells = append(row.Cells, *cell)
		}
		slices.SortFunc(row.Cells, func(a, b QualifiedCell) int { return column[a.Case] - column[b.Case] })
		q.Runners = append(q.Runners, *row)
	}
	slices.SortFunc(q.Runners, func(a, b Runner) int {
		return cmp.Or(strings.Compare(a.Profile, b.Profile), strings.Compare(a.Environment, b.Environment))
	})
	return q
}

// describe takes the runner's driver, provider, model and agent CLI from r (a later
// campaign's result overwrites an earlier one's); a synthetic result (a cell that did
// not run) says nothing about the runner.
func (row *Runner) describe(r *Result) {
	if r.Synthetic {
		return
	}
	row.Provider, row.Model = r.Provider, r.Model
	for _, rf := range r.RuntimeFacts {
		if rf.Driver != "" {
			row.Driver = rf.Driver
		}
		if rf.CLIName != "" {
			row.CLI, row.CLIVersion = rf.CLIName, rf.CLIVersion
		}
	}
}

// add records r, a result of campaign id, in the cell's history: a new entry, or,
// when another suite of the same campaign ran the case too, the worse of both.
func (cell *QualifiedCell) add(id string, r *Result) {
	e := QualifiedEntry{CampaignID: id, Suite: r.SuiteID, State: StateOf(r)}
	if e.State == StateNotRunHere {
		e.Reason = r.NotRunHere
	}
	for _, rf := range r.RuntimeFacts {
		if rf.CLIVersion != "" {
			e.CLIVersion = rf.CLIVersion
		}
	}
	if dir := AttemptDir(r); dir != "" {
		e.Evidence = id + "/" + dir
	}
	if n := len(cell.History); n > 0 && cell.History[n-1].CampaignID == id {
		last := &cell.History[n-1]
		if stateRank[e.State] < stateRank[last.State] {
			e.Suite = last.Suite + "," + e.Suite
			*last = e
		} else {
			last.Suite += "," + e.Suite
		}
		return
	}
	cell.History = append(cell.History, e)
}

// settle sets the cell's latest state, CLI version, evidence and reason, and since
// when the state holds.
func (cell *QualifiedCell) settle() {
	n := len(cell.History)
	last := cell.History[n-1]
	cell.State, cell.CLIVersion, cell.Evidence, cell.Reason = last.State, last.CLIVersion, last.Evidence, last.Reason
	since := n - 1
	for since > 0 && cell.History[since-1].State == last.State {
		since--
	}
	cell.SinceCampaign, cell.SinceVersion = cell.History[since].CampaignID, cell.History[since].CLIVersion
}

// AttemptDir is the directory of r's attempt relative to its campaign directory
// (".../attempt-<n>/", from its first evidence path), "" when it lists no evidence.
func AttemptDir(r *Result) string {
	for _, f := range r.Evidence {
		parts := strings.Split(f, "/")
		for i, p := range parts {
			if strings.HasPrefix(p, "attempt-") {
				return strings.Join(parts[:i+1], "/") + "/"
			}
		}
	}
	return ""
}

package catalog

import (
	"maps"
	"slices"

	"github.com/agentproof/agentproof/canonjson"
	"github.com/agentproof/agentproof/verdict"
)

// Cell is one element of a suite's matrix: one (suite, profile, environment, case),
// independently schedulable.
type Cell struct {
	// ID is "<suite>.<profile>.<environment>.<case>".
	ID          string
	Suite       *Suite
	Profile     *Profile
	Environment *Environment
	Case        *Case
	// Groups is the de-duplicated union of suite, profile, environment and case groups,
	// in first-seen order.
	Groups []string
	// RequiredCredentials is the profile's credential (if any), then the credentials
	// the secret references of its driverConfig env name (Profile.EnvCredentials), then
	// the environment's (if any), without duplicates.
	RequiredCredentials []string
	// AttemptTimeoutMs is the case's attempt timeout for this environment, or the
	// environment's attempt deadline when the case declares none (ms).
	AttemptTimeoutMs int64
	// ExpectedVerdict is "" for an ordinary cell; for a calibration cell it is the
	// verdict (passed, failed, inconclusive) the cell must produce.
	ExpectedVerdict verdict.Verdict
	// CapabilityGrants are the profile's and the case's capabilityGrants, sorted and
	// without duplicates (nil when neither declares any): what the fixture registry
	// grants the cell's agent (docs/journeys.md "Capability grants").
	CapabilityGrants []string
	// LoginFile is the profile's credential when it is a login file (kind login_file:
	// the fixtures stage seeds it into the company-scoped HOME the agent launches with;
	// docs/secrets.md "Login files"), nil otherwise.
	LoginFile *Credential
	// KnownFailure is the cell's entry in the baseline of known failures, nil when it
	// has none.
	KnownFailure *KnownFailure
}

// Cell returns the cell with the given id, or nil.
func (c *Catalog) Cell(id string) *Cell { return c.byCellID[id] }

// Suite returns the suite with the given id, or nil.
func (c *Catalog) Suite(id string) *Suite { return c.suiteByID[id] }

// cellID joins the four id components.
func cellID(suite, profile, env, cs string) string {
	return suite + "." + profile + "." + env + "." + cs
}

// buildMatrix returns the suite's cells before and after exclusions: for
// each profile, each suite environment the profile supports, each case.
// credentials are the catalog's declared credentials by id.
func buildMatrix(s *Suite, expected map[string]verdict.Verdict, credentials map[string]*Credential) (all []string, cells []*Cell) {
	excluded := make(map[string]bool, len(s.ExcludedExecutionIDs))
	for _, id := range s.ExcludedExecutionIDs {
		excluded[id] = true
	}
	for _, p := range s.profiles {
		for _, e := range s.envs {
			if !slices.Contains(p.SupportedEnvironments, e.ID) {
				continue
			}
			for _, cs := range s.cases {
				id := cellID(s.ID, p.ID, e.ID, cs.ID)
				all = append(all, id)
				if excluded[id] {
					continue
				}
				cell := &Cell{
					ID: id, Suite: s, Profile: p, Environment: e, Case: cs,
					Groups:          unionGroups(s.Groups, p.Groups, e.Groups, cs.Groups),
					ExpectedVerdict: expected[p.ID],
				}
				if g := slices.Concat(p.CapabilityGrants, cs.CapabilityGrants); len(g) > 0 {
					slices.Sort(g)
					cell.CapabilityGrants = slices.Compact(g)
				}
				if cr := credentials[p.Credential]; cr != nil && cr.Kind == CredentialKindLoginFile {
					cell.LoginFile = cr
				}
				for _, c := range append(append([]string{p.Credential}, p.EnvCredentials()...), e.Credential) {
					if c != "" && !slices.Contains(cell.RequiredCredentials, c) {
						cell.RequiredCredentials = append(cell.RequiredCredentials, c)
					}
				}
				if t, ok := cs.AttemptTimeoutMs[e.ID]; ok {
					cell.AttemptTimeoutMs = t
				} else {
					cell.AttemptTimeoutMs = e.AttemptDeadlineMs
				}
				cells = append(cells, cell)
			}
		}
	}
	return all, cells
}

func unionGroups(lists ...[]string) []string {
	var out []string
	for _, l := range lists {
		for _, g := range l {
			if !slices.Contains(out, g) {
				out = append(out, g)
			}
		}
	}
	return out
}

// FingerprintJSON returns the exact bytes the suite definition hash is computed over:
// the original harness's definition (SeedFingerprintJSON's members, in its order) followed by one
// member "grading": every field of the suite's cases, profiles and environments that
// decides a verdict (prompts, matchers, reference scripts, timeouts, drivers and their
// configuration, …: everything but labels, descriptions and groups) and its expected
// verdicts (gradingJSON; docs/regressions.md "What the definition covers"). So a change
// of what grades a cell is a boundary of the suite's history, and `run --resume` refuses
// to mix results of two definitions. The suite must come from a loaded catalog.
func (s *Suite) FingerprintJSON() ([]byte, error) {
	return canonjson.Ordered(append(s.seedDefinition(), canonjson.Member{Key: "grading", Value: s.gradingJSON()}))
}

// SeedFingerprintJSON is the original harness's suite definition (its
// fingerprint input), byte-compatible with its JSON.stringify form:
//
//	{id, profiles:[{id, model, qualification:{source, qualificationId}}],
//	 environments:[{id, configurationKey ("default" when unset)}],
//	 tasks:[{id, flow, expectedRunCount, [minimumExpectedRunCount], restartServerBeforeQuestionAnswer}],
//	 excludedExecutionIds:<sorted copy>, metadata:<definitionMetadata or null>}
func (s *Suite) SeedFingerprintJSON() ([]byte, error) {
	return canonjson.Ordered(s.seedDefinition())
}

// seedDefinition is SeedFingerprintJSON's object.
func (s *Suite) seedDefinition() canonjson.Object {
	profiles := make([]any, 0, len(s.profiles))
	for _, p := range s.profiles {
		profiles = append(profiles, canonjson.Object{
			{Key: "id", Value: p.ID},
			{Key: "model", Value: p.Model},
			{Key: "qualification", Value: canonjson.Object{
				{Key: "source", Value: p.ModelQualification.Source},
				{Key: "qualificationId", Value: p.ModelQualification.QualificationID},
			}},
		})
	}
	envs := make([]any, 0, len(s.envs))
	for _, e := range s.envs {
		key := e.ConfigurationKey
		if key == "" {
			key = "default"
		}
		envs = append(envs, canonjson.Object{{Key: "id", Value: e.ID}, {Key: "configurationKey", Value: key}})
	}
	tasks := make([]any, 0, len(s.cases))
	for _, cs := range s.cases {
		t := canonjson.Object{
			{Key: "id", Value: cs.ID},
			{Key: "flow", Value: string(cs.Flow)},
			{Key: "expectedRunCount", Value: float64(cs.ExpectedRunCount)},
		}
		if cs.MinimumExpectedRunCount != nil {
			t = append(t, canonjson.Member{Key: "minimumExpectedRunCount", Value: float64(*cs.MinimumExpectedRunCount)})
		}
		t = append(t, canonjson.Member{Key: "restartServerBeforeQuestionAnswer", Value: cs.RestartServerBeforeAnswer})
		tasks = append(tasks, t)
	}
	excluded := slices.Clone(s.ExcludedExecutionIDs)
	if excluded == nil {
		excluded = []string{}
	}
	slices.SortFunc(excluded, compareUTF16)
	var metadata any
	if s.DefinitionMetadata != nil {
		metadata = s.DefinitionMetadata.Value
		if s.DefinitionMetadata.Value == nil {
			metadata = canonjson.Object{}
		}
	}
	return canonjson.Object{
		{Key: "id", Value: s.ID},
		{Key: "profiles", Value: profiles},
		{Key: "environments", Value: envs},
		{Key: "tasks", Value: tasks},
		{Key: "excludedExecutionIds", Value: excluded},
		{Key: "metadata", Value: metadata},
	}
}

// compareUTF16 orders strings as JavaScript's default Array.prototype.sort does: by
// UTF-16 code units.
func compareUTF16(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	ua, ub := utf16Units(ra), utf16Units(rb)
	return slices.Compare(ua, ub)
}

func utf16Units(rs []rune) []uint16 {
	out := make([]uint16, 0, len(rs))
	for _, r := range rs {
		if r >= 0x10000 {
			r -= 0x10000
			out = append(out, uint16(0xD800+(r>>10)), uint16(0xDC00+(r&0x3FF)))
			continue
		}
		out = append(out, uint16(r))
	}
	return out
}

// fingerprint computes the suite definition hash: lower-case hex SHA-256 of
// FingerprintJSON.
func fingerprint(s *Suite) (string, error) {
	b, err := s.FingerprintJSON()
	if err != nil {
		return "", err
	}
	return canonjson.SHA256Hex(b), nil
}

// SelectionFingerprint is the fallback fingerprint of a suite the reporting catalog does
// not know: "selection-" + SHA-256 of the JSON array of the suite's expected
// cell ids, sorted.
func SelectionFingerprint(cellIDs []string) string {
	ids := slices.Clone(cellIDs)
	slices.SortFunc(ids, compareUTF16)
	b, err := canonjson.Ordered(ids)
	if err != nil {
		panic(err) // a []string always encodes
	}
	return "selection-" + canonjson.SHA256Hex(b)
}

// ContentHashJSON returns the bytes a ranking's contentHash is computed over: the
// JSON.stringify form of its models with keys rank, id, name, supportedParameters.
func (r *Ranking) ContentHashJSON() ([]byte, error) {
	models := make([]any, 0, len(r.Models))
	for _, m := range r.Models {
		params := m.SupportedParameters
		if params == nil {
			params = []string{}
		}
		models = append(models, canonjson.Object{
			{Key: "rank", Value: float64(m.Rank)},
			{Key: "id", Value: m.ID},
			{Key: "name", Value: m.Name},
			{Key: "supportedParameters", Value: params},
		})
	}
	return canonjson.Ordered(models)
}

// ComputeContentHash returns the lower-case hex SHA-256 of ContentHashJSON.
func (r *Ranking) ComputeContentHash() (string, error) {
	b, err := r.ContentHashJSON()
	if err != nil {
		return "", err
	}
	return canonjson.SHA256Hex(b), nil
}

// EnvCredentials are the credentials the secret references of the profile's
// driverConfig env name ({type: secret_ref, secretId: <credential>}), sorted by
// variable name, without duplicates. A reference by UUID names a stored secret, not a
// credential, and is left out. The campaign loads each one and stores it as a secret
// of the attempt's instance (catalog/secrets.go).
func (p *Profile) EnvCredentials() []string {
	env, _ := p.DriverConfig["env"].(map[string]any)
	var out []string
	for _, name := range slices.Sorted(maps.Keys(env)) {
		ref, _ := env[name].(map[string]any)
		id, _ := ref["secretId"].(string)
		if id == "" || uuidRE().MatchString(id) || slices.Contains(out, id) {
			continue
		}
		out = append(out, id)
	}
	return out
}

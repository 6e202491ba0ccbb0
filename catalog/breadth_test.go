package catalog

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// validSnapshot is a sealed five-model snapshot the table cases break.
func validSnapshot(t *testing.T) Snapshot {
	t.Helper()
	s, err := EmbeddedSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	out := *s
	out.Models = append([]SnapshotModel(nil), s.Models...)
	return out
}

func encode(t *testing.T, s Snapshot) []byte {
	t.Helper()
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestParseSnapshotRule is the snapshot rule (exactly five unique, available,
// tool-capable models, verified content hash): each broken snapshot is refused with a
// problem naming what is wrong.
func TestParseSnapshotRule(t *testing.T) {
	t.Parallel()
	no := false
	cases := []struct {
		name   string
		edit   func(s *Snapshot)
		raw    string
		want   []string
		nohash bool
	}{
		{name: "four models", edit: func(s *Snapshot) { s.Models = s.Models[:4]; s.ContentHash = "" }, want: []string{"has 4 models; a breadth snapshot holds exactly 5"}},
		{name: "six models", edit: func(s *Snapshot) {
			m := s.Models[0]
			m.Rank, m.ID = 6, "extra/model"
			s.Models = append(s.Models, m)
			s.ContentHash = ""
		}, want: []string{"has 6 models"}},
		{name: "duplicate", edit: func(s *Snapshot) { s.Models[2].ID = s.Models[0].ID; s.ContentHash = "" }, want: []string{`duplicate model id "deepseek/deepseek-v4-flash-0731" (also rank 1)`}},
		{name: "duplicate profile id", edit: func(s *Snapshot) { s.Models[2].ID = "DeepSeek/deepseek-v4-flash:0731"; s.ContentHash = "" }, want: []string{"gives the same profile id openrouter-deepseek-deepseek-v4-flash-0731 as rank 1"}},
		{name: "not tool-capable", edit: func(s *Snapshot) { s.Models[1].SupportedParameters = []string{"max_tokens"}; s.ContentHash = "" }, want: []string{`models[1] (xiaomi/mimo-v2.5): not tool-capable: supportedParameters [max_tokens] lack "tools"`}},
		{name: "not available", edit: func(s *Snapshot) { s.Models[3].Available = &no }, want: []string{"not available"}},
		{name: "availability unknown", edit: func(s *Snapshot) { s.Models[3].Available = nil }, want: []string{"available is required"}},
		{name: "hash mismatch", edit: func(s *Snapshot) { s.Models[4].Name = "Renamed after review" }, want: []string{"contentHash", "does not match its models", "the ranking changed after review"}},
		{name: "hash missing", edit: func(s *Snapshot) { s.ContentHash = "" }, want: []string{"contentHash is required"}},
		{name: "hash missing is fine for a new ranking", edit: func(s *Snapshot) { s.ContentHash = "" }, nohash: true},
		{name: "ranks out of order", edit: func(s *Snapshot) { s.Models[0].Rank, s.Models[1].Rank = 2, 1; s.ContentHash = "" }, want: []string{"has rank 2; ranks must be 1, 2, … in order"}},
		{name: "source and time", edit: func(s *Snapshot) {
			s.SourceURL = "http://example.invalid/x"
			s.CapturedAt = "yesterday"
			s.ContentHash = ""
		}, want: []string{"must be an https URL", `capturedAt "yesterday" must be an RFC 3339 time`}},
		{name: "several problems at once", edit: func(s *Snapshot) {
			s.Models = s.Models[:4]
			s.Models[0].SupportedParameters = nil
			s.Schema = "x"
			s.ContentHash = ""
		}, want: []string{"has 4 models", "not tool-capable", `schema is "x"`}},
		{name: "unknown field", raw: `{"schema":"agentproof.openrouter-ranking/v1","extra":1}`, want: []string{`unknown field "extra"`}},
		{name: "not JSON", raw: `models: []`, want: []string{"not a snapshot JSON object"}},
		{name: "trailing data", raw: `{} {}`, want: []string{"trailing data"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var data []byte
			if tc.raw != "" {
				data = []byte(tc.raw)
			} else {
				s := validSnapshot(t)
				tc.edit(&s)
				data = encode(t, s)
			}
			_, err := ParseSnapshot("new.json", data, !tc.nohash)
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			var se *SnapshotError
			if !errors.As(err, &se) {
				t.Fatalf("err = %v, want a *SnapshotError", err)
			}
			if !strings.HasPrefix(err.Error(), "snapshot new.json: ") {
				t.Errorf("error %q does not name the file", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

// TestSnapshotSeal: sealing computes the hash over the models; the sealed bytes parse
// with the hash required, and a sealed snapshot re-sealed is byte-identical.
func TestSnapshotSeal(t *testing.T) {
	t.Parallel()
	s := validSnapshot(t)
	s.ContentHash = ""
	s.Models[0].Name = "Another name"
	out, err := s.Seal()
	if err != nil {
		t.Fatal(err)
	}
	sealed, err := ParseSnapshot("sealed.json", out, true)
	if err != nil {
		t.Fatal(err)
	}
	if sealed.ContentHash == "" || sealed.ContentHash == validSnapshot(t).ContentHash {
		t.Errorf("hash %q not recomputed", sealed.ContentHash)
	}
	again, err := sealed.Seal()
	if err != nil || string(again) != string(out) {
		t.Errorf("re-seal differs (err %v)", err)
	}
	if !strings.Contains(string(out), `"name": "DeepSeek: V4 Flash <0731>"`) && !strings.Contains(string(out), "Another name") {
		t.Errorf("sealed file escapes HTML or lost names:\n%s", out)
	}
}

// TestBreadthProfileID is the slug rule of breadth profile ids.
func TestBreadthProfileID(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"nvidia/nemotron-3-ultra-550b-a55b:free": "openrouter-nvidia-nemotron-3-ultra-550b-a55b-free",
		"deepseek/deepseek-v4-flash-0731":        "openrouter-deepseek-deepseek-v4-flash-0731",
		"xiaomi/mimo-v2.5":                       "openrouter-xiaomi-mimo-v2-5",
		"--Weird__Case//ID--":                    "openrouter-weird-case-id",
		"a..b":                                   "openrouter-a-b",
	} {
		if got := BreadthProfileID(in); got != want {
			t.Errorf("BreadthProfileID(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestBreadthProfilesGenerated: the default catalog holds exactly one generated profile
// per snapshot model (none written by hand), tied to its rank, and both breadth suites.
func TestBreadthProfilesGenerated(t *testing.T) {
	t.Parallel()
	c, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	s, err := EmbeddedSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]*Profile{}
	for _, p := range c.Profiles {
		if strings.HasPrefix(p.ID, BreadthProfilePrefix) {
			byID[p.ID] = p
		}
	}
	if len(byID) != BreadthModelCount {
		t.Fatalf("%d breadth profiles, want %d", len(byID), BreadthModelCount)
	}
	for _, m := range s.Models {
		p := byID[BreadthProfileID(m.ID)]
		if p == nil {
			t.Fatalf("no profile for %s", m.ID)
		}
		if p.Ranking == nil || p.Ranking.Rank != m.Rank || p.Ranking.CanonicalModelID != m.ID || p.Ranking.SnapshotID != s.SnapshotID {
			t.Errorf("%s: ranking %+v", p.ID, p.Ranking)
		}
		if p.Model != m.ID || p.DriverConfig["model"] != m.ID || p.ModelQualification.Source != BreadthQualificationSource {
			t.Errorf("%s: model %q, driverConfig model %v, qualification %+v", p.ID, p.Model, p.DriverConfig["model"], p.ModelQualification)
		}
		if want := "#" + string(rune('0'+m.Rank)) + " " + m.Name; p.Label != want {
			t.Errorf("%s: label %q, want %q", p.ID, p.Label, want)
		}
	}
	live, offline := c.suiteByID[BreadthLiveSuite], c.suiteByID[BreadthOfflineSuite]
	if live == nil || !live.ManualOnly || offline == nil || offline.ManualOnly {
		t.Fatalf("breadth suites: live %+v offline %+v", live, offline)
	}
	if !strings.Contains(offline.Description, "never a qualification") {
		t.Errorf("offline suite description does not say it is no qualification: %q", offline.Description)
	}
	// The default profiles file names no breadth profile by hand.
	b, err := defaultFiles.ReadFile("default/profiles.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), BreadthProfilePrefix) {
		t.Error("default/profiles.yaml declares a breadth profile by hand; they are generated from the snapshot")
	}
}

package campaign

import (
	"bytes"
	"errors"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"
	"testing/iotest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentproof/agentproof/catalog"
)

const markerCell = "core-compatibility.reference.local.message-marker"

var (
	defaultCatalogOnce sync.Once
	defaultCatalog     *catalog.Catalog
	defaultCatalogErr  error
)

// loadDefault loads the embedded default catalog once for all tests.
func loadDefault(t *testing.T) *catalog.Catalog {
	t.Helper()
	defaultCatalogOnce.Do(func() { defaultCatalog, defaultCatalogErr = catalog.Default() })
	if defaultCatalogErr != nil {
		t.Fatal(defaultCatalogErr)
	}
	return defaultCatalog
}

func TestSanitizeCampaignID(t *testing.T) {
	t.Parallel()
	tests := []struct {
		raw, want, wantErr string
	}{
		{raw: "nightly", want: "nightly"},
		{raw: "nightly 2026/11/30", want: "nightly-2026-11-30"},
		{raw: "--ci run #42--", want: "ci-run-42"},
		{raw: "a:b.c_d", want: "a-b.c_d"},
		{raw: "über–run", want: "ber-run"},
		{raw: "a..b", want: "a..b"},
		{raw: "local-2026-11-30T04-10-47-123Z", want: "local-2026-11-30T04-10-47-123Z"},
		{raw: "", wantErr: "has no character"},
		{raw: "///", wantErr: "has no character"},
		{raw: "..", wantErr: "cannot name a directory"},
		{raw: "-.-", want: ".", wantErr: "cannot name a directory"},
		{raw: "/../", wantErr: "cannot name a directory"},
		{raw: strings.Repeat("x", MaxCampaignIDLength), want: strings.Repeat("x", MaxCampaignIDLength)},
		{raw: strings.Repeat("x", MaxCampaignIDLength+1), wantErr: "at most 128"},
	}
	for _, tt := range tests {
		t.Run(tt.raw, func(t *testing.T) {
			t.Parallel()
			got, err := SanitizeCampaignID(tt.raw)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("SanitizeCampaignID(%q) = %q, %v; want error %q", tt.raw, got, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("SanitizeCampaignID(%q) = %q, %v; want %q", tt.raw, got, err, tt.want)
			}
		})
	}
}

// FuzzSanitizeCampaignID checks that an accepted id is a safe single path element made
// of allowed characters and that sanitising is idempotent.
func FuzzSanitizeCampaignID(f *testing.F) {
	for _, s := range []string{"nightly", "..", "a/b", "ü", "-x-", "local-2026-11-30T04:10:47.123Z"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		id, err := SanitizeCampaignID(raw)
		if err != nil {
			return
		}
		if id == "." || id == ".." || filepath.Base(id) != id || strings.Trim(id, "-") != id ||
			campaignIDInvalid().MatchString(id) || len(id) > MaxCampaignIDLength {
			t.Fatalf("SanitizeCampaignID(%q) = %q, not a safe id", raw, id)
		}
		if again, err := SanitizeCampaignID(id); err != nil || again != id {
			t.Fatalf("not idempotent: %q → %q, %v", id, again, err)
		}
	})
}

func TestDefaultCampaignID(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 30, 5, 10, 47, 123_456_789, time.FixedZone("CET", 3600))
	got, err := DefaultCampaignID(at, bytes.NewReader([]byte{0x5f, 0x0c, 0x9a, 0x3e}))
	if err != nil {
		t.Fatal(err)
	}
	if want := "local-2026-11-30T04-10-47-123Z-5f0c9a3e"; got != want {
		t.Errorf("DefaultCampaignID = %q, want %q", got, want)
	}
	if s, err := SanitizeCampaignID(got); err != nil || s != got {
		t.Errorf("the default id is not already sanitised: %q, %v", s, err)
	}
	if _, err := DefaultCampaignID(at, bytes.NewReader(nil)); err == nil {
		t.Error("DefaultCampaignID with a failing random source: no error")
	}
}

// TestDefaultCampaignIDsDiffer: two plans made in the same millisecond (two runs
// started at once into one results directory) get different campaign ids.
func TestDefaultCampaignIDsDiffer(t *testing.T) {
	t.Parallel()
	c := loadDefault(t)
	now := time.Date(2026, 11, 30, 4, 10, 47, 0, time.UTC)
	ids := map[string]bool{}
	for range 2 {
		p, err := NewPlan(c, catalog.Selector{All: true}, Options{Now: func() time.Time { return now }})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(p.CampaignID, "local-2026-11-30T04-10-47-000Z-") {
			t.Errorf("campaign id %q", p.CampaignID)
		}
		ids[p.CampaignID] = true
	}
	if len(ids) != 2 {
		t.Errorf("two plans in the same millisecond share campaign id %v", ids)
	}
}

func TestNewPlanErrors(t *testing.T) {
	t.Parallel()
	c := loadDefault(t)
	_, wantUnknown := c.Select(catalog.Selector{Suites: []string{"nope"}, Cases: []string{"ghost"}})
	_, wantExclusive := c.Select(catalog.Selector{All: true, IDs: []string{markerCell}})
	_, wantZero := c.Select(catalog.Selector{Suites: []string{"calibration"}, Cases: []string{"message-marker"}})
	for _, e := range []error{wantUnknown, wantExclusive, wantZero} {
		if e == nil {
			t.Fatal("the catalog accepted a selector the test expects it to refuse")
		}
	}
	tests := []struct {
		name    string
		sel     catalog.Selector
		opts    Options
		wantSel string   // a *catalog.SelectionError with exactly this message
		wantOpt []string // an *OptionsError with these problems
	}{
		{name: "no selector", sel: catalog.Selector{}, wantSel: catalog.ErrNoSelector},
		{name: "listing is not a selector", sel: catalog.Selector{Listing: true}, wantSel: catalog.ErrNoSelector},
		{name: "unknown values", sel: catalog.Selector{Suites: []string{"nope"}, Cases: []string{"ghost"}}, wantSel: wantUnknown.Error()},
		{name: "exclusive flags", sel: catalog.Selector{All: true, IDs: []string{markerCell}}, wantSel: wantExclusive.Error()},
		{name: "zero matches", sel: catalog.Selector{Suites: []string{"calibration"}, Cases: []string{"message-marker"}}, wantSel: wantZero.Error()},
		{name: "every option problem together", sel: catalog.Selector{All: true},
			opts: Options{CampaignID: "///", MaxParallel: -2, MaxAutomaticRetries: 2},
			wantOpt: []string{`campaign id "///" has no character from [A-Za-z0-9_.-]`,
				"invalid value \"-2\" for --max-parallel: want a whole number ≥ 1", "--max-automatic-retries must be 0 or 1, not 2"}},
		{name: "options are checked before the selection", sel: catalog.Selector{},
			opts: Options{MaxAutomaticRetries: -1}, wantOpt: []string{"--max-automatic-retries must be 0 or 1, not -1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p, err := NewPlan(c, tt.sel, tt.opts)
			if p != nil {
				t.Errorf("NewPlan returned a plan with error %v", err)
			}
			if tt.wantSel != "" {
				var se *catalog.SelectionError
				if !errors.As(err, &se) || se.Message != tt.wantSel {
					t.Fatalf("err = %T %v, want *catalog.SelectionError %q", err, err, tt.wantSel)
				}
				return
			}
			var oe *OptionsError
			if !errors.As(err, &oe) {
				t.Fatalf("err = %T %v, want *OptionsError", err, err)
			}
			if diff := cmp.Diff(tt.wantOpt, oe.Problems); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNewPlanSelectsLikeList(t *testing.T) {
	t.Parallel()
	c := loadDefault(t)
	now := time.Date(2026, 11, 30, 4, 10, 47, 0, time.UTC)
	for _, sel := range []catalog.Selector{
		{All: true},
		{Suites: []string{"grader-calibration"}, Profiles: []string{"nop", "wrong"}},
		{IDs: []string{markerCell, "calibration.fixture-hang.local.process-exit"}},
	} {
		p, err := NewPlan(c, sel, Options{Now: func() time.Time { return now }, MaxAutomaticRetries: 1})
		if err != nil {
			t.Fatal(err)
		}
		want, err := c.Select(sel)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(cellIDs(want), cellIDs(p.Cells)); diff != "" {
			t.Errorf("%+v: cells (-list +plan):\n%s", sel, diff)
		}
		if !regexp.MustCompile(`^local-2026-11-30T04-10-47-000Z-[0-9a-f]{8}$`).MatchString(p.CampaignID) {
			t.Errorf("campaign id = %q", p.CampaignID)
		}
		if p.MaxParallel != runtime.NumCPU() || p.MaxAutomaticRetries != 1 {
			t.Errorf("max parallel %d, retries %d; want %d, 1", p.MaxParallel, p.MaxAutomaticRetries, runtime.NumCPU())
		}
	}
}

func cellIDs(cells []*catalog.Cell) []string {
	var out []string
	for _, c := range cells {
		out = append(out, c.ID)
	}
	return out
}

func TestAttemptSeededNonces(t *testing.T) {
	t.Parallel()
	c := loadDefault(t)
	seed, other := int64(42), int64(43)
	all, err := NewPlan(c, catalog.Selector{All: true}, Options{CampaignID: "seeded", Seed: &seed})
	if err != nil {
		t.Fatal(err)
	}
	one, err := NewPlan(c, catalog.Selector{IDs: []string{markerCell}}, Options{CampaignID: "other", Seed: &seed})
	if err != nil {
		t.Fatal(err)
	}
	reseeded, err := NewPlan(c, catalog.Selector{IDs: []string{markerCell}}, Options{CampaignID: "seeded", Seed: &other})
	if err != nil {
		t.Fatal(err)
	}
	cell := c.Cell(markerCell)
	nonce := func(p *Plan, cell *catalog.Cell, n int) string {
		t.Helper()
		a, err := p.Attempt(cell, n)
		if err != nil {
			t.Fatal(err)
		}
		if !catalog.NoncePattern().MatchString(a.Nonce) || len(a.Nonce) != 16 {
			t.Fatalf("nonce %q is not 16 hex digits", a.Nonce)
		}
		return a.Nonce
	}
	n1 := nonce(all, cell, 1)
	if got := nonce(one, cell, 1); got != n1 {
		t.Errorf("same seed, same cell, different selection: %q vs %q", got, n1)
	}
	if got := nonce(all, cell, 1); got != n1 {
		t.Errorf("not deterministic: %q vs %q", got, n1)
	}
	seen := map[string]string{n1: "cell attempt 1"}
	for what, got := range map[string]string{
		"attempt 2":       nonce(all, cell, 2),
		"another seed":    nonce(reseeded, cell, 1),
		"another cell":    nonce(all, all.Cells[0], 1),
		"another attempt": nonce(all, all.Cells[0], 2),
	} {
		if prev, dup := seen[got]; dup {
			t.Errorf("%s repeats the nonce of %s: %q", what, prev, got)
		}
		seen[got] = what
	}
}

func TestAttemptRendersTheCase(t *testing.T) {
	t.Parallel()
	c := loadDefault(t)
	seed := int64(7)
	p, err := NewPlan(c, catalog.Selector{IDs: []string{markerCell}}, Options{CampaignID: "render", Seed: &seed})
	if err != nil {
		t.Fatal(err)
	}
	cell := p.Cells[0]
	a, err := p.Attempt(cell, 2)
	if err != nil {
		t.Fatal(err)
	}
	want, err := cell.Render(a.Nonce)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, a.Case); diff != "" {
		t.Errorf("rendered case (-cell.Render +plan):\n%s", diff)
	}
	if a.Case.Marker == "" || !strings.Contains(a.Case.Marker, a.Nonce) {
		t.Errorf("marker %q does not carry the nonce %q", a.Case.Marker, a.Nonce)
	}
	if wantDir := filepath.Join("render", "core-compatibility", "reference", "local", "message-marker", "attempt-2"); a.Dir != wantDir {
		t.Errorf("Dir = %q, want %q", a.Dir, wantDir)
	}
	if a.CampaignID != "render" || a.Attempt != 2 || a.Cell != cell {
		t.Errorf("plan fields: %+v", a)
	}
	if a.AttemptTimeout != time.Duration(cell.AttemptTimeoutMs)*time.Millisecond || a.AttemptTimeout <= 0 {
		t.Errorf("AttemptTimeout = %v for %d ms", a.AttemptTimeout, cell.AttemptTimeoutMs)
	}
	if a.TurnTimeout != time.Duration(cell.Case.TurnTimeoutMs)*time.Millisecond {
		t.Errorf("TurnTimeout = %v for %d ms", a.TurnTimeout, cell.Case.TurnTimeoutMs)
	}
	if _, err := p.Attempt(cell, 0); err == nil {
		t.Error("attempt 0 accepted")
	}
}

func TestAttemptRandomNonces(t *testing.T) {
	t.Parallel()
	c := loadDefault(t)
	sel := catalog.Selector{IDs: []string{markerCell}}
	t.Run("from the injected source", func(t *testing.T) {
		t.Parallel()
		src := bytes.NewReader([]byte{0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef, 0xfe, 0xdc, 0xba, 0x98, 0x76, 0x54, 0x32, 0x10})
		p, err := NewPlan(c, sel, Options{CampaignID: "r", Random: src})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for n := 1; n <= 2; n++ {
			a, err := p.Attempt(p.Cells[0], n)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, a.Nonce)
		}
		if diff := cmp.Diff([]string{"0123456789abcdef", "fedcba9876543210"}, got); diff != "" {
			t.Errorf("nonces (-want +got):\n%s", diff)
		}
	})
	t.Run("a failing source is an error", func(t *testing.T) {
		t.Parallel()
		p, err := NewPlan(c, sel, Options{CampaignID: "r", Random: iotest.ErrReader(errors.New("no entropy"))})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.Attempt(p.Cells[0], 1); err == nil || !strings.Contains(err.Error(), "no entropy") {
			t.Errorf("err = %v, want the source's error", err)
		}
	})
	t.Run("crypto source gives distinct nonces", func(t *testing.T) {
		t.Parallel()
		p, err := NewPlan(c, sel, Options{CampaignID: "r"})
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		for n := 1; n <= 50; n++ {
			a, err := p.Attempt(p.Cells[0], n)
			if err != nil {
				t.Fatal(err)
			}
			if seen[a.Nonce] || !catalog.NoncePattern().MatchString(a.Nonce) {
				t.Fatalf("nonce %q repeated or malformed", a.Nonce)
			}
			seen[a.Nonce] = true
		}
	})
}

package campaign

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentproof/agentproof/catalog"
	"github.com/agentproof/agentproof/result"
	"github.com/agentproof/agentproof/verdict"
)

// Options configure a campaign (the flags of `agentproof run`).
type Options struct {
	// CampaignID names the campaign and its results directory; "" means
	// DefaultCampaignID(Now(), Random). It is sanitised with SanitizeCampaignID.
	CampaignID string
	// Seed, when set (--seed N), makes every attempt's nonce a function of the seed, the
	// cell id and the attempt number; otherwise nonces are random.
	Seed *int64
	// MaxParallel bounds the attempts running at once (--max-parallel); 0 means the
	// number of CPUs. Negative values are invalid.
	MaxParallel int
	// MaxAutomaticRetries is 0 or 1 (--max-automatic-retries; the CLI's default is 1).
	MaxAutomaticRetries int
	// Repeat is how many times every selected cell runs (--repeat; 0 means 1), each
	// repetition an independent series of attempts (docs/ARCHITECTURE.md "Repeats").
	// At most MaxRepeat.
	Repeat int
	// Now is the clock (default time.Now); it names the default campaign and stamps
	// progress events.
	Now func() time.Time
	// Random is the source of random nonces when Seed is nil, and of the default
	// campaign id's suffix (default crypto/rand).
	Random io.Reader
	// NewDefinition (`run --resume/--rerun-failed --new-definition`) lets a resumed
	// campaign continue although a suite's definition changed since it started: the
	// changed suite starts a new definition in the campaign (a boundary: every one of
	// its cells runs again, none of its stored results is kept) instead of mixing
	// results of two definitions.
	NewDefinition bool
}

// OptionsError lists every invalid option together; commands map it to exit code 2.
type OptionsError struct {
	Problems []string
}

// Error joins the problems with "; ".
func (e *OptionsError) Error() string { return strings.Join(e.Problems, "; ") }

// MaxRepeat bounds --repeat: the repetitions of one cell in one campaign.
const MaxRepeat = 1000

// MaxCampaignIDLength is the longest campaign id accepted, in bytes (it names a
// directory).
const MaxCampaignIDLength = 128

var campaignIDInvalid = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`[^A-Za-z0-9_.-]+`) })

// SanitizeCampaignID returns raw with every run of characters outside [A-Za-z0-9_.-]
// replaced by "-" and leading and trailing dashes trimmed.
// It returns an error when nothing usable remains, when the result is "." or ".." (it
// names a directory) or when it is longer than MaxCampaignIDLength bytes; the last two
// are agentproof additions.
func SanitizeCampaignID(raw string) (string, error) {
	id := strings.Trim(campaignIDInvalid().ReplaceAllString(raw, "-"), "-")
	switch {
	case id == "":
		return "", fmt.Errorf("campaign id %q has no character from [A-Za-z0-9_.-]", raw)
	case id == "." || id == "..":
		return "", fmt.Errorf("campaign id %q cannot name a directory", raw)
	case len(id) > MaxCampaignIDLength:
		return "", fmt.Errorf("campaign id is %d bytes long after sanitising; at most %d are allowed", len(id), MaxCampaignIDLength)
	}
	return id, nil
}

// DefaultCampaignID is "local-" followed by t's UTC ISO 8601 timestamp with
// milliseconds, ':' and '.' replaced by '-', then "-" and 8 lower-case hex
// digits (4 bytes read from random), e.g. "local-2026-11-30T04-10-47-123Z-5f0c9a3e".
// The suffix is an agentproof addition: two runs started in the same millisecond get
// different campaigns instead of sharing (and clobbering) one results directory. The
// result needs no sanitising. Error: random fails.
func DefaultCampaignID(t time.Time, random io.Reader) (string, error) {
	var b [4]byte
	if _, err := io.ReadFull(random, b[:]); err != nil {
		return "", fmt.Errorf("campaign: reading the random campaign id suffix: %w", err)
	}
	ts := t.UTC().Format("2006-01-02T15:04:05.000Z")
	return "local-" + strings.NewReplacer(":", "-", ".", "-").Replace(ts) + "-" + hex.EncodeToString(b[:]), nil
}

// Plan is a validated campaign: its id, the selected cells in matrix order and what
// renders an attempt of any of them. It is safe for concurrent use.
type Plan struct {
	CampaignID string
	// Cells are the selected cells in matrix order.
	Cells []*catalog.Cell
	// Repeat is the number of repetitions of every cell (at least 1).
	Repeat int
	// Units are what the scheduler runs, in order: every cell's repetitions 1..Repeat
	// (each starting at attempt 1), or, for a resumed campaign (Plan.Resume), the
	// repetitions that still need a result.
	Units []Unit
	// Kept are the repetitions of a resumed campaign whose stored results count and
	// are kept (they run no attempt; the campaign's summary counts them).
	Kept                []Kept
	MaxParallel         int
	MaxAutomaticRetries int
	// CatalogSources is the catalog the plan's cells come from, recorded in plan.json
	// (nil: not recorded); the caller sets it.
	CatalogSources *result.CatalogSources
	// Shard is the shard of a shard plan the campaign runs (nil: not a shard); the
	// caller sets it, and it is recorded in plan.json.
	Shard *result.ShardRef
	// Boundaries are the definition changes of the campaign's suites that a resume
	// with Options.NewDefinition started (the recorded ones first); plan.json keeps
	// them.
	Boundaries []DefinitionBoundary
	// NotRunHere are the selected cells this machine cannot run (SetNotRunHere), in
	// plan order: they have no unit, stay selected, and are reported apart.
	NotRunHere []NotRunHere
	// recorded is how many of Boundaries plan.json held already.
	recorded int
	resumed  bool
	now      func() time.Time
	seed     *int64
	mu       sync.Mutex // guards random
	random   io.Reader
}

// NewPlan validates opts (every problem together, as an *OptionsError) and selects the
// cells of c exactly as `agentproof list --all`/selectors would for a run: an empty
// selector is a *catalog.SelectionError with catalog.ErrNoSelector, and Select's
// *catalog.SelectionError values (unknown values, exclusive flags, zero matches) are
// returned as they are. sel.Listing is ignored (a run never lists). Both error types map
// to exit code 2 before anything starts.
func NewPlan(c *catalog.Catalog, sel catalog.Selector, opts Options) (*Plan, error) {
	p := &Plan{
		MaxParallel:         opts.MaxParallel,
		MaxAutomaticRetries: opts.MaxAutomaticRetries,
		now:                 opts.Now,
		seed:                opts.Seed,
		random:              opts.Random,
	}
	if p.now == nil {
		p.now = time.Now
	}
	if p.random == nil {
		p.random = rand.Reader
	}
	if p.MaxParallel == 0 {
		p.MaxParallel = runtime.NumCPU()
	}
	var problems []string
	raw := opts.CampaignID
	if raw == "" {
		def, err := DefaultCampaignID(p.now(), p.random)
		if err != nil {
			return nil, err
		}
		raw = def
	}
	id, err := SanitizeCampaignID(raw)
	if err != nil {
		problems = append(problems, err.Error())
	}
	p.CampaignID = id
	if p.MaxParallel < 0 {
		problems = append(problems, fmt.Sprintf("invalid value \"%d\" for --max-parallel: want a whole number ≥ 1", opts.MaxParallel))
	}
	p.Repeat = max(opts.Repeat, 1)
	if opts.Repeat < 0 || opts.Repeat > MaxRepeat {
		problems = append(problems, fmt.Sprintf("--repeat must be between 1 and %d, not %d", MaxRepeat, opts.Repeat))
	}
	if p.MaxAutomaticRetries != 0 && p.MaxAutomaticRetries != 1 {
		problems = append(problems, fmt.Sprintf("--max-automatic-retries must be 0 or 1, not %d", opts.MaxAutomaticRetries))
	}
	if len(problems) > 0 {
		return nil, &OptionsError{Problems: problems}
	}
	if sel.IsEmpty() {
		return nil, &catalog.SelectionError{Message: catalog.ErrNoSelector}
	}
	sel.Listing = false
	cells, err := c.Select(sel)
	if err != nil {
		return nil, err
	}
	p.Cells = cells
	for _, c := range cells {
		for k := 1; k <= p.Repeat; k++ {
			p.Units = append(p.Units, Unit{Cell: c, Repetition: k, FirstAttempt: 1})
		}
	}
	return p, nil
}

// Unit is one repetition of one selected cell: a series of attempts (the first, then
// at most the automatic retries) that ends with at most one counted result.
type Unit struct {
	Cell *catalog.Cell
	// Repetition is 1..Plan.Repeat.
	Repetition int
	// FirstAttempt is the number of the unit's first attempt: 1, or, when a campaign
	// is resumed, one more than the highest attempt directory the repetition already
	// holds (nothing stored is overwritten).
	FirstAttempt int
}

// Kept is a repetition of a resumed campaign whose stored result is kept, with how it
// counts (verdict.Counted).
type Kept struct {
	Cell       *catalog.Cell
	Repetition int
	Counted    verdict.Verdict
	// Class is the failure class of the cell's stored result (for its state: a known
	// failure is the candidate's).
	Class verdict.FailureClass
}

// StartedBoundary reports whether b is a boundary this plan started (not one its
// plan.json held already), so plan.json must be rewritten.
func (p *Plan) StartedBoundary(b DefinitionBoundary) bool {
	i := slices.Index(p.Boundaries, b)
	return i >= p.recorded
}

// Resumed reports whether the plan continues a stored campaign (ResumePlan).
func (p *Plan) Resumed() bool { return p.resumed }

// NotRunHere is a selected cell this machine cannot run, because it cannot provide the
// cell's environment, and Reason, why in a few words ("bubblewrap is not installed").
type NotRunHere struct {
	Cell   *catalog.Cell
	Reason string
}

// SetNotRunHere takes the cells of why (cell id → reason) out of p's units: they run
// no attempt and stay selected, recorded in p.NotRunHere in plan order. A cell id
// not selected is ignored.
func (p *Plan) SetNotRunHere(why map[string]string) {
	if len(why) == 0 {
		return
	}
	p.Units = slices.DeleteFunc(p.Units, func(u Unit) bool { return why[u.Cell.ID] != "" })
	for _, cell := range p.Cells {
		if r := why[cell.ID]; r != "" && !slices.ContainsFunc(p.NotRunHere, func(n NotRunHere) bool { return n.Cell.ID == cell.ID }) {
			p.NotRunHere = append(p.NotRunHere, NotRunHere{Cell: cell, Reason: r})
		}
	}
}

// NotRunReasons maps the id of every cell of p.NotRunHere to its reason (nil: none),
// as result.CampaignOptions.NotRunHere takes it.
func (p *Plan) NotRunReasons() map[string]string {
	if len(p.NotRunHere) == 0 {
		return nil
	}
	out := make(map[string]string, len(p.NotRunHere))
	for _, n := range p.NotRunHere {
		out[n.Cell.ID] = n.Reason
	}
	return out
}

// UnitCells are the distinct cells of p.Units, in order: the cells that will run.
func (p *Plan) UnitCells() []*catalog.Cell {
	var out []*catalog.Cell
	seen := map[string]bool{}
	for _, u := range p.Units {
		if !seen[u.Cell.ID] {
			seen[u.Cell.ID] = true
			out = append(out, u.Cell)
		}
	}
	return out
}

// Now returns the plan's clock reading.
func (p *Plan) Now() time.Time { return p.now() }

// AttemptPlan is everything an executor needs to run one attempt of one cell. The
// executor owns isolation (temp root, `agentproof serve` child, fixtures, flow,
// observation, grading, teardown); the plan only says what to run.
type AttemptPlan struct {
	CampaignID string
	Cell       *catalog.Cell
	// Attempt is 1 for the first attempt, 2 for the automatic retry; a resumed or
	// rerun repetition continues after the attempts it already holds.
	Attempt int
	// FirstAttempt is the number of the first attempt this run of the campaign makes
	// of the repetition (Unit.FirstAttempt): 1, or more when a resumed or rerun campaign
	// continues after attempts it already held. 0 means 1.
	FirstAttempt int
	// Repetition is 1..Repeat; Repeat is the plan's repetitions per cell (1 without
	// --repeat).
	Repetition, Repeat int
	// Nonce is the attempt's nonce (catalog.NoncePattern): 16 lower-case hex digits.
	Nonce string
	// Case is the cell's case rendered with Nonce.
	Case *catalog.RenderedCase
	// AttemptTimeout is the cell's attempt deadline (catalog Cell.AttemptTimeoutMs).
	AttemptTimeout time.Duration
	// TurnTimeout is the case's per-turn deadline, 0 when it declares none.
	TurnTimeout time.Duration
	// Dir is the attempt's results directory relative to the results root:
	// <campaign>/<suite>/<profile>/<environment>/<case>/attempt-<n>, and with --repeat
	// (Plan.Repeat > 1) <campaign>/<suite>/<profile>/<environment>/<case>/repeat-<k>/attempt-<n>.
	Dir string
}

// Attempt renders attempt number n (1-based) of cell for this campaign with a fresh
// nonce: with a seed, the first 16 hex digits of SHA-256("agentproof-nonce/v1", seed,
// cell id, n) (the same for every run with that seed, whatever else is selected or
// scheduled first); without one, 8 random bytes in hex. It returns an error when n < 1,
// the randomness source fails or the case does not render.
func (p *Plan) Attempt(cell *catalog.Cell, n int) (AttemptPlan, error) {
	return p.AttemptOf(cell, 1, n)
}

// AttemptOf is Attempt for repetition rep (1-based) of cell. With a seed, repetitions
// after the first hash the repetition too, so that every repetition gets its own
// nonces; repetition 1 keeps Attempt's. Errors: those of Attempt, or rep < 1.
func (p *Plan) AttemptOf(cell *catalog.Cell, rep, n int) (AttemptPlan, error) {
	if n < 1 || rep < 1 {
		return AttemptPlan{}, fmt.Errorf("campaign: attempt number %d of %s repetition %d: both must be at least 1", n, cell.ID, rep)
	}
	nonce, err := p.nonce(cell.ID, rep, n)
	if err != nil {
		return AttemptPlan{}, err
	}
	rc, err := cell.Render(nonce)
	if err != nil {
		return AttemptPlan{}, fmt.Errorf("campaign: rendering %s attempt %d: %w", cell.ID, n, err)
	}
	return AttemptPlan{
		CampaignID:     p.CampaignID,
		Cell:           cell,
		Attempt:        n,
		Repetition:     rep,
		Repeat:         p.Repeat,
		Nonce:          nonce,
		Case:           rc,
		AttemptTimeout: time.Duration(cell.AttemptTimeoutMs) * time.Millisecond,
		TurnTimeout:    time.Duration(cell.Case.TurnTimeoutMs) * time.Millisecond,
		Dir:            filepath.Join(p.CampaignID, p.RepetitionDir(cell, rep), "attempt-"+strconv.Itoa(n)),
	}, nil
}

// RepetitionDir is where repetition rep of cell keeps its attempts, relative to the
// campaign directory: <suite>/<profile>/<environment>/<case>, with "/repeat-<k>"
// appended when the plan repeats cells.
func (p *Plan) RepetitionDir(cell *catalog.Cell, rep int) string {
	d := filepath.Join(cell.Suite.ID, cell.Profile.ID, cell.Environment.ID, cell.Case.ID)
	if p.Repeat > 1 {
		d = filepath.Join(d, "repeat-"+strconv.Itoa(rep))
	}
	return d
}

func (p *Plan) nonce(cellID string, rep, n int) (string, error) {
	if p.seed != nil {
		h := sha256.New()
		fmt.Fprintf(h, "agentproof-nonce/v1\x00%d\x00%s\x00%d", *p.seed, cellID, n)
		if rep > 1 {
			fmt.Fprintf(h, "\x00repetition\x00%d", rep)
		}
		return hex.EncodeToString(h.Sum(nil))[:16], nil
	}
	var b [8]byte
	p.mu.Lock()
	_, err := io.ReadFull(p.random, b[:])
	p.mu.Unlock()
	if err != nil {
		return "", fmt.Errorf("campaign: reading a random nonce: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

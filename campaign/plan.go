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
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentproof/agentproof/catalog"
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
	// Now is the clock (default time.Now); it names the default campaign and stamps
	// progress events.
	Now func() time.Time
	// Random is the source of random nonces when Seed is nil, and of the default
	// campaign id's suffix (default crypto/rand).
	Random io.Reader
}

// OptionsError lists every invalid option together; commands map it to exit code 2.
type OptionsError struct {
	Problems []string
}

// Error joins the problems with "; ".
func (e *OptionsError) Error() string { return strings.Join(e.Problems, "; ") }

// MaxCampaignIDLength is the longest campaign id accepted, in bytes (it names a
// directory).
const MaxCampaignIDLength = 128

var campaignIDInvalid = regexp.MustCompile(`[^A-Za-z0-9_.-]+`)

// SanitizeCampaignID returns raw with every run of characters outside [A-Za-z0-9_.-]
// replaced by "-" and leading and trailing dashes trimmed (spec runner-e2e-harness §3).
// It returns an error when nothing usable remains, when the result is "." or ".." (it
// names a directory) or when it is longer than MaxCampaignIDLength bytes; the last two
// are agentproof additions.
func SanitizeCampaignID(raw string) (string, error) {
	id := strings.Trim(campaignIDInvalid.ReplaceAllString(raw, "-"), "-")
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
// milliseconds, ':' and '.' replaced by '-' (spec §3), then "-" and 8 lower-case hex
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
	CampaignID          string
	Cells               []*catalog.Cell
	MaxParallel         int
	MaxAutomaticRetries int
	now                 func() time.Time
	seed                *int64
	mu                  sync.Mutex // guards random
	random              io.Reader
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
		problems = append(problems, fmt.Sprintf("--max-parallel must be a positive integer, not %d", opts.MaxParallel))
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
	return p, nil
}

// Now returns the plan's clock reading.
func (p *Plan) Now() time.Time { return p.now() }

// AttemptPlan is everything an executor needs to run one attempt of one cell. The
// executor owns isolation (temp root, `agentproof serve` child, fixtures, flow,
// observation, grading, teardown); the plan only says what to run.
type AttemptPlan struct {
	CampaignID string
	Cell       *catalog.Cell
	// Attempt is 1 for the first attempt, 2 for the automatic retry.
	Attempt int
	// Nonce is the attempt's nonce (catalog.NoncePattern): 16 lower-case hex digits.
	Nonce string
	// Case is the cell's case rendered with Nonce.
	Case *catalog.RenderedCase
	// AttemptTimeout is the cell's attempt deadline (catalog Cell.AttemptTimeoutMs).
	AttemptTimeout time.Duration
	// TurnTimeout is the case's per-turn deadline, 0 when it declares none.
	TurnTimeout time.Duration
	// Dir is the attempt's results directory relative to the results root:
	// <campaign>/<suite>/<profile>/<environment>/<case>/attempt-<n>.
	Dir string
}

// Attempt renders attempt number n (1-based) of cell for this campaign with a fresh
// nonce: with a seed, the first 16 hex digits of SHA-256("agentproof-nonce/v1", seed,
// cell id, n) (the same for every run with that seed, whatever else is selected or
// scheduled first); without one, 8 random bytes in hex. It returns an error when n < 1,
// the randomness source fails or the case does not render.
func (p *Plan) Attempt(cell *catalog.Cell, n int) (AttemptPlan, error) {
	if n < 1 {
		return AttemptPlan{}, fmt.Errorf("campaign: attempt number %d of %s: must be at least 1", n, cell.ID)
	}
	nonce, err := p.nonce(cell.ID, n)
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
		Nonce:          nonce,
		Case:           rc,
		AttemptTimeout: time.Duration(cell.AttemptTimeoutMs) * time.Millisecond,
		TurnTimeout:    time.Duration(cell.Case.TurnTimeoutMs) * time.Millisecond,
		Dir: filepath.Join(p.CampaignID, cell.Suite.ID, cell.Profile.ID, cell.Environment.ID, cell.Case.ID,
			"attempt-"+strconv.Itoa(n)),
	}, nil
}

func (p *Plan) nonce(cellID string, n int) (string, error) {
	if p.seed != nil {
		h := sha256.New()
		fmt.Fprintf(h, "agentproof-nonce/v1\x00%d\x00%s\x00%d", *p.seed, cellID, n)
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

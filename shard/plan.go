package shard

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/agentproof/agentproof/canonjson"
	"github.com/agentproof/agentproof/catalog"
)

// Schema tags a shard plan document.
const Schema = "agentproof.shards/v1"

// MaxShards bounds the shard count of a plan.
const MaxShards = 256

// Source says where a cell's expected duration comes from.
type Source string

const (
	// FromHistory: the median of the cell's executed attempts in the history.
	FromHistory Source = "history"
	// FromDeadline: the cell's attempt deadline, scaled (see the package doc).
	FromDeadline Source = "deadline"
)

// Cell is one cell of a shard: its execution id, its expected duration in ms, where
// that comes from and, for FromHistory, how many attempts the median is over.
type Cell struct {
	ExecutionID string `json:"executionId"`
	ExpectedMs  int64  `json:"expectedMs"`
	Source      Source `json:"source"`
	Samples     int    `json:"samples,omitempty"`
}

// Shard is one shard: its 1-based index, the sum of its cells' expected durations
// (ms) and its cells sorted by execution id.
type Shard struct {
	Index      int    `json:"index"`
	ExpectedMs int64  `json:"expectedMs"`
	Cells      []Cell `json:"cells"`
}

// SuiteHash is a suite the plan's cells come from and its definition hash.
type SuiteHash struct {
	SuiteID        string `json:"suiteId"`
	DefinitionHash string `json:"definitionHash"`
}

// Weights says what the expected durations were computed from: the history's
// campaigns (ids, newest first) and the deadline ratio given to cells without history
// (per mille of their attempt deadline).
type Weights struct {
	Campaigns        []string `json:"campaigns"`
	DeadlinePerMille int64    `json:"deadlinePerMille"`
}

// Plan is a shard plan (schema agentproof.shards/v1). Count is the number of shards;
// ExpectedMs, MeanMs and MaxMs are the total, the mean per shard and the longest
// shard's expected duration (ms); Imbalance is MaxMs/MeanMs − 1 in per mille.
type Plan struct {
	Schema      string      `json:"schema"`
	Fingerprint string      `json:"fingerprint"`
	Count       int         `json:"count"`
	Cells       int         `json:"cells"`
	ExpectedMs  int64       `json:"expectedMs"`
	MeanMs      int64       `json:"meanMs"`
	MaxMs       int64       `json:"maxMs"`
	Imbalance   int64       `json:"imbalancePerMille"`
	Weights     Weights     `json:"weights"`
	Suites      []SuiteHash `json:"suites"`
	Shards      []Shard     `json:"shards"`
}

// Build splits cells into count shards (1..MaxShards, at most one per cell) with the
// expected durations est gives (Estimate), longest-processing-time first; ties go to
// the lower execution id and the lower shard index, so the same inputs always give
// the same plan. Error: a count out of range.
func Build(cells []*catalog.Cell, count int, est Estimates) (*Plan, error) {
	if count < 1 || count > MaxShards {
		return nil, fmt.Errorf("shard count %d: want 1 to %d", count, MaxShards)
	}
	if count > len(cells) {
		return nil, fmt.Errorf("%d shards for %d cell(s): every shard must get at least one cell", count, len(cells))
	}
	all := make([]Cell, 0, len(cells))
	suites := map[string]string{}
	for _, c := range cells {
		all = append(all, est.Cells[c.ID])
		suites[c.Suite.ID] = c.Suite.Fingerprint
	}
	slices.SortFunc(all, func(a, b Cell) int {
		if c := cmp.Compare(b.ExpectedMs, a.ExpectedMs); c != 0 {
			return c
		}
		return strings.Compare(a.ExecutionID, b.ExecutionID)
	})
	p := &Plan{Schema: Schema, Count: count, Cells: len(all), Weights: est.Weights, Shards: make([]Shard, count)}
	for i := range p.Shards {
		p.Shards[i].Index = i + 1
	}
	for _, c := range all {
		least := 0
		for i := range p.Shards {
			if p.Shards[i].ExpectedMs < p.Shards[least].ExpectedMs {
				least = i
			}
		}
		p.Shards[least].Cells = append(p.Shards[least].Cells, c)
		p.Shards[least].ExpectedMs += c.ExpectedMs
	}
	for id, h := range suites {
		p.Suites = append(p.Suites, SuiteHash{SuiteID: id, DefinitionHash: h})
	}
	p.seal()
	return p, nil
}

// seal sorts every shard's cells and the suites, and sets the totals and the
// fingerprint.
func (p *Plan) seal() {
	slices.SortFunc(p.Suites, func(a, b SuiteHash) int { return strings.Compare(a.SuiteID, b.SuiteID) })
	p.ExpectedMs, p.MaxMs = 0, 0
	for i := range p.Shards {
		s := &p.Shards[i]
		slices.SortFunc(s.Cells, func(a, b Cell) int { return strings.Compare(a.ExecutionID, b.ExecutionID) })
		p.ExpectedMs += s.ExpectedMs
		p.MaxMs = max(p.MaxMs, s.ExpectedMs)
	}
	if p.Count > 0 {
		p.MeanMs = p.ExpectedMs / int64(p.Count)
	}
	if p.MeanMs > 0 {
		p.Imbalance = (p.MaxMs*1000)/p.MeanMs - 1000
	}
	p.Fingerprint = p.computeFingerprint()
}

// computeFingerprint is the lower-case hex SHA-256 of the canonical JSON
// {count, suites:[[id, hash]…], shards:[[execution id…]…]}.
func (p *Plan) computeFingerprint() string {
	suites := make([]any, 0, len(p.Suites))
	for _, s := range p.Suites {
		suites = append(suites, []any{s.SuiteID, s.DefinitionHash})
	}
	shards := make([]any, 0, len(p.Shards))
	for _, s := range p.Shards {
		ids := make([]any, 0, len(s.Cells))
		for _, c := range s.Cells {
			ids = append(ids, c.ExecutionID)
		}
		shards = append(shards, ids)
	}
	b, err := canonjson.Ordered(canonjson.Object{
		{Key: "schema", Value: Schema},
		{Key: "count", Value: float64(p.Count)},
		{Key: "suites", Value: suites},
		{Key: "shards", Value: shards},
	})
	if err != nil {
		panic(err) // strings, numbers and arrays always encode
	}
	return canonjson.SHA256Hex(b)
}

// IDs are the execution ids of shard index (1-based), sorted; nil when out of range.
func (p *Plan) IDs(index int) []string {
	if index < 1 || index > len(p.Shards) {
		return nil
	}
	var ids []string
	for _, c := range p.Shards[index-1].Cells {
		ids = append(ids, c.ExecutionID)
	}
	return ids
}

// AllIDs are every execution id of the plan, sorted.
func (p *Plan) AllIDs() []string {
	var ids []string
	for i := range p.Shards {
		ids = append(ids, p.IDs(i+1)...)
	}
	slices.Sort(ids)
	return ids
}

// ShardOf maps every execution id of the plan to its shard's index.
func (p *Plan) ShardOf() map[string]int {
	m := map[string]int{}
	for _, s := range p.Shards {
		for _, c := range s.Cells {
			m[c.ExecutionID] = s.Index
		}
	}
	return m
}

// Encode writes p as indented JSON followed by a newline.
func (p *Plan) Encode(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(p)
}

// Decode reads a plan document strictly (unknown fields, trailing data and a wrong
// schema tag are errors) and checks it: shard indices 1..count in order, every cell
// once, and a fingerprint that is the one its shards and suites give (a plan edited by
// hand is refused). Errors name label.
func Decode(label string, b []byte) (*Plan, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var p Plan
	if err := dec.Decode(&p); err != nil {
		return nil, fmt.Errorf("%s: not a shard plan (agentproof list --shards N): %w", label, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("%s: trailing data after the shard plan", label)
	}
	if p.Schema != Schema {
		return nil, fmt.Errorf("%s: schema %q, want %q", label, p.Schema, Schema)
	}
	if err := p.check(); err != nil {
		return nil, fmt.Errorf("%s: %w", label, err)
	}
	return &p, nil
}

// check verifies the plan's structure and its fingerprint.
func (p *Plan) check() error {
	if p.Count < 1 || p.Count > MaxShards || len(p.Shards) != p.Count {
		return fmt.Errorf("count %d with %d shards listed", p.Count, len(p.Shards))
	}
	seen := map[string]bool{}
	for i, s := range p.Shards {
		if s.Index != i+1 {
			return fmt.Errorf("shards[%d].index is %d, want %d", i, s.Index, i+1)
		}
		for _, c := range s.Cells {
			if seen[c.ExecutionID] {
				return fmt.Errorf("cell %s is in two shards", c.ExecutionID)
			}
			seen[c.ExecutionID] = true
		}
	}
	if len(seen) != p.Cells {
		return fmt.Errorf("cells is %d, the shards list %d", p.Cells, len(seen))
	}
	stored := p.Fingerprint
	p.seal()
	if stored != p.Fingerprint {
		return fmt.Errorf("fingerprint %s is not the one its shards and suites give (%s): the plan was edited after 'agentproof list --shards' wrote it", stored, p.Fingerprint)
	}
	return nil
}

// ParseIndex parses the --shard value "i/N" (1 ≤ i ≤ N ≤ MaxShards).
func ParseIndex(s string) (index, count int, err error) {
	a, b, ok := strings.Cut(strings.TrimSpace(s), "/")
	i, err1 := strconv.Atoi(a)
	n, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil || n < 1 || n > MaxShards || i < 1 || i > n {
		return 0, 0, fmt.Errorf("--shard %q: want i/N with 1 ≤ i ≤ N ≤ %d, for example 3/8", s, MaxShards)
	}
	return i, n, nil
}

package catalog

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentproof/agentproof/canonjson"
)

// Model breadth from a reviewed snapshot (docs/breadth.md): the embedded file breadth/openrouter-models.json
// is a reviewed ranking of exactly BreadthModelCount unique, available, tool-capable models.
// The default catalog generates one profile per model from it at load (never written by
// hand) and two suites over those profiles: openrouter-model-breadth (manual-only, for
// `agentproof run --live` against the real provider) and openrouter-model-breadth-offline
// (the scripted model answering under each model id: it proves the generation and the
// harness, never a qualification). `agentproof models update --from FILE` is the only way the
// snapshot changes; campaigns never change it.

//go:embed breadth/openrouter-models.json
var embeddedSnapshot []byte

// SnapshotFile is the repository path of the embedded snapshot, relative to the module
// root; problems of the embedded snapshot name it as "catalog/" + SnapshotFile.
const SnapshotFile = "breadth/openrouter-models.json"

// SnapshotSchema is the schema tag of a breadth snapshot.
const SnapshotSchema = "agentproof.openrouter-ranking/v1"

// BreadthModelCount is the number of models a breadth snapshot holds: exactly five unique,
// available, tool-capable models (docs/breadth.md).
const BreadthModelCount = 5

// MaxSnapshotBytes bounds a snapshot file (bytes).
const MaxSnapshotBytes = 1 << 20

// Breadth suite ids, and the generated profiles' id prefix.
const (
	BreadthLiveSuite     = "openrouter-model-breadth"
	BreadthOfflineSuite  = "openrouter-model-breadth-offline"
	BreadthProfilePrefix = "openrouter-"
	// BreadthQualificationSource is the generated profiles' modelQualification source.
	BreadthQualificationSource = "openrouter_rankings_snapshot"
	// BreadthLiveBaseURL is the OpenAI-compatible base URL of the live provider.
	BreadthLiveBaseURL = "https://openrouter.ai/api/v1"
	// BreadthCredential is the credential of the live provider.
	BreadthCredential = "OPENROUTER_API_KEY"
)

// BreadthCases are the cases of the breadth suites.
var BreadthCases = []string{"message-marker"}

// Snapshot is a reviewed model ranking (the snapshot file's JSON): schema
// (SnapshotSchema), snapshot id, ranking name (e.g. top-weekly), the parameter every
// model must support (requiredParameter, "tools"), the source URL it was read from, the
// capture time (RFC 3339), the content hash (lower-case hex SHA-256 of Ranking's
// ContentHashJSON) and the models in rank order.
type Snapshot struct {
	Schema            string          `json:"schema"`
	SnapshotID        string          `json:"snapshotId"`
	Ranking           string          `json:"ranking"`
	RequiredParameter string          `json:"requiredParameter"`
	SourceURL         string          `json:"sourceUrl"`
	CapturedAt        string          `json:"capturedAt"`
	ContentHash       string          `json:"contentHash,omitempty"`
	Models            []SnapshotModel `json:"models"`
}

// SnapshotModel is one ranked model: rank (1-based), canonical id (provider/model),
// display name, the API parameters it supports, and whether the provider listed it as
// available when the snapshot was captured (Available; required, must be true).
type SnapshotModel struct {
	Rank                int      `json:"rank"`
	ID                  string   `json:"id"`
	Name                string   `json:"name"`
	SupportedParameters []string `json:"supportedParameters"`
	Available           *bool    `json:"available"`
}

// SnapshotError lists every problem of a snapshot file (File names it).
type SnapshotError struct {
	File     string
	Problems []string
}

// Error renders "snapshot FILE: p1; p2".
func (e *SnapshotError) Error() string {
	return fmt.Sprintf("snapshot %s: %s", e.File, strings.Join(e.Problems, "; "))
}

// snapshotIDRE is the grammar of a snapshot id.
var snapshotIDRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,99}$`) })

// ParseSnapshot decodes and checks a snapshot file named file (for messages). With
// requireHash the content hash must be present; when present it must match the models
// (a ranking edited after review is refused). It returns a *SnapshotError listing every
// problem: unknown fields, a schema other than SnapshotSchema, a missing id, source URL
// (https) or capture time (RFC 3339), not exactly BreadthModelCount models, ranks other
// than 1…5 in order, a duplicate or empty id or name, a model not available, a model
// whose supportedParameters lack requiredParameter (not tool-capable), a hash mismatch.
func ParseSnapshot(file string, data []byte, requireHash bool) (*Snapshot, error) {
	se := &SnapshotError{File: file}
	if len(data) > MaxSnapshotBytes {
		se.Problems = append(se.Problems, fmt.Sprintf("larger than %d bytes", MaxSnapshotBytes))
		return nil, se
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var s Snapshot
	if err := dec.Decode(&s); err != nil {
		se.Problems = append(se.Problems, "not a snapshot JSON object: "+err.Error())
		return nil, se
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		se.Problems = append(se.Problems, "trailing data after the JSON object")
	}
	se.Problems = append(se.Problems, s.problems(requireHash)...)
	if len(se.Problems) > 0 {
		return nil, se
	}
	return &s, nil
}

// problems checks the rule of a breadth snapshot (see ParseSnapshot).
func (s *Snapshot) problems(requireHash bool) []string {
	var p []string
	if s.Schema != SnapshotSchema {
		p = append(p, fmt.Sprintf("schema is %q, want %q", s.Schema, SnapshotSchema))
	}
	if !snapshotIDRE().MatchString(s.SnapshotID) {
		p = append(p, fmt.Sprintf("snapshotId %q must be lower-case letters, digits, '.', '_' or '-'", s.SnapshotID))
	}
	if s.Ranking == "" {
		p = append(p, "ranking is required (for example top-weekly)")
	}
	if s.RequiredParameter == "" {
		p = append(p, "requiredParameter is required (tools)")
	}
	if u, err := url.Parse(s.SourceURL); err != nil || u.Scheme != "https" || u.Host == "" {
		p = append(p, fmt.Sprintf("sourceUrl %q must be an https URL", s.SourceURL))
	}
	if _, err := time.Parse(time.RFC3339, s.CapturedAt); err != nil {
		p = append(p, fmt.Sprintf("capturedAt %q must be an RFC 3339 time", s.CapturedAt))
	}
	if len(s.Models) != BreadthModelCount {
		p = append(p, fmt.Sprintf("has %d models; a breadth snapshot holds exactly %d unique, available, tool-capable models", len(s.Models), BreadthModelCount))
	}
	ids, slugs := map[string]int{}, map[string]int{}
	for i, m := range s.Models {
		where := fmt.Sprintf("models[%d]", i)
		if m.ID != "" {
			where += " (" + m.ID + ")"
		}
		if m.Rank != i+1 {
			p = append(p, fmt.Sprintf("%s has rank %d; ranks must be 1, 2, … in order", where, m.Rank))
		}
		if m.ID == "" || strings.ContainsAny(m.ID, " \t\n") {
			p = append(p, fmt.Sprintf("%s: id must be a canonical model id (provider/model)", where))
		} else if first, dup := ids[m.ID]; dup {
			p = append(p, fmt.Sprintf("%s: duplicate model id %q (also rank %d)", where, m.ID, first))
		} else if first, dup := slugs[BreadthProfileID(m.ID)]; dup {
			p = append(p, fmt.Sprintf("%s: model id %q gives the same profile id %s as rank %d", where, m.ID, BreadthProfileID(m.ID), first))
		} else if len(BreadthProfileID(m.ID)) > maxIDLength || BreadthProfileID(m.ID) == BreadthProfilePrefix {
			p = append(p, fmt.Sprintf("%s: model id %q gives no usable profile id", where, m.ID))
		}
		ids[m.ID], slugs[BreadthProfileID(m.ID)] = m.Rank, m.Rank
		if strings.TrimSpace(m.Name) == "" {
			p = append(p, where+": name is required")
		}
		switch {
		case m.Available == nil:
			p = append(p, where+": available is required (true: listed by the provider at capture time)")
		case !*m.Available:
			p = append(p, where+": not available; a breadth snapshot holds only available models")
		}
		if s.RequiredParameter != "" && !slices.Contains(m.SupportedParameters, s.RequiredParameter) {
			p = append(p, fmt.Sprintf("%s: not tool-capable: supportedParameters %v lack %q", where, m.SupportedParameters, s.RequiredParameter))
		}
	}
	got, err := s.ranking().ComputeContentHash()
	switch {
	case err != nil:
		p = append(p, "computing the content hash: "+err.Error())
	case s.ContentHash == "" && requireHash:
		p = append(p, "contentHash is required (run: agentproof models update --from FILE)")
	case s.ContentHash != "" && s.ContentHash != got:
		p = append(p, fmt.Sprintf("contentHash %s does not match its models (computed %s): the ranking changed after review", s.ContentHash, got))
	}
	return p
}

// ranking is the snapshot as a catalog Ranking (the hash is computed over it).
func (s *Snapshot) ranking() *Ranking {
	r := &Ranking{Schema: s.Schema, SnapshotID: s.SnapshotID, Ranking: s.Ranking, RequiredParameter: s.RequiredParameter,
		SourceURL: s.SourceURL, CapturedAt: s.CapturedAt, ContentHash: s.ContentHash}
	for _, m := range s.Models {
		r.Models = append(r.Models, &RankingModel{Rank: m.Rank, ID: m.ID, Name: m.Name, SupportedParameters: m.SupportedParameters})
	}
	return r
}

// Seal returns the snapshot with its content hash computed, encoded as the snapshot file
// (indented JSON, keys in declaration order, a final newline). The snapshot must be
// valid (ParseSnapshot) apart from its hash.
func (s *Snapshot) Seal() ([]byte, error) {
	out := *s
	h, err := s.ranking().ComputeContentHash()
	if err != nil {
		return nil, err
	}
	out.ContentHash = h
	if p := out.problems(true); len(p) > 0 {
		return nil, &SnapshotError{File: "(sealed)", Problems: p}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(out); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// EmbeddedSnapshot parses the snapshot embedded in the binary (hash required).
func EmbeddedSnapshot() (*Snapshot, error) {
	return ParseSnapshot("catalog/"+SnapshotFile, embeddedSnapshot, true)
}

// EmbeddedSnapshotBytes returns the embedded snapshot file.
func EmbeddedSnapshotBytes() []byte { return bytes.Clone(embeddedSnapshot) }

// nonSlugRE matches every run of characters a profile id may not hold.
var nonSlugRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`[^a-z0-9]+`) })

// BreadthProfileID is the generated profile id of a model: "openrouter-" +
// the model id lower-cased, every run of characters other than [a-z0-9] replaced by "-",
// leading and trailing "-" trimmed; e.g. nvidia/nemotron-3-ultra-550b-a55b:free →
// openrouter-nvidia-nemotron-3-ultra-550b-a55b-free.
func BreadthProfileID(modelID string) string {
	return BreadthProfilePrefix + strings.Trim(nonSlugRE().ReplaceAllString(strings.ToLower(modelID), "-"), "-")
}

// breadthDecls are the declarations generated from a snapshot: its ranking, one profile
// per model and the two breadth suites.
func breadthDecls(s *Snapshot) (*Ranking, []*Profile, []*Suite) {
	r := s.ranking()
	var profiles []*Profile
	var ids []string
	for _, m := range s.Models {
		id := BreadthProfileID(m.ID)
		ids = append(ids, id)
		profiles = append(profiles, &Profile{
			ID:         id,
			Label:      "#" + strconv.Itoa(m.Rank) + " " + m.Name,
			Generation: "native",
			Groups:     []string{"cli", "breadth"},
			DriverText: "exec:opencode",
			DriverConfig: map[string]any{
				"timeoutMs": 300000,
				// The model id OpenCode asks for: the scripted model answers under it
				// offline; the live provider serves it with --live.
				"model": m.ID,
				"live": map[string]any{"baseUrl": BreadthLiveBaseURL, "model": m.ID, "envVar": BreadthCredential,
					"npm": "@ai-sdk/openai-compatible"},
			},
			Provider:                "scripted",
			Model:                   m.ID,
			ModelQualification:      Qualification{Source: BreadthQualificationSource, QualificationID: s.SnapshotID + ":" + strconv.Itoa(m.Rank)},
			Ranking:                 &ProfileRanking{Rank: m.Rank, CanonicalModelID: m.ID, SnapshotID: s.SnapshotID, CapturedAt: s.CapturedAt, SourceURL: s.SourceURL},
			SupportedEnvironments:   []string{"local"},
			ExpectedRuntimeMetadata: ExpectedRuntimeMeta{AdapterType: "opencode_local", Provider: "scripted"},
		})
	}
	meta := func(mode string) *Metadata {
		return &Metadata{Value: canonjson.Object{
			{Key: "version", Value: float64(1)},
			{Key: "generatedFrom", Value: "catalog/" + SnapshotFile},
			{Key: "snapshotId", Value: s.SnapshotID},
			{Key: "contentHash", Value: s.ContentHash},
			{Key: "capturedAt", Value: s.CapturedAt},
			{Key: "sourceUrl", Value: s.SourceURL},
			{Key: "mode", Value: mode},
		}}
	}
	n := len(profiles) * len(BreadthCases)
	suites := []*Suite{
		{
			ID: BreadthLiveSuite, Label: "OpenRouter model breadth (live)",
			Description: "The top " + strconv.Itoa(len(profiles)) + " tool-capable models of ranking snapshot " + s.SnapshotID +
				" through OpenCode against the real provider. Manual-only: run it with --live --suite " + BreadthLiveSuite +
				" and " + BreadthCredential + " set. Profiles are generated from catalog/" + SnapshotFile + ".",
			Groups: []string{"breadth"}, Profiles: ids, Environments: []string{"local"}, Cases: BreadthCases,
			ExpectedMatrixSize: n, DefinitionMetadata: meta("live"), ManualOnly: true,
		},
		{
			ID: BreadthOfflineSuite, Label: "OpenRouter model breadth (offline harness check)",
			Description: "The generated breadth profiles with the scripted model answering under each model id: proves that " +
				"the profiles are generated from snapshot " + s.SnapshotID + " and that the harness runs them. It is never a " +
				"qualification of those models (run " + BreadthLiveSuite + " with --live for that).",
			Groups: []string{"breadth"}, Profiles: ids, Environments: []string{"local"}, Cases: BreadthCases,
			ExpectedMatrixSize: n, DefinitionMetadata: meta("offline-scripted"),
		},
	}
	return r, profiles, suites
}

// addBreadth adds the declarations generated from the embedded snapshot to c; a bad
// embedded snapshot is a problem naming its file.
func addBreadth(c *Catalog, ps *problems) {
	s, err := EmbeddedSnapshot()
	if err != nil {
		var se *SnapshotError
		if errors.As(err, &se) {
			for _, p := range se.Problems {
				ps.add(Pos{File: se.File}, "%s", p)
			}
			return
		}
		ps.add(Pos{File: "catalog/" + SnapshotFile}, "%v", err)
		return
	}
	r, profiles, suites := breadthDecls(s)
	c.Rankings = append(c.Rankings, r)
	c.Profiles = append(c.Profiles, profiles...)
	c.Suites = append(c.Suites, suites...)
}

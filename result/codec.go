package result

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/agentproof/agentproof/redact"
)

// priorCampaign is what Assemble keeps of an existing campaign.json (the fields of
// Campaign of the same names; its results are not kept).
type priorCampaign struct {
	Schema                string            `json:"schema"`
	Expected              []string          `json:"expected"`
	InconclusiveAsFailure bool              `json:"inconclusiveAsFailure"`
	Repeat                int               `json:"repeat"`
	Provenance            *Provenance       `json:"provenance"`
	Catalog               *CatalogSources   `json:"catalog"`
	Interruption          *Interruption     `json:"interruption"`
	NotRunHere            map[string]string `json:"notRunHere"`
	Baselines             []Baseline        `json:"baselines"`
	RegradeOf             *RegradeOf        `json:"regradeOf"`
}

// readPriorCampaign reads an existing campaign.json for its expected ids and options;
// nil when there is none. A file that is not a campaign document is an error (it would
// be overwritten).
func readPriorCampaign(path string) (*priorCampaign, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	defer f.Close()
	// Decoded from the stream into the fields Assemble keeps, so that the earlier
	// results are parsed but never held.
	var c priorCampaign
	dec := json.NewDecoder(bufio.NewReaderSize(f, streamBuffer))
	err = dec.Decode(&c)
	if err == nil {
		if _, end := dec.Token(); !errors.Is(end, io.EOF) {
			err = errors.New("data after the document")
		}
	}
	if err != nil || c.Schema != CampaignSchema {
		return nil, fmt.Errorf("%s exists but is not an %s document (move it away to regenerate): %v", path, CampaignSchema, err)
	}
	return &c, nil
}

// SanitizeResult redacts every free-text and raw JSON field of r in place with s (exact
// values and secret shapes): error, issue identifier, usage, matcher details, expected
// and observed values, the workspace diff's paths, link targets and texts, and the
// termination summary (withheld when it cannot be
// sanitised).
func SanitizeResult(s *redact.Set, r *Result) {
	r.Error = s.RedactText(r.Error)
	r.IssueIdentifier = s.RedactText(r.IssueIdentifier)
	r.Usage = s.SanitizeJSON(r.Usage)
	for i := range r.MatcherResults {
		m := &r.MatcherResults[i]
		m.Detail = s.RedactText(m.Detail)
		m.Expected = s.SanitizeJSON(m.Expected)
		m.Observed = s.SanitizeJSON(m.Observed)
	}
	for i := range r.RuntimeFacts {
		rf := &r.RuntimeFacts[i]
		rf.Binary = s.RedactText(rf.Binary)
		for j := range rf.Argv {
			rf.Argv[j] = s.RedactText(rf.Argv[j])
		}
		for j := range rf.Problems {
			rf.Problems[j] = s.RedactText(rf.Problems[j])
		}
	}
	for i := range r.WorkspaceDiff {
		for j := range r.WorkspaceDiff[i].Changes {
			fc := &r.WorkspaceDiff[i].Changes[j]
			fc.Path, fc.BeforeTarget, fc.AfterTarget, fc.Note = s.RedactText(fc.Path), s.RedactText(fc.BeforeTarget), s.RedactText(fc.AfterTarget), s.RedactText(fc.Note)
			for _, t := range []**string{&fc.Before, &fc.After} {
				if *t != nil {
					v := s.RedactText(**t)
					*t = &v
				}
			}
		}
		r.WorkspaceDiff[i].Note = s.RedactText(r.WorkspaceDiff[i].Note)
	}
	if len(r.Termination) > 0 {
		if b, err := s.SanitizeJSONBytes("termination", r.Termination); err == nil {
			r.Termination = bytes.TrimSpace(b)
		} else {
			r.Termination = json.RawMessage(`{"redacted":"termination summary withheld: it could not be sanitised"}`)
		}
	}
}

// WriteCampaign writes campaign.json to w: the bytes encodeJSON(c) gives with every
// result i replaced by full(i) (for example Assembly.Full), without encoding the whole
// document at once: the document without its results, then each result on its own,
// indented as it is inside the document. Errors: full's, or w's.
func WriteCampaign(w io.Writer, c *Campaign, full func(i int) (*Result, error)) error {
	head := *c
	head.Results = []Result{}
	b, err := encodeJSON(&head)
	if err != nil {
		return err
	}
	// A newline is never inside a JSON string, so this is the top-level key.
	marker := []byte("\n  \"results\": []")
	i := bytes.Index(b, marker)
	if i < 0 {
		return errors.New("encoding campaign.json: no results key in the document")
	}
	if len(c.Results) == 0 {
		_, err := w.Write(b)
		return err
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("    ", "  ")
	if _, err := w.Write(b[:i+len(marker)-1]); err != nil {
		return err
	}
	for k := range c.Results {
		buf.Reset()
		r, err := full(k)
		if err != nil {
			return err
		}
		buf.WriteString("\n    ")
		if err := enc.Encode(r); err != nil {
			return fmt.Errorf("encoding JSON: %w", err)
		}
		buf.Truncate(buf.Len() - 1) // the encoder's newline
		if k < len(c.Results)-1 {
			buf.WriteByte(',')
		}
		if _, err := w.Write(buf.Bytes()); err != nil {
			return err
		}
	}
	if _, err := io.WriteString(w, "\n  ]"); err != nil {
		return err
	}
	_, err = w.Write(b[i+len(marker):])
	return err
}

// encodeJSON encodes v with two-space indentation, without HTML escaping, ending in a
// newline. encoding/json orders struct fields by declaration and map keys by sort, so
// the bytes are deterministic.
func encodeJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("encoding JSON: %w", err)
	}
	return buf.Bytes(), nil
}

// EncodeHistory encodes a history as history.json is written: compact (no indentation:
// a third of an indented file is white space, and the file holds every cell of every
// kept campaign), no HTML escaping, final newline.
func EncodeHistory(h *History) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(h); err != nil {
		return nil, fmt.Errorf("encoding JSON: %w", err)
	}
	return buf.Bytes(), nil
}

// EncodeResult encodes a result as result.json is written (two-space indentation, no
// HTML escaping, final newline).
func EncodeResult(r *Result) ([]byte, error) { return encodeJSON(r) }

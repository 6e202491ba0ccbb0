package report

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/agentproof/agentproof/result"
)

// The dashboard's transcript view: each run's ATIF trajectory (TrajectoryRef, written
// by package trajectory) rendered inside its cell's card — the turns, the tool calls
// with their arguments and results, the messages — bounded in size, every cut said.
// Transcripts are read from the campaign directory when the dashboard is generated
// (LoadTranscripts) and rendered by dashboard_transcript.tmpl; html/template escapes
// every text, and the page goes through the guard like every results file.

//go:embed dashboard_transcript.tmpl
var transcriptTemplate string

// Bounds of the transcript view (bytes of text shown).
const (
	// TranscriptTextBytes bounds one message, reasoning text, argument document or
	// result shown; the rest is in the trajectory file, which the view links.
	TranscriptTextBytes = 2 << 10
	// TranscriptBytes bounds the text shown of one trajectory; later steps are counted.
	TranscriptBytes = 48 << 10
	// TranscriptSteps bounds the steps shown of one trajectory.
	TranscriptSteps = 200
	// maxTrajectoryFile bounds a trajectory file the dashboard reads.
	maxTrajectoryFile = 8 << 20
)

// Transcripts are the transcripts of a campaign's runs, keyed by the trajectory's path
// relative to the campaign directory (TrajectoryRef.Path as the campaign lists it).
type Transcripts map[string]Transcript

// Transcript is one run's trajectory as the dashboard shows it: its reference, the
// steps shown, how many steps were not shown (Hidden), the link to the file and the
// problem that kept it from being read ("" for none).
type Transcript struct {
	Ref     result.TrajectoryRef
	Href    string
	Steps   []TranscriptStep
	Hidden  int
	Problem string
}

// TranscriptStep is one step shown: its number, role (system, user, agent), time, the
// stream's kind, message, reasoning, tool calls, results and the notes on what was
// cut.
type TranscriptStep struct {
	ID                 int
	Role, Time, Kind   string
	Message, Reasoning string
	Calls              []TranscriptCall
	Results            []TranscriptResult
	Notes              []string
	LLMCalls, Tokens   string
}

// TranscriptCall is one tool call shown: its id, name and arguments (indented JSON).
type TranscriptCall struct{ ID, Name, Args string }

// TranscriptResult is one result shown: the call it answers ("" for an action), its
// content, and whether the tool reported an error.
type TranscriptResult struct {
	CallID, Content string
	Error           bool
}

// LoadTranscripts reads the trajectory of every run of c's results from campaignDir.
// It never fails: a file that cannot be read or is not an ATIF document is a
// Transcript with a Problem.
func LoadTranscripts(campaignDir string, c *result.Campaign) Transcripts {
	out := Transcripts{}
	for i := range c.Results {
		loadTranscriptsInto(out, campaignDir, &c.Results[i])
	}
	return out
}

// loadResultTranscripts is LoadTranscripts for one result.
func loadResultTranscripts(campaignDir string, r *result.Result) Transcripts {
	out := Transcripts{}
	loadTranscriptsInto(out, campaignDir, r)
	return out
}

func loadTranscriptsInto(out Transcripts, campaignDir string, r *result.Result) {
	for _, ref := range r.Trajectories {
		if !result.SafeRelPath(ref.Path) {
			continue
		}
		out[ref.Path] = loadTranscript(filepath.Join(campaignDir, filepath.FromSlash(ref.Path)), ref)
	}
}

type atifFile struct {
	Steps []struct {
		StepID           int             `json:"step_id"`
		Timestamp        string          `json:"timestamp"`
		Source           string          `json:"source"`
		Message          json.RawMessage `json:"message"`
		ReasoningContent string          `json:"reasoning_content"`
		ToolCalls        []struct {
			ID        string          `json:"tool_call_id"`
			Name      string          `json:"function_name"`
			Arguments json.RawMessage `json:"arguments"`
		} `json:"tool_calls"`
		Observation *struct {
			Results []struct {
				SourceCallID string          `json:"source_call_id"`
				Content      json.RawMessage `json:"content"`
				Extra        map[string]any  `json:"extra"`
			} `json:"results"`
		} `json:"observation"`
		Metrics *struct {
			Prompt     int64 `json:"prompt_tokens"`
			Completion int64 `json:"completion_tokens"`
		} `json:"metrics"`
		LLMCallCount *int           `json:"llm_call_count"`
		Extra        map[string]any `json:"extra"`
	} `json:"steps"`
}

func loadTranscript(file string, ref result.TrajectoryRef) Transcript {
	tr := Transcript{Ref: ref}
	tr.Href, _ = evidenceHref(ref.Path)
	f, err := os.Open(file)
	if err != nil {
		tr.Problem = "the trajectory file could not be read"
		return tr
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxTrajectoryFile+1))
	if err != nil || len(b) > maxTrajectoryFile {
		tr.Problem = fmt.Sprintf("the trajectory file could not be read whole (at most %d bytes are)", maxTrajectoryFile)
		return tr
	}
	var doc atifFile
	if err := json.Unmarshal(b, &doc); err != nil {
		tr.Problem = "the trajectory file is not an ATIF document"
		return tr
	}
	budget := TranscriptBytes
	for i, s := range doc.Steps {
		if i >= TranscriptSteps || budget <= 0 {
			tr.Hidden = len(doc.Steps) - i
			break
		}
		ts := TranscriptStep{ID: s.StepID, Role: result.Clean(s.Source, true), Time: result.Clean(s.Timestamp, true), Kind: result.Clean(str(s.Extra["kind"]), true)}
		show := func(label, text string) string {
			if text == "" {
				return ""
			}
			shown, cut := clipText(text, min(TranscriptTextBytes, max(budget, 64)))
			budget -= len(shown)
			if cut {
				ts.Notes = append(ts.Notes, fmt.Sprintf("%s cut here: %d bytes in all, in the trajectory file", label, len(text)))
			}
			return result.Clean(shown, false)
		}
		ts.Message = show("message", contentString(s.Message))
		if s.Extra["messageTruncated"] == true {
			ts.Notes = append(ts.Notes, fmt.Sprintf("the message was cut when it was recorded (%v bytes in all)", s.Extra["messageBytes"]))
		}
		ts.Reasoning = show("reasoning", s.ReasoningContent)
		for _, c := range s.ToolCalls {
			ts.Calls = append(ts.Calls, TranscriptCall{ID: result.Clean(c.ID, true), Name: result.Clean(c.Name, true), Args: show("arguments of "+c.Name, indentJSON(c.Arguments))})
		}
		if o := s.Observation; o != nil {
			for _, r := range o.Results {
				ts.Results = append(ts.Results, TranscriptResult{CallID: result.Clean(r.SourceCallID, true), Content: show("result", contentString(r.Content)), Error: r.Extra["error"] == true})
				if r.Extra["contentTruncated"] == true {
					ts.Notes = append(ts.Notes, fmt.Sprintf("a result was cut when it was recorded (%v bytes in all)", r.Extra["contentBytes"]))
				}
			}
		}
		if s.LLMCallCount != nil {
			ts.LLMCalls = fmt.Sprintf("%d model call(s)", *s.LLMCallCount)
		}
		if m := s.Metrics; m != nil {
			ts.Tokens = fmt.Sprintf("%s in / %s out tokens", Tokens(m.Prompt), Tokens(m.Completion))
		}
		tr.Steps = append(tr.Steps, ts)
	}
	return tr
}

// contentString is an ATIF message or content: a string, or the text of its parts
// (an image part is named).
func contentString(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) != nil {
		return ""
	}
	var b strings.Builder
	for _, p := range parts {
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		if p.Type == "text" {
			b.WriteString(p.Text)
		} else {
			b.WriteString("[" + p.Type + "]")
		}
	}
	return b.String()
}

// clipText cuts s to at most n bytes on a rune boundary.
func clipText(s string, n int) (string, bool) {
	if len(s) <= n {
		return s, false
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n], true
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

// transcriptsOf returns the transcripts of r's runs, in r's order.
func transcriptsOf(r *result.Result, ts Transcripts) []Transcript {
	var out []Transcript
	for _, ref := range r.Trajectories {
		if t, ok := ts[ref.Path]; ok {
			out = append(out, t)
		}
	}
	return out
}

// addTranscripts gives every card of v its result's transcripts.
func addTranscripts(v *dashView, ts Transcripts) {
	if len(ts) == 0 {
		return
	}
	forEachCard(v, func(cv *cardView) {
		if cv.R != nil {
			cv.Transcripts = transcriptsOf(cv.R, ts)
		}
	})
}

// forEachCard calls f with every card of v's grids.
func forEachCard(v *dashView, f func(*cardView)) {
	for si := range v.Suites {
		for ri := range v.Suites[si].Rows {
			for ci := range v.Suites[si].Rows[ri].Cells {
				for k := range v.Suites[si].Rows[ri].Cells[ci] {
					f(&v.Suites[si].Rows[ri].Cells[ci][k])
				}
			}
		}
	}
}

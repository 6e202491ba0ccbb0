package catalog

import (
	"encoding/hex"
	"fmt"
	"strconv"

	"github.com/agentproof/agentproof/agent/script"
	"github.com/agentproof/agentproof/match"
)

// NoncePattern is what a per-attempt nonce must look like (script.NoncePattern).
var NoncePattern = script.NoncePattern

// sampleNonce renders templates during validation.
const sampleNonce = "0123456789abcdef"

// RenderedCase is a case with every template rendered for one attempt of one cell.
type RenderedCase struct {
	Nonce           string
	Title           string
	Prompt          string
	Marker          string
	Followups       []string
	RevisionRequest string
	QuestionAnswer  *QuestionAnswer
	PlanMarkers     *PlanMarkers
	TurnMarkers     []string
	WorkspaceFile   string
	Matchers        []match.Spec
	Reference       *ReferenceScript
}

// markerVars are the variables of marker templates (marker, plan markers, turn
// markers, answer marker, workspace file): only the nonce.
func markerVars(nonce string) map[string]string {
	return map[string]string{"nonce": nonce}
}

// caseVars renders c's marker templates and returns every variable its other templates
// may use: nonce, nonceHex (the hexadecimal form of the nonce's bytes: a binary file's
// bytes, written as hexadecimal, can carry the nonce), marker, draftMarker, revisedMarker, answerMarker, answerOption,
// turnMarker1…turnMarkerN, workspaceFile, issueStatus, runStatus, and — when a cell is
// known — runtimeMode (the profile's generation) and environment (the environment id).
func caseVars(c *Case, nonce, runtimeMode, environment string) (map[string]string, error) {
	mv := markerVars(nonce)
	vars := map[string]string{
		"nonce":       nonce,
		"nonceHex":    hex.EncodeToString([]byte(nonce)),
		"issueStatus": c.ExpectedTerminalState.Issue,
		"runStatus":   c.ExpectedTerminalState.Run,
		"runtimeMode": runtimeMode,
		"environment": environment,
	}
	set := func(name, tmpl string) error {
		if tmpl == "" {
			return nil
		}
		s, err := renderString(tmpl, mv)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		vars[name] = s
		return nil
	}
	if err := set("marker", c.Marker); err != nil {
		return nil, err
	}
	if err := set("workspaceFile", c.WorkspaceFile); err != nil {
		return nil, err
	}
	if c.PlanMarkers != nil {
		if err := set("draftMarker", c.PlanMarkers.Draft); err != nil {
			return nil, err
		}
		if err := set("revisedMarker", c.PlanMarkers.Revised); err != nil {
			return nil, err
		}
	}
	if c.QuestionAnswer != nil {
		if err := set("answerMarker", c.QuestionAnswer.ExpectedMarker); err != nil {
			return nil, err
		}
		if err := set("answerOption", c.QuestionAnswer.OptionLabel); err != nil {
			return nil, err
		}
	}
	for i, t := range c.TurnMarkers {
		if err := set("turnMarker"+strconv.Itoa(i+1), t); err != nil {
			return nil, err
		}
	}
	return vars, nil
}

// Render renders the cell's case for one attempt with the given nonce (see
// NoncePattern). It returns an error when the nonce is malformed or a template names an
// undefined variable (validation makes the latter impossible for a loaded catalog).
func (cell *Cell) Render(nonce string) (*RenderedCase, error) {
	if !NoncePattern().MatchString(nonce) {
		return nil, fmt.Errorf("catalog: nonce %q does not match %s", nonce, NoncePattern())
	}
	return renderCase(cell.Case, nonce, cell.Profile.Generation, cell.Environment.ID)
}

func renderCase(c *Case, nonce, runtimeMode, environment string) (*RenderedCase, error) {
	vars, err := caseVars(c, nonce, runtimeMode, environment)
	if err != nil {
		return nil, fmt.Errorf("case %s: %w", c.ID, err)
	}
	r := &RenderedCase{
		Nonce:         nonce,
		Marker:        vars["marker"],
		WorkspaceFile: vars["workspaceFile"],
	}
	var firstErr error
	str := func(field, s string) string {
		out, err := renderString(s, vars)
		if err != nil && firstErr == nil {
			firstErr = fmt.Errorf("case %s: %s: %w", c.ID, field, err)
		}
		return out
	}
	r.Title = str("title", c.Title)
	r.Prompt = str("prompt", c.Prompt)
	r.RevisionRequest = str("revisionRequest", c.RevisionRequest)
	for i, f := range c.Followups {
		r.Followups = append(r.Followups, str(fmt.Sprintf("followups[%d]", i), f))
	}
	if c.QuestionAnswer != nil {
		r.QuestionAnswer = &QuestionAnswer{OptionLabel: vars["answerOption"], ExpectedMarker: vars["answerMarker"]}
	}
	if c.PlanMarkers != nil {
		r.PlanMarkers = &PlanMarkers{Draft: vars["draftMarker"], Revised: vars["revisedMarker"]}
	}
	for i := range c.TurnMarkers {
		r.TurnMarkers = append(r.TurnMarkers, vars["turnMarker"+strconv.Itoa(i+1)])
	}
	for i, m := range c.Matchers {
		rm, err := renderMatcher(m, vars)
		if err != nil && firstErr == nil {
			firstErr = fmt.Errorf("case %s: matchers[%d]: %w", c.ID, i, err)
		}
		r.Matchers = append(r.Matchers, rm)
	}
	if c.Reference != nil {
		ref, err := renderScript(c.Reference, vars)
		if err != nil && firstErr == nil {
			firstErr = fmt.Errorf("case %s: reference: %w", c.ID, err)
		}
		r.Reference = ref
	}
	if firstErr != nil {
		return nil, firstErr
	}
	return r, nil
}

// renderMatcher renders every string field of a matcher spec, including strings nested
// in expected and schema.
func renderMatcher(m match.Spec, vars map[string]string) (match.Spec, error) {
	out := m
	var err error
	fields := []struct {
		name string
		p    *string
	}{{"pattern", &out.Pattern}, {"path", &out.Path}, {"name", &out.Name}, {"mimeType", &out.MimeType}}
	for _, f := range fields {
		if *f.p, err = renderString(*f.p, vars); err != nil {
			return out, fmt.Errorf("%s: %w", f.name, err)
		}
	}
	if out.Expected, err = renderValue(m.Expected, vars); err != nil {
		return out, fmt.Errorf("expected: %w", err)
	}
	if out.Schema, err = renderValue(m.Schema, vars); err != nil {
		return out, fmt.Errorf("schema: %w", err)
	}
	return out, nil
}

func renderScript(s *ReferenceScript, vars map[string]string) (*ReferenceScript, error) {
	out := &ReferenceScript{}
	for ti, t := range s.Turns {
		rt := &ReferenceTurn{Trigger: t.Trigger, Task: t.Task}
		for si, st := range t.Steps {
			rs := &ReferenceStep{Command: st.Command, Present: st.Present}
			if st.FromHome != nil {
				rs.FromHome = make(map[string]string, len(st.FromHome))
				for k, p := range st.FromHome {
					r, err := renderString(p, vars)
					if err != nil {
						return nil, fmt.Errorf("turns[%d].steps[%d].fromHome.%s: %w", ti, si, k, err)
					}
					rs.FromHome[k] = r
				}
			}
			if st.Args != nil {
				a, err := renderValue(st.Args, vars)
				if err != nil {
					return nil, fmt.Errorf("turns[%d].steps[%d].args.%w", ti, si, err)
				}
				rs.Args = a.(map[string]any)
			}
			if st.Wait != nil {
				w := *st.Wait
				var err error
				if w.Ready, err = renderString(w.Ready, vars); err != nil {
					return nil, fmt.Errorf("turns[%d].steps[%d].wait.ready: %w", ti, si, err)
				}
				if w.Release, err = renderString(w.Release, vars); err != nil {
					return nil, fmt.Errorf("turns[%d].steps[%d].wait.release: %w", ti, si, err)
				}
				rs.Wait = &w
			}
			if st.Run != nil {
				r := script.Run{TimeoutMs: st.Run.TimeoutMs}
				for ai, a := range st.Run.Command {
					s, err := renderString(a, vars)
					if err != nil {
						return nil, fmt.Errorf("turns[%d].steps[%d].run.command[%d]: %w", ti, si, ai, err)
					}
					r.Command = append(r.Command, s)
				}
				rs.Run = &r
			}
			if st.Edit != nil {
				e := *st.Edit
				var err error
				if e.Path, err = renderString(e.Path, vars); err != nil {
					return nil, fmt.Errorf("turns[%d].steps[%d].edit.path: %w", ti, si, err)
				}
				for name, p := range map[string]**string{"write": &e.Write, "writeHex": &e.WriteHex, "append": &e.Append} {
					if *p == nil {
						continue
					}
					s, err := renderString(**p, vars)
					if err != nil {
						return nil, fmt.Errorf("turns[%d].steps[%d].edit.%s: %w", ti, si, name, err)
					}
					*p = &s
				}
				rs.Edit = &e
			}
			rt.Steps = append(rt.Steps, rs)
		}
		out.Turns = append(out.Turns, rt)
	}
	return out, nil
}

package reference

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"

	"github.com/agentproof/agentproof/agent/script"
)

// WrongNonce returns the nonce the wrong agent uses instead of nonce: 16 lower-case hex
// digits of SHA-256("agentproof-wrong-nonce:" + nonce [+ ":" + n]), with the smallest n
// that makes it neither contain nonce nor be contained in it, so no marker built from it
// can contain the right marker. It matches script.NoncePattern.
func WrongNonce(nonce string) string {
	for n := 0; ; n++ {
		seed := "agentproof-wrong-nonce:" + nonce
		if n > 0 {
			seed += ":" + strconv.Itoa(n)
		}
		sum := sha256.Sum256([]byte(seed))
		w := hex.EncodeToString(sum[:8])
		if !strings.Contains(w, nonce) && !strings.Contains(nonce, w) {
			return w
		}
	}
}

// WrongScript returns a copy of src (rendered with nonce) in which every occurrence
// of nonce — in command arguments at any depth, edit paths and edit contents — is
// replaced by WrongNonce(nonce) (and its hexadecimal form by the wrong nonce's): the plausible-but-wrong behaviour of the `wrong`
// calibration agent (profile strategy wrong_nonce). src is not modified. It returns
// an error when nonce is empty or does not occur in the script at all (the result would
// not be wrong).
func WrongScript(src *script.Script, nonce string) (*script.Script, error) {
	if nonce == "" {
		return nil, errors.New("reference: the wrong agent needs the attempt's nonce")
	}
	if src == nil {
		return nil, errors.New("reference: no reference script")
	}
	wrong := WrongNonce(nonce)
	found := false
	// the hexadecimal form of the nonce (catalog variable nonceHex: a binary's bytes)
	// is wrong too
	hexNonce, hexWrong := hex.EncodeToString([]byte(nonce)), hex.EncodeToString([]byte(wrong))
	sub := func(s string) string {
		if strings.Contains(s, nonce) || strings.Contains(s, hexNonce) {
			found = true
			return strings.ReplaceAll(strings.ReplaceAll(s, hexNonce, hexWrong), nonce, wrong)
		}
		return s
	}
	out := remadeTurns(src, func(t *script.Turn) []*script.Step {
		var steps []*script.Step
		for _, st := range t.Steps {
			steps = append(steps, substituted(st, sub))
		}
		return steps
	})
	if !found {
		return nil, errors.New("reference: the nonce occurs nowhere in the reference script, so the wrong agent could not be wrong")
	}
	return out, nil
}

// substituted is a copy of step st (nil stays nil) with sub applied to every string it
// carries: command arguments at any depth, home paths, the edit's path and contents,
// the wait's files and the run's command.
func substituted(st *script.Step, sub func(string) string) *script.Step {
	if st == nil {
		return nil
	}
	ns := &script.Step{Command: st.Command, Present: st.Present}
	if st.Args != nil {
		ns.Args = replaceValue(st.Args, sub).(map[string]any)
	}
	if st.FromHome != nil {
		ns.FromHome = make(map[string]string, len(st.FromHome))
		for k, p := range st.FromHome {
			ns.FromHome[k] = sub(p)
		}
	}
	if e := st.Edit; e != nil {
		ns.Edit = &script.Edit{Root: e.Root, Path: sub(e.Path), Delete: e.Delete,
			Write: subPtr(e.Write, sub), WriteHex: subPtr(e.WriteHex, sub), Append: subPtr(e.Append, sub)}
	}
	if w := st.Wait; w != nil {
		ns.Wait = &script.Wait{Ready: sub(w.Ready), Release: sub(w.Release), TimeoutMs: w.TimeoutMs}
	}
	if r := st.Run; r != nil {
		nr := &script.Run{TimeoutMs: r.TimeoutMs}
		for _, a := range r.Command {
			nr.Command = append(nr.Command, sub(a))
		}
		ns.Run = nr
	}
	return ns
}

// subPtr is sub of *p in a new string (nil stays nil).
func subPtr(p *string, sub func(string) string) *string {
	if p == nil {
		return nil
	}
	s := sub(*p)
	return &s
}

// replaceValue copies a decoded YAML/JSON value, applying sub to every string.
func replaceValue(v any, sub func(string) string) any {
	switch x := v.(type) {
	case string:
		return sub(x)
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, val := range x {
			out[k] = replaceValue(val, sub)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, val := range x {
			out[i] = replaceValue(val, sub)
		}
		return out
	default:
		return v
	}
}

package attempt

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentproof/agentproof/controlplane"
	"github.com/agentproof/agentproof/match"
	"github.com/agentproof/agentproof/redact"
)

// TestMatchObservationRedactsEncodedCopies: a message that holds an encoded copy of a
// secret (hex, base64) is graded, but no matcher outcome repeats the copy: the
// observation's secrets are every form of the set, not only the values.
func TestMatchObservationRedactsEncodedCopies(t *testing.T) {
	t.Parallel()
	secret := "apf-credential-0123456789abcdef"
	for _, copy := range []string{hex.EncodeToString([]byte(secret)), strings.ToUpper(hex.EncodeToString([]byte(secret))),
		base64.StdEncoding.EncodeToString([]byte(secret)), base64.RawURLEncoding.EncodeToString([]byte("xy" + secret))[3:]} {
		st := &controlplane.State{
			Tasks:    []*controlplane.Task{{ID: "t-1", Status: "done"}},
			Comments: []*controlplane.Comment{{ID: "c-1", TaskID: "t-1", Body: "here: " + copy}},
			Runs:     []*controlplane.Run{{ID: "r-1", TaskID: "t-1", Status: "succeeded", Result: json.RawMessage(`{"result":{"presentationDecision":{"commentId":"c-1"}}}`)}},
		}
		obs := matchObservation(st, &Fixtures{TaskID: "t-1", Secrets: redact.NewSet(secret)}, st.Runs, nil, nil, nil)
		if obs.Message != "here: "+copy {
			t.Fatalf("message %q, want the posted comment", obs.Message)
		}
		m, err := match.Compile(match.Spec{Kind: "message_exact", Expected: "MARK"})
		if err != nil {
			t.Fatal(err)
		}
		out := m.Evaluate(obs)
		if out.Passed {
			t.Fatalf("message_exact passed on %q", obs.Message)
		}
		b, _ := json.Marshal(out)
		if strings.Contains(string(b), copy) {
			t.Errorf("the outcome repeats the encoded copy %q: %s", copy, b)
		}
	}
}

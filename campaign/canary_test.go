package campaign

import (
	"strings"
	"testing"

	"github.com/agentproof/agentproof/redact"
)

// TestCanariesHaveEveryShape: each canary is recognised by redact as the shape it
// claims, every shape redact knows is covered, and the values differ per campaign.
func TestCanariesHaveEveryShape(t *testing.T) {
	t.Parallel()
	shapes := map[string]bool{}
	for _, c := range Canaries("c1") {
		t.Run(c.Name, func(t *testing.T) {
			t.Parallel()
			l, ok := redact.NewSet().FindLeak([]byte(c.Value), true)
			if !ok || l.Reason != redact.ReasonShape || l.Shape != c.Shape {
				t.Errorf("shape of %s = %+v (found %v), want %s", c.Name, l, ok, c.Shape)
			}
			if !strings.HasPrefix(c.Name, CanaryPrefix) {
				t.Errorf("name %s lacks %s", c.Name, CanaryPrefix)
			}
			if got := redact.NewSet().RedactText("x " + c.Value + " y"); strings.Contains(got, c.Value) {
				t.Errorf("shape redaction left %s", c.Name)
			}
		})
		shapes[c.Shape] = true
	}
	for _, want := range []string{"anthropic-key", "openai-key", "provider-key-assignment", "bearer-token", "jwt", "private-key-block"} {
		if !shapes[want] {
			t.Errorf("no canary of shape %s", want)
		}
	}
	a, b := CanaryValues("c1"), CanaryValues("c2")
	if len(a) < len(Canaries("c1")) || a[0] == b[0] {
		t.Errorf("canary values must be per campaign: %d values", len(a))
	}
	if strings.Join(a, ",") != strings.Join(CanaryValues("c1"), ",") {
		t.Error("canary values must be reproducible")
	}
}

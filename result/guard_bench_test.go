package result

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/agentproof/agentproof/redact"
)

// BenchmarkGuardSanitize measures the evidence guard on clean content (the common case:
// scan only, written byte for byte): a 64 KiB log and a 64 KiB JSON snapshot, with a
// secret set of ten values.
func BenchmarkGuardSanitize(b *testing.B) {
	var vals []string
	for i := range 10 {
		vals = append(vals, fmt.Sprintf("bench-secret-%02d-0123456789abcdef", i))
	}
	g := Guard{Secrets: redact.NewSet(vals...)}
	line := "2026-11-30T04:00:00Z run hb-1 step 3: report_progress accepted\n"
	log := []byte(strings.Repeat(line, (64<<10)/len(line)))
	items := make([]map[string]any, 0, 400)
	for i := range 400 {
		items = append(items, map[string]any{"id": fmt.Sprintf("comment-%04d", i), "body": "Starting the task, step " + fmt.Sprint(i), "authorActorId": "agent-1"})
	}
	doc, _ := json.Marshal(map[string]any{"comments": items})
	for _, c := range []struct {
		name string
		data []byte
	}{{"log", log}, {"json", doc}} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(c.data)))
			for b.Loop() {
				if _, leaks, err := g.Sanitize("a."+c.name, c.data, true); err != nil || len(leaks) > 0 {
					b.Fatal(err, leaks)
				}
			}
		})
	}
}

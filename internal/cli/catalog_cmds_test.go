package cli

import (
	"bytes"
	"strings"
	"testing"

	"gotest.tools/v3/golden"

	"github.com/agentproof/agentproof/verdict"
)

// TestCatalogCommandExitCodes pins the exit codes of validate, list and fingerprint.
func TestCatalogCommandExitCodes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args []string
		want verdict.ExitCode
	}{
		{[]string{"validate"}, ExitOK},
		{[]string{"validate", "--catalog", "testdata/no-such-dir"}, ExitUsage},
		{[]string{"list"}, ExitOK},
		{[]string{"list", "--all"}, ExitOK},
		{[]string{"list", "--suite", "nope"}, ExitUsage},
		{[]string{"list", "--group", "core", "--group", "fixture"}, ExitUsage}, // zero cells
		{[]string{"list", "--id", "x", "--suite", "calibration"}, ExitUsage},
		{[]string{"list", "--matrix-json", "--all"}, ExitOK},
		{[]string{"list", "extra"}, ExitUsage},
		{[]string{"fingerprint"}, ExitOK},
		{[]string{"fingerprint", "--suite", "nope"}, ExitUsage},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			t.Parallel()
			var out, errb bytes.Buffer
			if got := verdict.ExitCode(Main(tt.args, strings.NewReader(""), &out, &errb)); got != tt.want {
				t.Errorf("exit = %d, want %d; stderr: %s", got, tt.want, errb.String())
			}
		})
	}
}

// TestListAllGolden pins `agentproof list --all` on the default catalog.
func TestListAllGolden(t *testing.T) {
	t.Parallel()
	var out, errb bytes.Buffer
	if code := Main([]string{"list", "--all"}, strings.NewReader(""), &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	golden.Assert(t, out.String(), "list-all.txt")
}

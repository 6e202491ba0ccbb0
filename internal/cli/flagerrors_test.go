package cli

import (
	"bytes"
	"strings"
	"testing"

	"github.com/agentproof/agentproof/verdict"
)

// TestInvalidFlagValue: a flag value that does not parse is a usage error (exit 2)
// naming the value, the flag and what it wants, never strconv's text.
func TestInvalidFlagValue(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--all", "--max-parallel", "abc"}, `agentproof: invalid value "abc" for --max-parallel: want a whole number ≥ 1`},
		{[]string{"run", "--all", "--max-automatic-retries=x"}, `agentproof: invalid value "x" for --max-automatic-retries: want 0 or 1`},
		{[]string{"run", "--all", "--repeat", "1.5"}, `agentproof: invalid value "1.5" for --repeat: want a whole number from 1 to 1000`},
		{[]string{"run", "--all", "--seed", "s"}, `agentproof: invalid value "s" for --seed: want a whole number (64-bit)`},
		{[]string{"fixture", "run", "pass", "--timeout", "5"}, `agentproof: invalid value "5" for --timeout: want a duration such as 30s, 5m or 1h30m`},
		{[]string{"run", "--all", "--canary=maybe"}, `agentproof: invalid value "maybe" for --canary: want true or false`},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			t.Parallel()
			var out, errout bytes.Buffer
			code := Main(tc.args, nil, &out, &errout)
			if verdict.ExitCode(code) != ExitUsage {
				t.Errorf("exit %d, want %d; stderr %s", code, ExitUsage, &errout)
			}
			first, _, _ := strings.Cut(errout.String(), "\n")
			if first != tc.want {
				t.Errorf("stderr first line %q, want %q", first, tc.want)
			}
			if strings.Contains(errout.String(), "strconv") || strings.Contains(errout.String(), "time: ") {
				t.Errorf("stderr quotes the parser: %s", &errout)
			}
		})
	}
}

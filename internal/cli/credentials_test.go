package cli

import (
	"bytes"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentproof/agentproof/catalog"
)

// TestCredentialsWire: the values run hands to itself over its memory file come back
// as they went, empty values and values with '=' or newlines included; a malformed
// form is refused.
func TestCredentialsWire(t *testing.T) {
	t.Parallel()
	for _, values := range []map[string]string{
		{},
		{"OPENAI_API_KEY": "sk-x"},
		{"A": "", "B": "x=y\nz", "GROK_AUTH_JSON": `{"token":"t"}`},
	} {
		got, err := decodeCredentials(encodeCredentials(values))
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(values, got.values); diff != "" {
			t.Errorf("round trip (-want +got):\n%s", diff)
		}
	}
	for _, bad := range []string{"A\x00", "A\x00x", "A\x00x\x00B\x00"} {
		if _, err := decodeCredentials([]byte(bad)); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
	if v, ok := (credentials{values: map[string]string{"A": ""}}).lookup("A"); ok || v != "" {
		t.Errorf("an empty value is not set: got %q, %v", v, ok)
	}
}

// TestDeclaredCredentials: every credential the default catalog declares is taken
// out of run's environment, with the live providers' variables.
func TestDeclaredCredentials(t *testing.T) {
	t.Parallel()
	c, err := catalog.Default()
	if err != nil {
		t.Fatal(err)
	}
	names := declaredCredentials(c)
	for _, want := range []string{"OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENROUTER_API_KEY", "GROK_AUTH_JSON", "DAYTONA_API_KEY"} {
		if !strings.Contains(" "+strings.Join(names, " ")+" ", " "+want+" ") {
			t.Errorf("%s is not among %v", want, names)
		}
	}
}

// TestTakeCredentialsInProcess: a run that is not its process's command line (Main
// called by a test) cannot re-execute itself: it unsets the variables and says that
// the initial environment still holds them.
func TestTakeCredentialsInProcess(t *testing.T) {
	t.Setenv("APF_TAKE_TEST", "value-1")
	var stderr bytes.Buffer
	a := &app{stderr: &stderr}
	c, err := a.takeCredentials([]string{"APF_TAKE_TEST", "APF_TAKE_ABSENT"}, func() { t.Fatal("quiesced without re-executing") })
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := c.lookup("APF_TAKE_TEST"); !ok || v != "value-1" {
		t.Errorf("lookup: %q, %v", v, ok)
	}
	if _, ok := c.lookup("APF_TAKE_ABSENT"); ok {
		t.Error("an unset variable is set")
	}
	if !strings.Contains(stderr.String(), "stay in /proc/") {
		t.Errorf("no warning: %q", stderr.String())
	}
}

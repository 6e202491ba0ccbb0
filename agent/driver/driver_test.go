package driver_test

import (
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/agentproof/agentproof/agent"
	"github.com/agentproof/agentproof/agent/clis"
	"github.com/agentproof/agentproof/agent/driver"
	"github.com/agentproof/agentproof/agent/hostile"
	"github.com/agentproof/agentproof/worker"
)

// TestMain registers the names the command line registers at its start.
func TestMain(m *testing.M) {
	agent.RegisterDrivers()
	os.Exit(m.Run())
}

// TestRegistered: the registered kinds hold exactly the registries' names, in their
// order (fixture programs, pinned CLIs with an exec driver, hostile attacks);
// registering again changes nothing; a kind whose names are fixed here, or an empty
// name, panics; a newly registered name parses from then on, and only it.
func TestRegistered(t *testing.T) {
	t.Parallel()
	want := map[driver.Kind][]string{
		driver.KindFixture: worker.Fixtures(),
		driver.KindCLI:     {"codex", "opencode", "claude", "kilo", "qwen", "copilot"},
		driver.KindHostile: hostile.SuiteAttacks,
	}
	if !slices.Equal(want[driver.KindCLI], clis.ExecNames()) {
		t.Errorf("clis.ExecNames() = %v", clis.ExecNames())
	}
	agent.RegisterDrivers() // again: idempotent
	for _, k := range driver.Registrable {
		if got := driver.Registered(k); !slices.Equal(got, want[k]) {
			t.Errorf("Registered(%s) = %v, want %v", k, got, want[k])
		}
	}
	for _, c := range clis.ExecNames() {
		if _, pinned := clis.Lookup(c); !pinned {
			t.Errorf("exec CLI %s is not pinned", c)
		}
	}
	for _, bad := range []func(){
		func() { driver.Register(driver.KindACP, "aider") },
		func() { driver.Register(driver.KindReference, "x") },
		func() { driver.Register(driver.KindFixture, "") },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Error("Register did not panic")
				}
			}()
			bad()
		}()
	}
	if _, err := driver.Parse("acp:aider"); err == nil {
		t.Error("a refused registration was accepted")
	}
	// A name registered for a kind parses from then on; a name of the same kind that
	// is not registered stays unknown.
	if _, err := driver.Parse("fixture:registered-by-test"); err == nil {
		t.Fatal("an unregistered fixture parsed")
	}
	driver.Register(driver.KindFixture, "registered-by-test")
	if n, err := driver.Parse("fixture:registered-by-test"); err != nil || n.Arg != "registered-by-test" {
		t.Fatalf("a registered fixture: %+v, %v", n, err)
	}
	if _, err := driver.Parse("fixture:registered-by-nobody"); err == nil {
		t.Fatal("an unregistered fixture parsed after another was registered")
	}
	if !slices.Contains(driver.Names(), "fixture:registered-by-test") {
		t.Error("Names does not list the registered fixture")
	}
}

// TestParse: every listed name parses and prints back; near misses are refused by an
// *Error that names the string and the accepted names.
func TestParse(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in                         string
		kind                       driver.Kind
		arg                        string
		builtin, reference, silent bool
	}{
		{"fixture:hang", driver.KindFixture, "hang", false, false, true},
		{"reference", driver.KindReference, "", true, true, false},
		{"nop", driver.KindNop, "", true, false, true},
		{"wrong", driver.KindWrong, "", true, true, false},
		{"leaky", driver.KindLeaky, "", true, true, false},
		{"exec", driver.KindExec, "", false, false, false},
		{"exec:codex", driver.KindCLI, "codex", false, false, false},
		{"exec:claude", driver.KindCLI, "claude", false, false, false},
		{"acp:reference", driver.KindACP, "reference", false, true, false},
		{"acp:nop", driver.KindACP, "nop", false, false, false},
		{"acp:wrong", driver.KindACP, "wrong", false, true, false},
		{"acp:codex", driver.KindACP, "codex", false, false, false},
		{"acp:gemini", driver.KindACP, "gemini", false, false, false},
		{"rpc:pi", driver.KindRPC, "pi", false, false, false},
		{"app:codex", driver.KindApp, "codex", false, false, false},
	}
	for _, tc := range tests {
		n, err := driver.Parse(tc.in)
		if err != nil {
			t.Fatalf("Parse(%q): %v", tc.in, err)
		}
		if n.Kind != tc.kind || n.Arg != tc.arg || n.String() != tc.in || n.Builtin() != tc.builtin || n.NeedsReference() != tc.reference || n.Silent() != tc.silent {
			t.Errorf("Parse(%q) = %+v (builtin %v, reference %v, silent %v)", tc.in, n, n.Builtin(), n.NeedsReference(), n.Silent())
		}
		if _, ok := n.CLI(); ok != (tc.kind == driver.KindCLI) {
			t.Errorf("%s.CLI() ok = %v", tc.in, ok)
		}
		if _, ok := n.Fixture(); ok != (tc.kind == driver.KindFixture) {
			t.Errorf("%s.Fixture() ok = %v", tc.in, ok)
		}
		if a, ok := n.ACP(); ok != (tc.kind == driver.KindACP) || (ok && a != tc.arg) {
			t.Errorf("%s.ACP() = %q, %v", tc.in, a, ok)
		}
		if pkg, ok := n.Package(); ok != (tc.kind == driver.KindCLI || tc.kind == driver.KindRPC || tc.kind == driver.KindApp || tc.kind == driver.KindACP && !n.BuiltinACP()) {
			t.Errorf("%s.Package() = %q, %v", tc.in, pkg, ok)
		} else if _, pinned := clis.Lookup(pkg); ok && !pinned {
			t.Errorf("%s.Package() = %q, not a pinned package", tc.in, pkg)
		}
		if n.BuiltinACP() != (tc.kind == driver.KindACP && (tc.arg == "reference" || tc.arg == "nop" || tc.arg == "wrong")) {
			t.Errorf("%s.BuiltinACP() = %v", tc.in, n.BuiltinACP())
		}
		if n.Session() != (tc.kind == driver.KindRPC) {
			t.Errorf("%s.Session() = %v", tc.in, n.Session())
		}
		if n.SessionLayer() != (tc.kind == driver.KindACP || tc.kind == driver.KindRPC || tc.kind == driver.KindApp) {
			t.Errorf("%s.SessionLayer() = %v", tc.in, n.SessionLayer())
		}

	}
	for _, bad := range []string{"", "fixture:", "fixture:slow", "exec:", "exec:aider", "Reference", " nop", "exec:codex ", "fixture",
		"acp:", "acp:aider", "acp:Reference", "acp:codex-acp",
		// Pinned packages without an exec driver, and unknown RPC agents.
		"exec:pi", "exec:gemini", "exec:codex-acp", "rpc:", "rpc:codex", "rpc:Pi", "app:", "app:pi", "app:Codex"} {
		_, err := driver.Parse(bad)
		var de *driver.Error
		if err == nil || !strings.Contains(err.Error(), "exec:opencode") {
			t.Errorf("Parse(%q) = %v, want an error listing the drivers", bad, err)
		} else if de, _ = err.(*driver.Error); de == nil || de.Driver != bad {
			t.Errorf("Parse(%q) error %T %+v", bad, err, err)
		}
	}
	for _, s := range driver.Names() {
		if n, err := driver.Parse(s); err != nil || n.String() != s {
			t.Errorf("listed name %q: %+v, %v", s, n, err)
		}
	}
}

// TestNameJSON: a Name round-trips as its driver string; an unknown one fails decoding.
func TestNameJSON(t *testing.T) {
	t.Parallel()
	var v struct {
		D driver.Name `json:"driver"`
	}
	if err := json.Unmarshal([]byte(`{"driver":"exec:opencode"}`), &v); err != nil || v.D != (driver.Name{Kind: driver.KindCLI, Arg: "opencode"}) {
		t.Fatalf("decode: %+v, %v", v, err)
	}
	if b, _ := json.Marshal(v); string(b) != `{"driver":"exec:opencode"}` {
		t.Fatalf("encode: %s", b)
	}
	if err := json.Unmarshal([]byte(`{"driver":"exec:nope"}`), &v); err == nil || !strings.Contains(err.Error(), `unknown driver "exec:nope"`) {
		t.Fatalf("unknown driver decoded: %v", err)
	}
	if err := json.Unmarshal([]byte(`{"driver":7}`), &v); err == nil {
		t.Fatal("a number decoded as a driver")
	}
}

// FuzzParse: Parse never panics, and what it accepts prints back to the same string.
func FuzzParse(f *testing.F) {
	for _, s := range append(driver.Names(), "", "exec:", "fixture:x") {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := driver.Parse(s)
		if err == nil && n.String() != s {
			t.Fatalf("Parse(%q) = %+v prints %q", s, n, n.String())
		}
	})
}

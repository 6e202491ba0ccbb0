package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentproof/agentproof/agent/clis"
	"github.com/agentproof/agentproof/verdict"
)

// TestAgentsListEmptyCache: in an empty cache every pinned CLI is listed as not
// installed, the required ones counted with the command that installs them; nothing is
// installed or created; exit 0. --json lists the same, and an argument is a usage
// error.
func TestAgentsListEmptyCache(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "cache")
	var out, errb bytes.Buffer
	if code := verdict.ExitCode(Main([]string{"agents", "list", "--dir", dir}, nil, &out, &errb)); code != ExitOK {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	required := 0
	for _, c := range clis.Pinned {
		if !strings.Contains(out.String(), c.Package+"@"+c.Version) {
			t.Errorf("%s is not listed:\n%s", c.Spec(), out.String())
		}
		if !c.Optional {
			required++
		}
	}
	if want := fmt.Sprintf("\n%d CLI(s) not installed: 'agentproof agents install' installs them", required); !strings.Contains(out.String(), want) {
		t.Errorf("want %d required CLIs counted as not installed:\n%s", required, out.String())
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("agents list created the cache directory (%v)", err)
	}
	out.Reset()
	if code := verdict.ExitCode(Main([]string{"agents", "list", "--dir", dir, "--json"}, nil, &out, &errb)); code != ExitOK {
		t.Fatalf("--json: exit %d: %s", code, errb.String())
	}
	var doc struct {
		Dir    string            `json:"dir"`
		Agents []agentsListEntry `json:"agents"`
	}
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil || doc.Dir != dir || len(doc.Agents) != len(clis.Pinned) {
		t.Fatalf("--json: %v %+v", err, doc)
	}
	for _, e := range doc.Agents {
		if e.Installed || e.Problem != "not installed" || e.Binary != "" {
			t.Errorf("--json entry %+v, want not installed", e)
		}
	}
	if code := verdict.ExitCode(Main([]string{"agents", "list", "codex"}, nil, &out, &errb)); code != ExitUsage {
		t.Errorf("agents list codex: exit %d, want %d", code, ExitUsage)
	}
}

// TestAgentsListInstalled: with the pinned CLIs installed (CI installs them; the
// cache the scripts use), each required CLI is listed as installed with the native
// binary and SHA-256 its install recorded, as clis.Locate finds them.
func TestAgentsListInstalled(t *testing.T) {
	t.Parallel()
	codex := locateCLI(t, "codex") // skips (or fails in CI) without the pinned CLIs
	dir := scriptAgentsDir()
	var out, errb bytes.Buffer
	if code := verdict.ExitCode(Main([]string{"agents", "list", "--dir", dir, "--json"}, nil, &out, &errb)); code != ExitOK {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var doc struct {
		Agents []agentsListEntry `json:"agents"`
	}
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	for _, e := range doc.Agents {
		c, _ := clis.Lookup(e.Name)
		if c.Optional {
			continue
		}
		in, err := clis.Locate(dir, c, clis.HostPlatform())
		if err != nil || !e.Installed || e.Binary != in.Binary || e.BinarySHA256 != in.BinarySHA256 || e.BinarySHA256 == "" {
			t.Errorf("%s: listed %+v, located %+v (%v)", e.Name, e, in, err)
		}
		if e.Name == "codex" && e.Binary != codex {
			t.Errorf("codex listed at %s, located at %s", e.Binary, codex)
		}
	}
}

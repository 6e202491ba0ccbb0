package result

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// mergeSource writes one attempt directory of cell core.p.local.c under root/<shard>
// with the given evidence files (path relative to the attempt → content, mode).
func mergeSource(t *testing.T, root string, files map[string]string, modes map[string]os.FileMode) string {
	t.Helper()
	dir := filepath.Join(root, "shard-1", "camp", "core", "p", "local", "c", "attempt-1")
	files[ResultFile] = `{"executionId":"core.p.local.c","attempt":1,"campaignId":"camp"}`
	for rel, content := range files {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		mode := os.FileMode(FileMode)
		if m, ok := modes[rel]; ok {
			mode = m
		}
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestMergeLinksCleanEvidence: a merge links every file the guard leaves as it is and
// that has the mode a copy would get; a file with another mode is copied (mode 0644),
// a leaking file written redacted, a refused file left out, a record that does not
// decode or names no cell skipped with a warning; merging again changes nothing, and a
// half-merged attempt (evidence without result.json) is completed.
func TestMergeLinksCleanEvidence(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	const shaped = "sk-ant-api03-FAKEfakeFAKEfake0123456789"
	src := mergeSource(t, filepath.Join(tmp, "src"), map[string]string{
		"logs/agent.log":       "clean log\n",
		"snapshots/state.json": `{"ok":true}`,
		"private.json":         `{"mode":"0600"}`,
		"leak.txt":             "token " + shaped + "\n",
		"run.sh":               "#!/bin/sh\n",
	}, map[string]os.FileMode{"private.json": 0o600})
	for dir, doc := range map[string]string{"attempt-1": "{not json", "attempt-2": `{"executionId":"not-an-id","attempt":1}`} {
		bad := filepath.Join(tmp, "src", "shard-2", dir)
		if err := os.MkdirAll(bad, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(bad, ResultFile), []byte(doc), FileMode); err != nil {
			t.Fatal(err)
		}
	}
	out := filepath.Join(tmp, "out")
	merge := func() *Merged {
		t.Helper()
		m, err := Merge(MergeOptions{Sources: []string{filepath.Join(tmp, "src")}, ResultsRoot: out})
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	m := merge()
	if len(m.Copied) != 1 || len(m.Skipped) != 0 {
		t.Fatalf("first merge: %+v", m)
	}
	dst := filepath.Join(out, "camp", "core", "p", "local", "c", "attempt-1")
	same := func(rel string) bool {
		a, err := os.Stat(filepath.Join(src, rel))
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.Stat(filepath.Join(dst, rel))
		if err != nil {
			t.Fatal(err)
		}
		if b.Mode().Perm() != FileMode {
			t.Errorf("%s: mode %v, want %v", rel, b.Mode().Perm(), os.FileMode(FileMode))
		}
		return os.SameFile(a, b)
	}
	for _, rel := range []string{"logs/agent.log", "snapshots/state.json", ResultFile} {
		if !same(rel) {
			t.Errorf("%s: copied, want a hard link to the shard's file", rel)
		}
	}
	for _, rel := range []string{"private.json", "leak.txt"} {
		if same(rel) {
			t.Errorf("%s: linked, want a copy", rel)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(dst, "leak.txt")); strings.Contains(string(b), shaped) {
		t.Errorf("leak.txt keeps the secret: %q", b)
	}
	if _, err := os.Lstat(filepath.Join(dst, "run.sh")); !os.IsNotExist(err) {
		t.Errorf("run.sh copied (%v), want it left out", err)
	}
	if w := strings.Join(m.Warnings, "\n"); !strings.Contains(w, "leak.txt: secret leak") || !strings.Contains(w, "run.sh: not copied") ||
		!strings.Contains(w, "shard-2/attempt-1/result.json: not a result document") || !strings.Contains(w, "shard-2/attempt-2/result.json: no valid executionId and attempt") {
		t.Errorf("warnings: %q", m.Warnings)
	}
	if m2 := merge(); len(m2.Copied) != 0 || len(m2.Skipped) != 1 {
		t.Errorf("second merge: %+v", m2)
	}
	// A merge stopped after the evidence, before result.json: merging again completes it.
	if err := os.Remove(filepath.Join(dst, ResultFile)); err != nil {
		t.Fatal(err)
	}
	if m3 := merge(); len(m3.Copied) != 1 || !same(ResultFile) || !same("logs/agent.log") {
		t.Errorf("merge over a half-merged attempt: %+v", m3)
	}
}

// TestMergeLinkRules: canLink refuses another owner, another mode, another device;
// link refuses (and leaves nothing) when the source is not the file that was read,
// keeps a link made before and replaces another file.
func TestMergeLinkRules(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	c, err := newEvidenceCopier(filepath.Join(tmp, "camp"))
	if err != nil {
		t.Fatal(err)
	}
	write := func(name string, mode os.FileMode) (string, os.FileInfo) {
		p := filepath.Join(tmp, name)
		if err := os.WriteFile(p, []byte(name), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		return p, st
	}
	a, stA := write("a.json", FileMode)
	_, stB := write("b.json", 0o640)
	other := &evidenceCopier{uid: c.uid + 1, dev: c.dev, links: true}
	device := &evidenceCopier{uid: c.uid, dev: c.dev + 1, links: true}
	for _, tc := range []struct {
		name string
		c    *evidenceCopier
		st   os.FileInfo
		want bool
	}{
		{"own file, mode 0644, same device", c, stA, true},
		{"mode 0640", c, stB, false},
		{"another owner", other, stA, false},
		{"another device", device, stA, false},
	} {
		if got := tc.c.canLink(tc.st); got != tc.want {
			t.Errorf("%s: canLink %v, want %v", tc.name, got, tc.want)
		}
	}
	dst := filepath.Join(tmp, "camp", "x.json")
	if ok, err := link(a, dst, stB); ok || err != nil {
		t.Errorf("link of a replaced source: %v %v, want false, nil", ok, err)
	}
	if _, err := os.Lstat(dst); !os.IsNotExist(err) {
		t.Errorf("a refused link left %s (%v)", dst, err)
	}
	if ok, err := link(a, dst, stA); !ok || err != nil {
		t.Errorf("link: %v %v, want true, nil", ok, err)
	}
	// Linked already (a merge stopped before result.json): kept; another file there is
	// replaced by the link.
	if ok, err := link(a, dst, stA); !ok || err != nil {
		t.Errorf("link over itself: %v %v, want true, nil", ok, err)
	}
	if err := os.Remove(dst); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, []byte("stale"), FileMode); err != nil {
		t.Fatal(err)
	}
	if ok, err := link(a, dst, stA); !ok || err != nil {
		t.Errorf("link over a stale file: %v %v, want true, nil", ok, err)
	}
	if got, err := os.Stat(dst); err != nil || !os.SameFile(got, stA) {
		t.Errorf("after linking over a stale file, %s is not the source (%v)", dst, err)
	}
}

// TestMergeEvidenceIsNotAnAttempt: a result.json inside an attempt's logs or snapshots,
// in a directory named attempt-… (evidence an agent could have planted, naming another
// cell), is copied as that attempt's evidence and never merged as an attempt of the
// cell it names.
func TestMergeEvidenceIsNotAnAttempt(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	forged := `{"executionId":"core.other.local.c","attempt":1,"campaignId":"camp"}`
	mergeSource(t, filepath.Join(tmp, "src"), map[string]string{
		"logs/x/attempt-1/result.json":      forged,
		"snapshots/y/attempt-2/result.json": forged,
	}, nil)
	out := filepath.Join(tmp, "out")
	m, err := Merge(MergeOptions{Sources: []string{filepath.Join(tmp, "src")}, ResultsRoot: out, CampaignID: "camp"})
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Copied) != 1 || m.Copied[0] != "core/p/local/c/attempt-1" {
		t.Errorf("copied %v, want only core/p/local/c/attempt-1", m.Copied)
	}
	if _, err := os.Stat(filepath.Join(out, "camp", "core", "other")); !os.IsNotExist(err) {
		t.Errorf("the forged record was merged as a cell: %v", err)
	}
	for _, rel := range []string{"logs/x/attempt-1/result.json", "snapshots/y/attempt-2/result.json"} {
		if b, err := os.ReadFile(filepath.Join(out, "camp", "core", "p", "local", "c", "attempt-1", rel)); err != nil || string(b) != forged {
			t.Errorf("%s not copied as evidence: %q %v", rel, b, err)
		}
	}
}

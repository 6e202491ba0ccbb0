package workspace

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeFile(t *testing.T, root, rel, content string) {
	t.Helper()
	p := filepath.Join(root, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func take(t *testing.T, root string) *Snapshot {
	t.Helper()
	s, err := Take(context.Background(), root, DiffLimits)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestDiff takes real snapshots of a directory before and after changes: text files
// added, modified and removed carry their text, a binary file only its hashes, an
// unchanged file is not listed, a long text is cut at DiffTextBytes, and past the
// turn's text budget files keep hashes only.
func TestDiff(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	writeFile(t, root, "keep.txt", "same\n")
	writeFile(t, root, "edit.txt", "one\n")
	writeFile(t, root, "gone.txt", "bye\n")
	writeFile(t, root, "bin.dat", "\x00\x01\x02")
	before := take(t, root)
	writeFile(t, root, "edit.txt", "two\n")
	writeFile(t, root, "new/added.txt", "hello\n")
	writeFile(t, root, "bin.dat", "\x00\x01\x03")
	if err := os.Remove(filepath.Join(root, "gone.txt")); err != nil {
		t.Fatal(err)
	}
	writeFile(t, root, "long.txt", strings.Repeat("é", DiffTextBytes)) // 2 bytes a rune
	if err := os.Symlink("/etc/passwd", filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	d := Diff(1, before, take(t, root))
	var got []string
	for _, c := range d.Changes {
		line := c.Path + " " + c.Change + " " + c.Type
		if c.Before != nil {
			line += " before=" + *c.Before
		}
		if c.After != nil && c.Path != "long.txt" {
			line += " after=" + *c.After
		}
		if c.Binary {
			line += " binary " + c.BeforeSHA256[:8] + "→" + c.AfterSHA256[:8]
		}
		if c.Truncated {
			line += " truncated"
		}
		if c.AfterTarget != "" {
			line += " target=" + c.AfterTarget
		}
		got = append(got, line)
	}
	want := []string{
		"bin.dat modified file binary ae4b3280→b744d600",
		"edit.txt modified file before=one\n after=two\n",
		"gone.txt removed file before=bye\n",
		"link added symlink target=/etc/passwd",
		"long.txt added file truncated",
		"new/added.txt added file after=hello\n",
	}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("changes:\n got %q\nwant %q", got, want)
	}
	for _, c := range d.Changes {
		if c.Path == "long.txt" && (len(*c.After) > DiffTextBytes || !strings.HasSuffix(*c.After, "é")) {
			t.Errorf("long.txt kept %d bytes, want at most %d cut at a rune boundary", len(*c.After), DiffTextBytes)
		}
	}

	// Past the turn's text budget, files keep hashes and sizes only.
	root2 := t.TempDir()
	empty := take(t, root2)
	for i := 0; i < 10; i++ {
		writeFile(t, root2, "f"+string(rune('a'+i))+".txt", strings.Repeat("x", DiffTextBytes))
	}
	d2 := Diff(2, empty, take(t, root2))
	withText, without := 0, 0
	for _, c := range d2.Changes {
		if c.After != nil {
			withText++
		} else if strings.Contains(c.Note, "budget") && c.AfterSHA256 != "" {
			without++
		}
	}
	if withText != DiffTurnTextBytes/DiffTextBytes || without != 10-withText {
		t.Errorf("budget: %d files with text, %d without (want %d and %d)", withText, without, DiffTurnTextBytes/DiffTextBytes, 10-DiffTurnTextBytes/DiffTextBytes)
	}
}

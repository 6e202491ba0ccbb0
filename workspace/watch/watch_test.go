package watch

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// TestWatch: a file created, written and deleted between two looks is recorded in
// order; directories created while the watch runs (nested, with files made at once)
// are watched and their contents recorded; a rename is a move; nothing is recorded
// after Stop; an untouched path has no events.
func TestWatch(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	if err := os.Mkdir(filepath.Join(root, "pre"), 0o755); err != nil {
		t.Fatal(err)
	}
	w, err := Start(root)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "proof.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(root, "proof.txt")); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(root, "a", "b", "c"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "a", "b", "c", "deep.txt"), []byte("y"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "pre", "old.txt"), []byte("z"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(root, "pre", "old.txt"), filepath.Join(root, "new.txt")); err != nil {
		t.Fatal(err)
	}
	rec := w.Stop()
	if err := os.WriteFile(filepath.Join(root, "late.txt"), []byte("l"), 0o644); err != nil {
		t.Fatal(err)
	}
	if !rec.Complete() || rec.Schema != Schema {
		t.Errorf("record incomplete: %+v", rec)
	}
	opsOf := func(path string) []Op {
		var out []Op
		for _, e := range rec.Touched(path) {
			if e.Path == path {
				out = append(out, e.Op)
			}
		}
		return out
	}
	if got := opsOf("proof.txt"); !slices.Equal(got, []Op{OpCreate, OpWrite, OpCloseWrite, OpDelete}) {
		t.Errorf("proof.txt: %v", got)
	}
	if got := opsOf("a/b/c/deep.txt"); !slices.Contains(got, OpCreate) {
		t.Errorf("a/b/c/deep.txt: %v (events %+v)", got, rec.Events)
	}
	if len(rec.Touched("a")) < 4 {
		t.Errorf("below a: %+v", rec.Touched("a"))
	}
	if got := opsOf("pre/old.txt"); !slices.Contains(got, OpMoveFrom) {
		t.Errorf("pre/old.txt: %v", got)
	}
	if got := opsOf("new.txt"); !slices.Equal(got, []Op{OpMoveTo}) {
		t.Errorf("new.txt: %v", got)
	}
	if len(rec.Touched("late.txt")) != 0 || len(rec.Touched("elsewhere")) != 0 {
		t.Errorf("events after Stop or on an untouched path: %+v", rec.Events)
	}
	for i, e := range rec.Events {
		if e.Seq != i+1 || e.At == "" {
			t.Fatalf("event %d: %+v", i, e)
		}
	}
}

// TestStartErrors: a relative or missing workspace is refused.
func TestStartErrors(t *testing.T) {
	t.Parallel()
	for _, root := range []string{"relative", filepath.Join(t.TempDir(), "missing")} {
		if _, err := Start(root); err == nil {
			t.Errorf("Start(%q) succeeded", root)
		}
	}
}

// TestSync: with the reader held back (no reader goroutine yet), a write made before
// Sync is recorded by the time Sync returns and stamped no later than that; after Stop,
// Sync does nothing.
func TestSync(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	w, err := start(root)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "early.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	w.Sync()
	after := stamp(time.Now())
	w.mu.Lock()
	events := slices.Clone(w.rec.Events)
	w.mu.Unlock()
	if len(events) == 0 || events[0].Path != "early.txt" || events[0].Op != OpCreate || events[0].At > after {
		t.Fatalf("after Sync: events %+v, want early.txt's create stamped at or before %s", events, after)
	}
	go w.read()
	rec := w.Stop()
	w.Sync()
	if len(rec.Events) != len(events) || !rec.Complete() {
		t.Errorf("record %+v, want the %d events Sync recorded", rec, len(events))
	}
}

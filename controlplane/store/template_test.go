package store_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/agentproof/agentproof/controlplane/store"
)

// TestSQLiteTemplate: a template is a migrated, closed database named by its schema
// and digest; copies of it (many at once) open as working stores; a template of
// another schema, or whose bytes are not its digest's (torn, truncated, altered), is
// never linked into place, and a failed copy leaves neither the destination nor its
// temporary file; an existing destination is never overwritten.
func TestSQLiteTemplate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	tmpl, err := store.WriteSQLiteTemplate(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	if tmpl.Schema != store.SQLiteSchema() || !strings.Contains(filepath.Base(tmpl.Path), tmpl.Schema+"-"+tmpl.SHA256) {
		t.Errorf("template %+v is not named by its schema %s and digest", tmpl, store.SQLiteSchema())
	}
	if parsed, err := store.ParseTemplate(tmpl.String()); err != nil || parsed != tmpl {
		t.Errorf("ParseTemplate(%q) = %+v, %v", tmpl.String(), parsed, err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("the template's directory holds %d entries, want only the template", len(entries))
	}

	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			home := t.TempDir()
			db := filepath.Join(home, "instance.db")
			if err := store.CopySQLiteTemplate(tmpl, db); err != nil {
				t.Error(err)
				return
			}
			if fi, err := os.Stat(db); err != nil || fi.Mode().Perm() != 0o600 {
				t.Errorf("copy %d: %v, mode %v; want 0600", i, err, fi.Mode().Perm())
			}
			in, err := store.OpenSQLite(ctx, db)
			if err != nil {
				t.Error(err)
				return
			}
			if _, err := in.CreateBoardCompany(ctx, "c", "ACME"); err != nil {
				t.Error(err)
			}
			if err := in.Close(); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()

	b, err := os.ReadFile(tmpl.Path)
	if err != nil {
		t.Fatal(err)
	}
	write := func(name string, data []byte) store.Template {
		bad := tmpl
		bad.Path = filepath.Join(t.TempDir(), name)
		if err := os.WriteFile(bad.Path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return bad
	}
	flipped := append([]byte(nil), b...)
	flipped[len(flipped)/2] ^= 0xff
	stale := tmpl
	stale.Schema = "0000000000000000"
	for name, bad := range map[string]store.Template{
		"torn":           write("torn.db", b[:len(b)/2]),
		"altered":        write("altered.db", flipped),
		"empty":          write("empty.db", nil),
		"another schema": stale,
	} {
		home := t.TempDir()
		db := filepath.Join(home, "instance.db")
		err := store.CopySQLiteTemplate(bad, db)
		if !errors.Is(err, store.ErrTemplateMismatch) {
			t.Errorf("%s template: err = %v, want ErrTemplateMismatch", name, err)
		}
		if left, _ := os.ReadDir(home); len(left) != 0 {
			t.Errorf("%s template: the home holds %d entries after the refused copy", name, len(left))
		}
	}

	home := t.TempDir()
	db := filepath.Join(home, "instance.db")
	if err := os.WriteFile(db, []byte("mine"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := store.CopySQLiteTemplate(tmpl, db); err == nil {
		t.Error("a copy overwrote an existing database")
	}
	if got, _ := os.ReadFile(db); string(got) != "mine" {
		t.Errorf("the existing database holds %q", got)
	}
	if left, _ := os.ReadDir(home); len(left) != 1 {
		t.Errorf("the refused copy left %d entries", len(left))
	}
	for _, bad := range []string{"", "x:y", "s:" + strings.Repeat("0", 64) + ":relative", "s:" + strings.Repeat("G", 64) + ":/abs", ":" + strings.Repeat("0", 64) + ":/abs"} {
		if _, err := store.ParseTemplate(bad); err == nil {
			t.Errorf("ParseTemplate(%q) accepted it", bad)
		}
	}
}

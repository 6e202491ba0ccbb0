package store_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentproof/agentproof/controlplane"
	"github.com/agentproof/agentproof/controlplane/store"
)

// TestEphemeralSQLite: an ephemeral database (an attempt's home) runs with
// synchronous=OFF and exclusive locking, leaves no -shm file while it is written, and
// keeps what it acknowledged across a close and a reopen, ephemeral or durable; a
// durable database keeps synchronous=FULL and normal locking. Both come from a template
// copy as an attempt's home does; opened Fresh (no check, no migrations: the copy is
// the migrated template's bytes) or not, the copy has the whole schema.
func TestEphemeralSQLite(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tmpl, err := store.WriteSQLiteTemplate(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name      string
		ephemeral bool
		fresh     bool
		sync      string
		locking   string
		shm       bool
	}{
		{"durable", false, false, "2", "normal", true},
		{"durable fresh", false, true, "2", "normal", true},
		{"ephemeral", true, false, "0", "exclusive", false},
		{"ephemeral fresh", true, true, "0", "exclusive", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			db := filepath.Join(t.TempDir(), "instance.db")
			copyTemplate := store.CopySQLiteTemplate
			if tc.ephemeral {
				copyTemplate = store.CopySQLiteTemplateEphemeral
			}
			if err := copyTemplate(tmpl, db); err != nil {
				t.Fatal(err)
			}
			in, err := store.OpenSQLiteWith(ctx, db, store.SQLiteOptions{Ephemeral: tc.ephemeral, Fresh: tc.fresh})
			if err != nil {
				t.Fatal(err)
			}
			co, err := in.CreateBoardCompany(ctx, "c", "ACME")
			if err != nil {
				t.Fatal(err)
			}
			// a blob reaches the blobs table (the second migration's)
			ref, err := in.Company(co).PutBlob(ctx, controlplane.BlobPut{Content: []byte("blob")})
			if err != nil {
				t.Fatal(err)
			}
			if b, err := in.Company(co).Blob(ctx, ref.SHA256); err != nil || string(b) != "blob" {
				t.Fatalf("blob read back: %q, %v", b, err)
			}
			for pragma, want := range map[string]string{"synchronous": tc.sync, "locking_mode": tc.locking, "journal_mode": "wal"} {
				if got, err := store.PragmaText(ctx, in, pragma); err != nil || got != want {
					t.Errorf("PRAGMA %s = %q, %v; want %q", pragma, got, err, want)
				}
			}
			_, err = os.Stat(db + "-shm")
			if has := err == nil; has != tc.shm || (err != nil && !errors.Is(err, fs.ErrNotExist)) {
				t.Errorf("%s-shm exists: %v (%v), want %v", filepath.Base(db), has, err, tc.shm)
			}
			if err := in.Close(); err != nil {
				t.Fatal(err)
			}
			// reopened both ways, the company is there
			for _, reopen := range []store.SQLiteOptions{{Ephemeral: true}, {}} {
				in, err := store.OpenSQLiteWith(ctx, db, reopen)
				if err != nil {
					t.Fatal(err)
				}
				if in.Company(co) == nil {
					t.Errorf("reopened %+v: company %s is missing", reopen, co)
				}
				if err := in.Close(); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

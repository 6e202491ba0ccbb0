package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"

	"github.com/agentproof/agentproof/atomicfile"
)

// A template is a closed SQLite database file on which every migration of this build
// ran, copied into place as a fresh instance's database instead of migrating it there
// (docs/performance.md "A fresh instance's database"). It is named by the schema it
// holds and by the SHA-256 of its bytes, and a copy is used only when both match:
//
//   - a template of another schema (another build's migrations) is never copied
//     (CopySQLiteTemplate refuses it; the caller migrates instead);
//   - the copy is hashed while it is written and checked against the digest before it
//     is linked into place, so that a torn, truncated or altered template never
//     becomes an instance's database;
//   - the copy is written to a temporary file beside the destination, synced, and
//     linked to the destination name (link fails when the name exists): a crash leaves
//     a temporary file, never a partial database under the destination name.
//
// A template is written once and never modified, so any number of processes may copy
// it at once.

// Template names a template database: the schema version of its migrations
// (SQLiteSchema), the SHA-256 of its bytes (lower-case hex) and its absolute path.
type Template struct {
	Schema, SHA256, Path string
}

// String is the flag form SCHEMA:SHA256:PATH.
func (t Template) String() string { return t.Schema + ":" + t.SHA256 + ":" + t.Path }

// ParseTemplate parses Template.String's form. Error: not three fields, a digest that
// is not 64 lower-case hex digits, a relative path.
func ParseTemplate(s string) (Template, error) {
	f := strings.SplitN(s, ":", 3)
	if len(f) != 3 || f[0] == "" {
		return Template{}, fmt.Errorf("template %q: want SCHEMA:SHA256:PATH", s)
	}
	if len(f[1]) != 64 || strings.Trim(f[1], "0123456789abcdef") != "" {
		return Template{}, fmt.Errorf("template %q: the SHA-256 must be 64 lower-case hex digits", s)
	}
	if !filepath.IsAbs(f[2]) {
		return Template{}, fmt.Errorf("template %q: the path must be absolute", s)
	}
	return Template{Schema: f[0], SHA256: f[1], Path: f[2]}, nil
}

// SQLiteSchema is the schema version of this build's SQLite migrations: the first 16
// hex digits of the SHA-256 over every migration file's name and contents, in order.
var SQLiteSchema = sync.OnceValue(func() string {
	h := sha256.New()
	dir := "migrations/" + string(SQLite)
	entries, err := fs.ReadDir(migrations, dir)
	if err != nil {
		panic(fmt.Sprintf("store: the embedded migrations: %v", err)) // a build without them is a bug
	}
	for _, e := range entries {
		b, err := fs.ReadFile(migrations, path.Join(dir, e.Name()))
		if err != nil {
			panic(fmt.Sprintf("store: the embedded migrations: %v", err))
		}
		fmt.Fprintf(h, "%s\x00%d\x00", e.Name(), len(b))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
})

// WriteSQLiteTemplate creates a template in dir (which must exist): a new SQLite file
// migrated by OpenSQLite and closed, whose WAL was checkpointed into it, named
// template-<schema>-<sha256>.db. Errors: the database cannot be created, migrated or
// closed, or a WAL file stayed behind.
func WriteSQLiteTemplate(ctx context.Context, dir string) (Template, error) {
	tmp, err := os.MkdirTemp(dir, ".template-")
	if err != nil {
		return Template{}, fmt.Errorf("store: template: %w", err)
	}
	defer os.RemoveAll(tmp)
	db := filepath.Join(tmp, "template.db")
	in, err := OpenSQLite(ctx, db)
	if err != nil {
		return Template{}, fmt.Errorf("store: template: %w", err)
	}
	if _, err := in.db.ExecContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
		in.Close()
		return Template{}, fmt.Errorf("store: template: checkpoint: %w", err)
	}
	if err := in.Close(); err != nil {
		return Template{}, fmt.Errorf("store: template: %w", err)
	}
	for _, side := range []string{"-wal", "-journal"} {
		if fi, err := os.Stat(db + side); err == nil && fi.Size() > 0 {
			return Template{}, fmt.Errorf("store: template: %s left %d bytes in %s", db, fi.Size(), side)
		}
	}
	sum, err := fileSHA256(db)
	if err != nil {
		return Template{}, fmt.Errorf("store: template: %w", err)
	}
	t := Template{Schema: SQLiteSchema(), SHA256: sum}
	t.Path = filepath.Join(dir, "template-"+t.Schema+"-"+sum+".db")
	if err := os.Chmod(db, 0o400); err != nil {
		return Template{}, fmt.Errorf("store: template: %w", err)
	}
	if err := os.Rename(db, t.Path); err != nil {
		return Template{}, fmt.Errorf("store: template: %w", err)
	}
	return t, nil
}

// ErrTemplateMismatch is CopySQLiteTemplate's error for a template of another schema
// or whose bytes are not its digest's; the caller migrates a new database instead.
var ErrTemplateMismatch = errors.New("store: the template database does not match")

// CopySQLiteTemplate copies template t to dst, which must not exist (nor its -wal
// file): through a temporary file beside dst, hashed while written, synced and
// linked to dst only when it is t's schema and digest. The copy gets mode 0600.
// Errors: ErrTemplateMismatch (wrapped) for another schema or other bytes; dst
// exists; I/O errors. On any error dst does not exist.
func CopySQLiteTemplate(t Template, dst string) error { return copySQLiteTemplate(t, dst, true) }

// CopySQLiteTemplateEphemeral is CopySQLiteTemplate for the database of an ephemeral
// home (SQLiteOptions.Ephemeral): the same checks, without fsyncing the copy or its
// new name.
func CopySQLiteTemplateEphemeral(t Template, dst string) error {
	return copySQLiteTemplate(t, dst, false)
}

// copySQLiteTemplate is CopySQLiteTemplate; durable says whether the copy and its
// name are fsynced.
func copySQLiteTemplate(t Template, dst string, durable bool) error {
	if t.Schema != SQLiteSchema() {
		return fmt.Errorf("%w: schema %s, this build's is %s", ErrTemplateMismatch, t.Schema, SQLiteSchema())
	}
	if _, err := os.Lstat(dst + "-wal"); err == nil {
		return fmt.Errorf("store: %s-wal exists", dst)
	}
	src, err := os.Open(t.Path)
	if err != nil {
		return fmt.Errorf("store: opening the template: %w", err)
	}
	defer src.Close()
	// Exclusive: dst is linked, never replaced; with durable its new name is synced
	// before the database is used (its first commit syncs only the WAL).
	opts := []atomicfile.Option{atomicfile.Exclusive()}
	if !durable {
		opts = append(opts, atomicfile.NoSync())
	}
	out, err := atomicfile.Create(dst, 0o600, opts...)
	if err != nil {
		return fmt.Errorf("store: copying the template: %w", err)
	}
	h := sha256.New()
	if _, err := io.Copy(io.MultiWriter(out, h), src); err != nil {
		out.Discard()
		return fmt.Errorf("store: copying the template: %w", err)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != t.SHA256 {
		out.Discard()
		return fmt.Errorf("%w: its bytes hash to %s, not %s", ErrTemplateMismatch, got, t.SHA256)
	}
	if err := out.Commit(); err != nil {
		return fmt.Errorf("store: placing the template copy: %w", err)
	}
	return nil
}

func fileSHA256(p string) (string, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

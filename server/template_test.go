package server_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentproof/agentproof/controlplane/store"
	"github.com/agentproof/agentproof/server"
)

// TestOpenFromTemplate: a new home given a template (Options.Template) gets a copy of
// it as its database (the same bytes until the first write) and works as a migrated
// one, also after a restart; a template whose bytes are not its digest's is not used
// (TemplateProblem says why, the database is migrated and works); a home that has a
// database keeps it.
func TestOpenFromTemplate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tmpl, err := store.WriteSQLiteTemplate(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(tmpl.Path)
	if err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	s, err := server.Open(ctx, server.Options{Home: home, Template: &tmpl})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.TemplateProblem(); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(home, server.DatabaseFile)); !bytes.Equal(got, want) {
		t.Error("the new database is not the template's copy")
	}
	id, err := s.Store().CreateBoardCompany(ctx, "Acme", "ACME")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// A restart keeps the database (the template is not copied over it).
	s, err = server.Open(ctx, server.Options{Home: home, Template: &tmpl})
	if err != nil {
		t.Fatal(err)
	}
	if s.Store().Company(id) == nil {
		t.Error("the company is gone after a restart with a template")
	}
	s.Close()

	bad := tmpl
	bad.Path = filepath.Join(t.TempDir(), "altered.db")
	altered := append([]byte(nil), want...)
	altered[len(altered)-1] ^= 1
	if err := os.WriteFile(bad.Path, altered, 0o600); err != nil {
		t.Fatal(err)
	}
	s, err = server.Open(ctx, server.Options{Home: t.TempDir(), Template: &bad})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if !errors.Is(s.TemplateProblem(), store.ErrTemplateMismatch) {
		t.Errorf("TemplateProblem = %v, want ErrTemplateMismatch", s.TemplateProblem())
	}
	if _, err := s.Store().CreateBoardCompany(ctx, "Acme", "ACME"); err != nil {
		t.Errorf("the migrated database after a refused template: %v", err)
	}
}

package server_test

import (
	"context"
	"testing"

	"github.com/agentproof/agentproof/controlplane"
	"github.com/agentproof/agentproof/server"
)

// TestCreateCompanyNamesLocalEnvironment: the answer of a board company's creation
// names the local environment it was created with (the one its state lists), so that
// a caller needs no state read to find it.
func TestCreateCompanyNamesLocalEnvironment(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	in := startInstance(t, server.Options{})
	co, err := in.board().CreateCompany(ctx, "Acme", "ACME")
	if err != nil {
		t.Fatal(err)
	}
	st, err := co.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var local []string
	for _, e := range st.Environments {
		if e.Kind == controlplane.LocalEnvironment {
			local = append(local, e.ID)
		}
	}
	if len(local) != 1 || co.LocalEnvironmentID() != local[0] {
		t.Errorf("LocalEnvironmentID = %q, the state's local environments %q", co.LocalEnvironmentID(), local)
	}
}

package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/agentproof/agentproof/api"
	"github.com/agentproof/agentproof/campaign/attempt"
	"github.com/agentproof/agentproof/client"
	"github.com/agentproof/agentproof/controlplane"
	"github.com/agentproof/agentproof/server"
	"github.com/agentproof/agentproof/worker"
)

// TestInProcessInstancesIsolated: two in-process control-plane instances started at
// once in this process share nothing — each has its own home with its own SQLite
// file, board token and master key, its own listener; what one stores the other does
// not show; one's board token and one's agent token are refused (401) by the other
// while accepted by their own; stopping one leaves the other serving.
func TestInProcessInstancesIsolated(t *testing.T) {
	t.Parallel()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	start := inProcessServe(exe)
	type inst struct {
		home  string
		srv   attempt.InProcessServer
		token string
		log   bytes.Buffer
	}
	var in [2]*inst
	var wg sync.WaitGroup
	for i := range in {
		in[i] = &inst{home: filepath.Join(t.TempDir(), "home")}
		wg.Go(func() {
			srv, err := start(context.Background(), attempt.InProcessConfig{Home: in[i].home, Marker: worker.NewMarker(), Log: &in[i].log})
			if err != nil {
				t.Error(err)
				return
			}
			in[i].srv = srv
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	for _, x := range in {
		t.Cleanup(func() { _ = x.srv.Shutdown(context.Background()) })
		tok, err := os.ReadFile(filepath.Join(x.home, api.BoardTokenFile))
		if err != nil {
			t.Fatal(err)
		}
		x.token = string(bytes.TrimSpace(tok))
	}
	a, b := in[0], in[1]
	if a.srv.Addr() == b.srv.Addr() {
		t.Fatalf("both instances listen on %s", a.srv.Addr())
	}
	same := func(name string) bool {
		fa, errA := os.Stat(filepath.Join(a.home, name))
		fb, errB := os.Stat(filepath.Join(b.home, name))
		if errA != nil || errB != nil {
			t.Fatalf("%s: %v %v", name, errA, errB)
		}
		return os.SameFile(fa, fb)
	}
	if same(server.DatabaseFile) || same(api.MasterKeyFile) {
		t.Error("the instances share a database or master key file")
	}
	ka, _ := os.ReadFile(filepath.Join(a.home, api.MasterKeyFile))
	kb, _ := os.ReadFile(filepath.Join(b.home, api.MasterKeyFile))
	if a.token == b.token || bytes.Equal(ka, kb) {
		t.Fatal("the instances have the same board token or master key")
	}

	ctx := context.Background()
	ca := client.New("http://"+a.srv.Addr(), a.token, nil)
	co, err := ca.CreateCompany(ctx, "Acme", "ACME")
	if err != nil {
		t.Fatal(err)
	}
	if ids, err := client.New("http://"+b.srv.Addr(), b.token, nil).Companies(ctx); err != nil || len(ids) != 0 {
		t.Errorf("instance B lists companies %v (%v); want none: A's company is A's", ids, err)
	}
	var ce *controlplane.Error
	if _, err := client.New("http://"+b.srv.Addr(), a.token, nil).Companies(ctx); !errors.As(err, &ce) || ce.Code != controlplane.CodeUnauthorized {
		t.Errorf("A's board token at B: %v, want unauthorized", err)
	}

	// An agent token minted by A (for a run of A's company that does not exist): B
	// refuses its signature; A verifies it and refuses it only because the run does
	// not exist (both 401, told apart by the reason).
	agentToken := a.srv.(inProcessServer).sv.MintAgentToken(co.ID(), "agent-1", "run-1")
	refusal := func(addr string) string {
		req, _ := http.NewRequest("GET", "http://"+addr+"/api/companies/"+co.ID()+"/runs/run-1/context", nil)
		req.Header.Set("Authorization", "Bearer "+agentToken)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var e controlplane.Error
		_ = json.NewDecoder(resp.Body).Decode(&e)
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("A's agent token at %s: HTTP %d, want 401", addr, resp.StatusCode)
		}
		return e.Message
	}
	if got := refusal(b.srv.Addr()); got != "the bearer token is not valid" {
		t.Errorf("A's agent token at B: %q, want its signature refused", got)
	}
	if got := refusal(a.srv.Addr()); got != "the agent token's run run-1 does not exist" {
		t.Errorf("A's agent token at A: %q, want it verified (refused for its missing run)", got)
	}

	// Stopping A leaves B serving.
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := a.srv.Shutdown(sctx); err != nil {
		t.Fatal(err)
	}
	if _, err := ca.Companies(ctx); err == nil {
		t.Error("A still answers after its shutdown")
	}
	if _, err := client.New("http://"+b.srv.Addr(), b.token, nil).Companies(ctx); err != nil {
		t.Errorf("B after A's shutdown: %v", err)
	}
}

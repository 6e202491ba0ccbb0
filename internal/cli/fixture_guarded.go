package cli

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"

	"github.com/agentproof/agentproof/evidence"
	"github.com/agentproof/agentproof/worker"
)

// guardedOptions are the flags of `fixture run --guarded`.
type guardedOptions struct {
	fenceDir string // "" = a fresh fence in a temporary directory, removed afterwards
	digest   string // "" = pin the current manifest of this executable
}

// fenceFileName is the fence file's name inside the fence directory.
const fenceFileName = "fence"

// runGuardedFixture provisions (or reuses) an Attempt fence, takes the controller hold,
// provisions a workspace, pins the execution digest and runs the fixture through
// worker.RunGuarded. It returns what reportFixtureRun returns.
func runGuardedFixture(a *app, ctx context.Context, w *worker.Worker, store *evidence.Store, req worker.Request, root string, opts guardedOptions, asJSON bool) error {
	if root == "" {
		root = os.TempDir()
	}
	fenceDir := opts.fenceDir
	if fenceDir == "" {
		dir, err := os.MkdirTemp(root, "agentproof-fence-")
		if err != nil {
			return usageErrorf("creating a fence directory: %v", err)
		}
		fenceDir = dir
		defer func() {
			// Ours alone: the two fence files and the directory, nothing recursive.
			_ = os.Remove(filepath.Join(dir, fenceFileName+worker.JournalSuffix))
			_ = os.Remove(filepath.Join(dir, fenceFileName))
			_ = os.Remove(dir)
		}()
	}
	fencePath := filepath.Join(fenceDir, fenceFileName)
	id, err := worker.ReadFenceLabel(fencePath)
	if errors.Is(err, os.ErrNotExist) {
		var b [4]byte
		_, _ = rand.Read(b[:])
		id, err = worker.NewFenceIdentity("fixture-run-"+hex.EncodeToString(b[:]), 1, "agentproof-cli", fencePath)
		if err == nil {
			err = worker.ProvisionFence(id)
		}
	}
	if err != nil {
		return usageErrorf("fence %s: %v", fencePath, err)
	}
	hold, err := worker.Hold(id)
	if errors.Is(err, worker.ErrFenceHeld) {
		return withExit(ExitInconclusive, fmt.Errorf("fixture %s not started: %v", req.Fixture, err))
	}
	if err != nil {
		return usageErrorf("fence %s: %v", fencePath, err)
	}
	defer func() { _ = hold.Release() }()
	ref, err := worker.ProvisionWorkspace(root, id)
	if err != nil {
		return usageErrorf("provisioning the workspace: %v", err)
	}
	digest := opts.digest
	if digest == "" {
		m, err := worker.GuardedFixtureManifest()
		if err != nil {
			return usageErrorf("execution manifest: %v", err)
		}
		digest = m.Digest
	}
	req.Pins = evidence.Pins{
		Collector:   worker.GuardedFixtureCollector,
		Environment: runtime.Version() + "/" + runtime.GOOS + "-" + runtime.GOARCH,
		RunID:       id.RunID, Epoch: id.Epoch, AttemptID: id.AttemptID,
	}
	req.Check = "fixture-run-guarded." + req.Fixture
	res, err := w.RunGuarded(ctx, req, worker.Guard{Fence: id, Hold: hold, Workspace: ref, ExecutionDigest: digest})
	if err != nil {
		return usageErrorf("%v", err)
	}
	if res.Status == worker.StatusNotStarted {
		// Nothing ran in it: remove our empty workspace (rmdir, only while we hold the fence).
		_, _ = worker.DisposeWorkspace(ref, hold, true, "not started")
	}
	return reportFixtureRun(a, ctx, req.Fixture, store.Dir(), worker.Result(res), asJSON)
}

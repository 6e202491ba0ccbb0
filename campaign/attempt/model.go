package attempt

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/agentproof/agentproof/agent"
	"github.com/agentproof/agentproof/agent/scriptedmodel"
	"github.com/agentproof/agentproof/campaign"
	"github.com/agentproof/agentproof/campaign/flows"
	"github.com/agentproof/agentproof/redact"
	"github.com/agentproof/agentproof/verdict"
)

// ModelLogFile is the scripted model's request log in an attempt directory (one JSON
// line per request, agentproof.model-request/v1, headers and bodies redacted).
const ModelLogFile = "logs/model-requests.jsonl"

// maxModelLog bounds the scripted model's request log kept as evidence, in bytes.
const maxModelLog = 8 << 20

// modelServer is the attempt's scripted model: one script per run, on 127.0.0.1.
type modelServer struct {
	set     *scriptedmodel.RunSet
	running *scriptedmodel.Running
	log     *os.File
	scripts int
}

// ModelScripts returns the model scripts of a CLI cell's runs: the driverConfig script
// "nop" gives text-only answers (calibration), "wrong" calls a tool no CLI offers (the
// scripted model refuses it naming step 1), "wrong-undo" the oracle's scripts with every
// native write followed by a shell write and delete of the file (scriptedmodel.UndoWrites:
// only the workspace watcher sees it); anything else ("oracle", the default)
// derives them by the case's flow (flows.ModelScripts: the flow's own scripts, or the
// case's rendered reference script's).
func ModelScripts(plan campaign.AttemptPlan, workspace string) ([]*scriptedmodel.Script, error) {
	p := plan.Cell.Profile
	runs := max(plan.Cell.Case.ExpectedRunCount, 1)
	switch s, _ := p.DriverConfig[agent.CLIKeyScript].(string); s {
	case agent.ScriptNop:
		return scriptedmodel.NopScripts(runs), nil
	case agent.ScriptWrong:
		return scriptedmodel.WrongScripts(runs), nil
	case agent.ScriptUndo:
		scripts, err := flows.ModelScripts(flows.ModelInput{Case: plan.Cell.Case, Rendered: plan.Case, Profile: p, Workspace: workspace})
		if err != nil {
			return nil, err
		}
		scriptedmodel.UndoWrites(scripts)
		return scripts, nil
	}
	return flows.ModelScripts(flows.ModelInput{Case: plan.Cell.Case, Rendered: plan.Case, Profile: p, Workspace: workspace})
}

// startModel starts the scripted model of an offline CLI cell, logging requests to a
// file in the attempt's private temp root (moved into the results through the guard
// at teardown). Faults are the harness's: scripts that cannot be derived are
// permanent, a listener that does not start transient.
func startModel(plan campaign.AttemptPlan, root, workspace string, secrets *redact.Set) (*modelServer, *verdict.Fault) {
	scripts, err := ModelScripts(plan, workspace)
	if err != nil {
		return nil, verdict.HarnessFault(fmt.Errorf("deriving the model scripts: %w", err), false)
	}
	f, err := os.OpenFile(filepath.Join(root, "model-requests.jsonl"), os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, verdict.HarnessFault(fmt.Errorf("scripted model log: %w", err), true)
	}
	set, err := scriptedmodel.NewRunSet(scripts, scriptedmodel.Options{Log: f, Secrets: secrets})
	if err != nil {
		f.Close()
		return nil, verdict.HarnessFault(err, false)
	}
	running, err := set.Listen("127.0.0.1:0")
	if err != nil {
		f.Close()
		return nil, verdict.HarnessFault(fmt.Errorf("scripted model start failed: %w", err), true)
	}
	return &modelServer{set: set, running: running, log: f, scripts: len(scripts)}, nil
}

// stop stops the scripted model (requests in flight are finished and logged) and
// copies its request log into the attempt's evidence through the guard: the log holds
// what the agent sent (redacted by the model server), so it is agent content.
func (m *modelServer) stop(ev *campaign.Evidence, secrets *redact.Set) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := m.running.Close(ctx)
	if err = errors.Join(err, m.set.LogError(), m.log.Close()); err != nil {
		return fmt.Errorf("stopping the scripted model: %w", err)
	}
	log, err := readBounded(m.log.Name(), maxModelLog)
	if err != nil {
		return fmt.Errorf("reading the scripted model's request log: %w", err)
	}
	ev.Write(secrets, ModelLogFile, log, false)
	return nil
}

// readBounded reads at most limit bytes of the file at path.
func readBounded(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, limit))
}

package attempt

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sync"
	"time"

	"github.com/agentproof/agentproof/agent"
	"github.com/agentproof/agentproof/agent/driver"
	"github.com/agentproof/agentproof/agent/scriptedmodel"
	"github.com/agentproof/agentproof/campaign"
	"github.com/agentproof/agentproof/catalog"
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
// scripted model refuses it naming step 1); anything else ("oracle", the default)
// derives one script per turn of the case's rendered reference script
// (scriptedmodel.FromReference); in the flows crash_retry and server_crash_retry the
// retry run plays the killed run's script again.
//
// For Pi (rpc:pi) in the flows pi_native_question and pi_question_stop the first run
// asks a native question first and writes its answer (scriptedmodel.ForPiQuestion;
// in pi_confirm_negative a yes/no question, ForPiConfirm); in
// pi_steering and pi_follow_up the model holds its first call and takes the case's
// marker from the human's message (ForPiSteering, ForPiFollowUp).
// For a real ACP agent (acp:<agent>) or Pi (rpc:pi), whose workspace is the absolute path workspace,
// the oracle scripts are scriptedmodel.ForACP's (a workspace write is the agent's own
// write tool, which asks permission; one script per run, or under the warm lifecycle
// one script holding every turn: one session serves them all); for Codex through its
// app-server (app:codex) scriptedmodel.ForCodexApp's (a write is an apply_patch file
// change, other edits shell commands: both ask Codex's approval).
func ModelScripts(plan campaign.AttemptPlan, workspace string) ([]*scriptedmodel.Script, error) {
	p := plan.Cell.Profile
	runs := max(plan.Cell.Case.ExpectedRunCount, 1)
	switch s, _ := p.DriverConfig[agent.CLIKeyScript].(string); s {
	case agent.ScriptNop:
		return scriptedmodel.NopScripts(runs), nil
	case agent.ScriptWrong:
		return scriptedmodel.WrongScripts(runs), nil
	}
	if p.Driver.Kind == driver.KindRPC {
		switch plan.Cell.Case.Flow {
		case catalog.FlowPiNativeQuestion, catalog.FlowPiQuestionStop:
			return scriptedmodel.ForPiQuestion(plan.Case.Reference, PiQuestionTitle)
		case catalog.FlowPiSteering:
			return scriptedmodel.ForPiSteering(PiSteerMarker(), "finish_task")
		case catalog.FlowPiConfirmNegative:
			return scriptedmodel.ForPiConfirm(plan.Case.Reference, PiConfirmTitle)
		case catalog.FlowPiFollowUp:
			return scriptedmodel.ForPiFollowUp(PiFollowUpMarker(), "finish_task")
		}
	}
	if p.Driver.Kind == driver.KindApp {
		return scriptedmodel.ForCodexApp(plan.Case.Reference, workspace, p.RunnerLifecycleMode == catalog.LifecycleModeWarm)
	}
	if p.Driver.Kind == driver.KindACP || p.Driver.Kind == driver.KindRPC {
		return scriptedmodel.ForACP(plan.Case.Reference, workspace, p.RunnerLifecycleMode == catalog.LifecycleModeWarm)
	}
	scripts, err := scriptedmodel.FromReference(plan.Case.Reference)
	if err == nil && (plan.Cell.Case.Flow == catalog.FlowCrashRetry || plan.Cell.Case.Flow == catalog.FlowServerCrashRetry) {
		// the Retry of the killed run carries out the killed turn again: the retry
		// run's model plays the killed run's script once more
		for i := 0; len(scripts) > 0 && len(scripts) < runs; i++ {
			scripts = append(scripts, scripts[i])
		}
	}
	return scripts, err
}

// PiQuestionTitle is the native question a Pi cell's model asks in the pi_native_question
// and pi_question_stop flows.
const PiQuestionTitle = "Which value should I write?"

// PiConfirmTitle is the yes/no question a Pi cell's model asks in the
// pi_confirm_negative flow.
const PiConfirmTitle = "May I go ahead?"

// PiSteerMarker is what a Pi steering cell's model takes from the steering message: the
// case's marker (PAPERCLIP_E2E_PI_STEERED_<nonce>), which only the human's comment
// carries.
var PiSteerMarker = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(PAPERCLIP_E2E_PI_STEERED_[A-Za-z0-9]+)`) })

// PiFollowUpMarker is what a Pi follow-up cell's model takes from the follow-up
// message: the case's marker (PAPERCLIP_E2E_PI_FOLLOWUP_<nonce>), which only the
// human's comment carries.
var PiFollowUpMarker = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(PAPERCLIP_E2E_PI_FOLLOWUP_[A-Za-z0-9]+)`) })

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

package campaign

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentproof/agentproof/agent"
	"github.com/agentproof/agentproof/agent/scriptedmodel"

	"github.com/agentproof/agentproof/verdict"
)

// ModelLogFile is the scripted model's request log in an attempt directory (one JSON
// line per request, agentproof.model-request/v1, headers and bodies redacted).
const ModelLogFile = "logs/model-requests.jsonl"

// IsCLIDriver reports whether a profile driver runs a real agent CLI (exec:<name>) and
// returns the CLI's name.
func IsCLIDriver(driver string) (string, bool) {
	name, ok := strings.CutPrefix(driver, "exec:")
	return name, ok && name != ""
}

// modelServer is the attempt's scripted model: one script per run, on 127.0.0.1.
type modelServer struct {
	set     *scriptedmodel.RunSet
	running *scriptedmodel.Running
	log     *os.File
}

// ModelScripts returns the model scripts of a CLI cell's runs: the driverConfig script
// "nop" gives text-only answers (calibration), "wrong" calls a tool no CLI offers (the
// scripted model refuses it naming step 1); anything else ("oracle", the default)
// derives one script per turn of the case's rendered reference script
// (scriptedmodel.FromReference).
func ModelScripts(plan AttemptPlan) ([]*scriptedmodel.Script, error) {
	p := plan.Cell.Profile
	runs := max(plan.Cell.Case.ExpectedRunCount, 1)
	switch s, _ := p.DriverConfig[agent.CLIKeyScript].(string); s {
	case agent.ScriptNop:
		return scriptedmodel.NopScripts(runs), nil
	case agent.ScriptWrong:
		return scriptedmodel.WrongScripts(runs), nil
	}
	return scriptedmodel.FromReference(plan.Case.Reference)
}

// maxModelLog bounds the scripted model's request log kept as evidence, in bytes.
const maxModelLog = 8 << 20

// startModel starts the scripted model of a CLI cell (not live), logging requests to a
// file in the attempt's private temp root; stopModel moves the log into the results
// (ModelLogFile) through the evidence guard.
func (a *attempt) startModel() error {
	scripts, err := ModelScripts(a.plan)
	if err != nil {
		return &ClassError{Class: verdict.PermanentInfrastructure, Err: err}
	}
	path := filepath.Join(a.root, "model-requests.jsonl")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return &ClassError{Class: verdict.PermanentInfrastructure, Err: fmt.Errorf("scripted model log: %w", err)}
	}
	set, err := scriptedmodel.NewRunSet(scripts, scriptedmodel.Options{Log: f, Secrets: a.secrets})
	if err != nil {
		f.Close()
		return &ClassError{Class: verdict.PermanentInfrastructure, Err: err}
	}
	running, err := set.Listen("127.0.0.1:0")
	if err != nil {
		f.Close()
		return &ClassError{Class: verdict.TransientInfrastructure, Err: fmt.Errorf("scripted model start failed: %w", err)}
	}
	a.model = &modelServer{set: set, running: running, log: f}
	a.note("scripted model started on %s with %d run script(s)", running.URL, len(scripts))
	return nil
}

// stopModel stops the scripted model (requests in flight are finished and logged).
func (a *attempt) stopModel() error {
	if a.model == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := a.model.running.Close(ctx)
	err = errors.Join(err, a.model.set.LogError(), a.model.log.Close())
	if err != nil {
		return fmt.Errorf("stopping the scripted model: %w", err)
	}
	// The log holds what the agent sent (redacted by the model server): it reaches the
	// results only through the guard, like every other file.
	log, err := readBounded(a.model.log.Name(), maxModelLog)
	if err != nil {
		return fmt.Errorf("reading the scripted model's request log: %w", err)
	}
	a.writeBounded(ModelLogFile, log, false)
	return nil
}

// cliFailureError classes the failure of CLI runs described by msg: a stream the CLI
// reports closed before completion is a scripted-model defect (permanent
// infrastructure; field failure F08), an idle timeout transient infrastructure (F09);
// anything else is the candidate's (its CLI exited non-zero before completing its run).
func cliFailureError(msg string) error {
	low := strings.ToLower(msg)
	switch {
	case strings.Contains(low, "stream disconnected before completion") || strings.Contains(low, "stream closed before"):
		return &ClassError{Class: verdict.PermanentInfrastructure, Err: errors.New("the CLI's model stream closed before completion (scripted model defect): " + msg)}
	case strings.Contains(low, "mcp servers failed to initialize") || strings.Contains(low, "mcp server startup failed"):
		return &ClassError{Class: verdict.TransientInfrastructure, Err: errors.New("the agentproof MCP server did not start for the CLI: " + msg)}
	case strings.Contains(low, "idle timeout"):
		return &ClassError{Class: verdict.TransientInfrastructure, Err: errors.New("the CLI's model stream hit its idle timeout: " + msg)}
	}
	return &ClassError{Class: verdict.CandidateFailure, Err: errors.New(msg)}
}

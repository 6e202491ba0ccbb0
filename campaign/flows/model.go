package flows

import (
	"github.com/agentproof/agentproof/agent/driver"
	"github.com/agentproof/agentproof/agent/scriptedmodel"
	"github.com/agentproof/agentproof/catalog"
	"os"
)

// ModelInput is what the scripted model's scripts for a real CLI's runs are derived
// from: the case and its rendering for the attempt (the reference script with the
// attempt's nonce), the profile whose CLI talks to the model (its driver and lifecycle
// mode), and the workspace as the agent sees it (an absolute path for a session
// driver's file tools).
type ModelInput struct {
	Case      *catalog.Case
	Rendered  *catalog.RenderedCase
	Profile   *catalog.Profile
	Workspace string
}

// runs is how many runs the case expects, at least one.
func (in ModelInput) runs() int { return max(in.Case.ExpectedRunCount, 1) }

// ModelScripts derives the scripted model's scripts for a real CLI's runs of in.Case
// by its flow (Flow.Scripts), or from the case's reference script when the flow
// derives none of its own (ReferenceScripts). Errors are the derivation's: a
// reference script the model cannot play.
func ModelScripts(in ModelInput) ([]*scriptedmodel.Script, error) {
	if f, ok := registry[in.Case.Flow]; ok && f.Scripts != nil {
		return f.Scripts(in)
	}
	return ReferenceScripts(in)
}

// ReferenceScripts derives the scripted model's scripts from the case's rendered
// reference script: for a session driver (acp:<agent>, rpc:<agent>) the scripts of
// scriptedmodel.ForACP (a workspace write is the agent's own write tool, which asks
// permission; one script per run, or under the warm lifecycle one script holding every
// turn: one session serves them all), for Codex through its app-server (app:codex)
// those of scriptedmodel.ForCodexApp (a write is an apply_patch file change, other
// edits shell commands: both ask Codex's approval), for Claude Code (app:claude) those
// of ForACP (its Write tool and its shell ask through its permission prompt) — a
// session agent reads a file the workspace already holds before it replaces it
// (scriptedmodel.ReadBeforeOverwrite) —, else
// one script per turn
// (scriptedmodel.FromReference), the retry of a killed run (a flow that
// RetriesKilledRun) playing the killed run's script again.
func ReferenceScripts(in ModelInput) ([]*scriptedmodel.Script, error) {
	p := in.Profile
	if p.Driver.Kind == driver.KindApp && p.Driver.Arg == driver.AppCodex {
		return scriptedmodel.ForCodexApp(in.Rendered.Reference, in.Workspace, p.RunnerLifecycleMode == catalog.LifecycleModeWarm)
	}
	if p.Driver.Kind == driver.KindACP || p.Driver.Kind == driver.KindRPC || p.Driver.Kind == driver.KindApp {
		scripts, err := scriptedmodel.ForACP(in.Rendered.Reference, in.Workspace, p.RunnerLifecycleMode == catalog.LifecycleModeWarm)
		if err == nil {
			scriptedmodel.ReadBeforeOverwrite(scripts, isFile)
		}
		return scripts, err
	}
	scripts, err := scriptedmodel.FromReference(in.Rendered.Reference)
	if f, ok := registry[in.Case.Flow]; err == nil && ok && f.RetriesKilledRun {
		for i := 0; len(scripts) > 0 && len(scripts) < in.runs(); i++ {
			scripts = append(scripts, scripts[i])
		}
	}
	return scripts, err
}

// piScripts is the Scripts of a Pi flow: for Pi (rpc:pi) the scripts pi derives, for
// any other driver the reference's.
func piScripts(pi func(ModelInput) ([]*scriptedmodel.Script, error)) func(ModelInput) ([]*scriptedmodel.Script, error) {
	return func(in ModelInput) ([]*scriptedmodel.Script, error) {
		if in.Profile.Driver.Kind != driver.KindRPC {
			return ReferenceScripts(in)
		}
		return pi(in)
	}
}

// isFile reports whether path names an existing regular file (the seeded workspace's).
func isFile(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular()
}

package heartbeat

import (
	"context"
	"sync"

	"github.com/agentproof/agentproof/agent"
	"github.com/agentproof/agentproof/agent/driver"
	"github.com/agentproof/agentproof/environment"
	"github.com/agentproof/agentproof/worker"
)

// ACP under a sandbox (docs/acp.md "Under a sandbox"): an acp:<agent> run of a sandbox
// environment starts its agent process through the lease exactly like an exec run
// (launchLeased: the agent's state directory on the lease disk, handed to the sandbox
// user and bound writable; a real agent's node_modules read-only), but the process is
// not supervised by worker.Supervise: the ACP driver holds the trampoline's stdin and
// stdout, which bubblewrap and the sandbox init pass through to the agent. The process
// identity the runner records is the trampoline's (one trampoline carries one sandbox
// and one agent process for its whole life: the init exits when the agent does), and
// the exit the run records is the agent's own, from the init's report (Settle).

// leasedACP launches one ACP session's agent process inside a lease and keeps the
// provider's account of it once the process ended (settled).
type leasedACP struct {
	lease    *environment.Lease
	driver   driver.Name
	stateDir string

	mu      sync.Mutex
	settled *environment.Settled
}

// launch is the session's agent.ACPLaunchFunc: Launch through the lease's provider,
// and a settle that gives back the agent's own exit code or signal (the sandbox
// init's report) and keeps the Settled (limits hit, problems, facts) for the run's
// termination.
func (l *leasedACP) launch(spec worker.Spec) (worker.Spec, func(agent.ProcessExit) agent.ProcessExit, error) {
	x, err := launchLeased(context.Background(), l.lease, l.driver, spec, l.stateDir, "")
	if err != nil {
		return worker.Spec{}, nil, err
	}
	return x.Spec(), func(e agent.ProcessExit) agent.ProcessExit {
		o := worker.Outcome{Started: !e.NotSpawned, Exited: e.ExitCode != nil || e.Signal != "", ExitCode: e.ExitCode, Signal: e.Signal}
		st := x.Settle(o)
		e.ExitCode, e.Signal = st.Outcome.ExitCode, st.Outcome.Signal
		l.mu.Lock()
		l.settled = &st
		l.mu.Unlock()
		return e
	}, nil
}

// account is the provider's account of the launch, nil before the process ended.
func (l *leasedACP) account() *environment.Settled {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.settled
}

// acpLauncher is the agent.ACPLaunchFunc of a session of j under lease (nil and a nil
// launcher on the host: lease nil).
func acpLauncher(lease *environment.Lease, j job, stateDir string) (*leasedACP, agent.ACPLaunchFunc) {
	if lease == nil {
		return nil, nil
	}
	l := &leasedACP{lease: lease, driver: j.cfg.Driver, stateDir: stateDir}
	return l, l.launch
}

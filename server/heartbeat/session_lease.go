package heartbeat

import (
	"context"
	"sync"

	"github.com/agentproof/agentproof/agent/driver"
	"github.com/agentproof/agentproof/agent/session"
	"github.com/agentproof/agentproof/environment"
	"github.com/agentproof/agentproof/worker"
)

// Sessions under a sandbox (docs/acp.md "Under a sandbox"): a session driver's run
// (acp:<agent>) of a sandbox environment starts its agent process through the lease
// exactly like an exec run (launchLeased: the agent's state directory on the lease
// disk, handed to the sandbox user and bound writable; a real agent's node_modules
// read-only), but the process is not supervised by worker.Supervise: the session layer
// holds bubblewrap's stdin and stdout, which bubblewrap and the sandbox init pass
// through to the agent. The process
// identity the runner records is bubblewrap's (one bubblewrap carries one sandbox
// and one agent process for its whole life: the init exits when the agent does), and
// the exit the run records is the agent's own, from the init's report (Settle).

// leasedSession launches one session's agent process inside a lease and keeps the
// provider's account of it once the process ended (settled).
type leasedSession struct {
	lease    *environment.Lease
	driver   driver.Name
	stateDir string

	mu      sync.Mutex
	settled *environment.Settled
}

// launch is the session's session.LaunchFunc: Launch through the lease's provider,
// and a settle that gives back the agent's own exit code or signal (the sandbox
// init's report) and keeps the Settled (limits hit, problems, facts) for the run's
// termination.
func (l *leasedSession) launch(spec worker.Spec) (worker.Spec, func(session.ProcessExit) session.ProcessExit, error) {
	x, err := launchLeased(context.Background(), l.lease, l.driver, spec, l.stateDir, "")
	if err != nil {
		return worker.Spec{}, nil, err
	}
	return x.Spec(), func(e session.ProcessExit) session.ProcessExit {
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
func (l *leasedSession) account() *environment.Settled {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.settled
}

// sessionLauncher is the session.LaunchFunc of a session of j under lease (nil and a
// nil launcher on the host: lease nil).
func sessionLauncher(lease *environment.Lease, j job, stateDir string) (*leasedSession, session.LaunchFunc) {
	if lease == nil {
		return nil, nil
	}
	l := &leasedSession{lease: lease, driver: j.cfg.Driver, stateDir: stateDir}
	return l, l.launch
}

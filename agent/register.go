package agent

import (
	"github.com/agentproof/agentproof/agent/clis"
	"github.com/agentproof/agentproof/agent/driver"
	"github.com/agentproof/agentproof/agent/hostile"
	"github.com/agentproof/agentproof/worker"
)

// RegisterDrivers registers into package driver the names the drivers of this package
// take from the registries that implement them: the fixture programs of package worker
// (fixture:<name>), the pinned CLIs of package agent/clis that have an exec driver
// (exec:<cli>) and the hostile suite's attacks of package agent/hostile
// (hostile:<attack>). Until it is called those names parse as unknown. The command
// line calls it once at start, before anything reads a driver name; calling it again
// changes nothing. It is not done at package initialisation, so that a process that
// never parses a driver name does not pay for it.
func RegisterDrivers() {
	driver.Register(driver.KindFixture, worker.Fixtures()...)
	driver.Register(driver.KindCLI, clis.ExecNames()...)
	driver.Register(driver.KindHostile, hostile.SuiteAttacks...)
}

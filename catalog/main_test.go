package catalog

import (
	"os"
	"testing"

	"github.com/agentproof/agentproof/agent/clis"
	"github.com/agentproof/agentproof/agent/driver"
	"github.com/agentproof/agentproof/agent/hostile"
	"github.com/agentproof/agentproof/worker"
)

// TestMain registers the driver names the command line registers at start
// (agent.RegisterDrivers, which this package's tests cannot import: package agent
// imports catalog), so that the catalogs under test validate as they do for
// `agentproof validate`.
func TestMain(m *testing.M) {
	driver.Register(driver.KindFixture, worker.Fixtures()...)
	driver.Register(driver.KindCLI, clis.ExecNames()...)
	driver.Register(driver.KindHostile, hostile.SuiteAttacks...)
	os.Exit(m.Run())
}

package shard

import (
	"os"
	"testing"

	"github.com/agentproof/agentproof/agent"
)

// TestMain registers the driver names the command line registers at its start
// (fixture programs, pinned CLIs with an exec driver, hostile attacks).
func TestMain(m *testing.M) {
	agent.RegisterDrivers()
	os.Exit(m.Run())
}

// Package providers lists agentproof's environment providers (package environment's
// contract) in one place, so that the CLI's probe, the campaign and the heartbeat
// runner pick a provider by its catalog name the same way.
package providers

import (
	"github.com/agentproof/agentproof/environment"
	"github.com/agentproof/agentproof/environment/container"
	"github.com/agentproof/agentproof/environment/local"
	"github.com/agentproof/agentproof/environment/sandbox"
)

// All returns a fresh instance of every provider, local first, with default options
// (the sandbox and the container use this process's executable as their init).
func All() []environment.Provider {
	return []environment.Provider{local.New(), sandbox.New(sandbox.Options{}), container.New(container.Options{})}
}

// Get returns the provider called name, false when there is none.
func Get(name environment.ProviderName) (environment.Provider, bool) {
	for _, p := range All() {
		if p.Name() == name {
			return p, true
		}
	}
	return nil, false
}

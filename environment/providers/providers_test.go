package providers

import (
	"slices"
	"testing"

	"github.com/agentproof/agentproof/catalog"
	"github.com/agentproof/agentproof/environment"
)

// TestEveryCatalogProviderKnown: every provider agentproof implements is a catalog
// provider name, and Get finds each by that name (daytona is catalog-only: its cells
// cannot run here and stay out of the default catalog).
func TestEveryCatalogProviderKnown(t *testing.T) {
	t.Parallel()
	for _, p := range All() {
		if !slices.Contains(catalog.EnvironmentProviders, string(p.Name())) {
			t.Errorf("provider %q is not in catalog.EnvironmentProviders %v", p.Name(), catalog.EnvironmentProviders)
		}
		if got, ok := Get(p.Name()); !ok || got.Name() != p.Name() {
			t.Errorf("Get(%q) = %v, %v", p.Name(), got, ok)
		}
	}
	if _, ok := Get(environment.ProviderName("daytona")); ok {
		t.Error("daytona has no implementation here")
	}
}

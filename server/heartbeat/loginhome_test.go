package heartbeat

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentproof/agentproof/agent/driver"
	"github.com/agentproof/agentproof/api"
	"github.com/agentproof/agentproof/controlplane"
	"github.com/agentproof/agentproof/environment"
)

// TestLoginHome: an exec agent whose adapterConfig sets loginHome launches with HOME =
// <home>/login-homes/<company> when that is a 0700 directory; a missing HOME, a
// symbolic link, a wider mode, another driver and a sandbox lease are refused, naming
// the reason.
func TestLoginHome(t *testing.T) {
	t.Parallel()
	exec, err := driver.Parse("exec")
	if err != nil {
		t.Fatal(err)
	}
	ref, err := driver.Parse("reference")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		prep   func(t *testing.T, home string)
		driver driver.Name
		lease  *environment.Lease
		words  string // "" for the HOME
	}{
		{"seeded", func(t *testing.T, home string) { mkdir(t, home, 0o700) }, exec, nil, ""},
		{"missing", func(*testing.T, string) {}, exec, nil, "no such file or directory"},
		{"a symbolic link", func(t *testing.T, home string) {
			mkdir(t, filepath.Dir(home), 0o700)
			if err := os.Symlink(t.TempDir(), home); err != nil {
				t.Fatal(err)
			}
		}, exec, nil, "is a symbolic link"},
		{"mode 0755", func(t *testing.T, home string) { mkdir(t, home, 0o755) }, exec, nil, "is not a directory of mode 0700"},
		{"another driver", func(t *testing.T, home string) { mkdir(t, home, 0o700) }, ref, nil, "driver reference does not launch with a login HOME"},
		{"a sandbox", func(t *testing.T, home string) { mkdir(t, home, 0o700) }, exec, &environment.Lease{ID: "l", Provider: environment.ProviderSandbox}, "is a sandbox"},
		{"a container", func(t *testing.T, home string) { mkdir(t, home, 0o700) }, exec, &environment.Lease{ID: "l", Provider: environment.ProviderContainer}, "is a container"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			serverHome := t.TempDir()
			home := filepath.Join(serverHome, "login-homes", "company-0001")
			tt.prep(t, home)
			r := &Runner{cfg: Config{Home: serverHome}}
			j := job{company: "company-0001", env: &controlplane.Environment{ID: "env-1"}, cfg: api.AdapterConfig{Driver: tt.driver, LoginHome: true}}
			got, err := r.loginHome(j, tt.lease)
			switch {
			case tt.words == "" && (err != nil || got != home):
				t.Errorf("loginHome = %q, %v; want %s", got, err, home)
			case tt.words != "" && (err == nil || !strings.Contains(err.Error(), tt.words)):
				t.Errorf("loginHome = %q, %v; want an error naming %q", got, err, tt.words)
			}
		})
	}
}

func mkdir(t *testing.T, dir string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, mode); err != nil {
		t.Fatal(err)
	}
}

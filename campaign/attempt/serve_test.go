package attempt

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/agentproof/agentproof/redact"
)

// TestInstanceSecrets: the master key (every encoding) and the run-token key derived
// from it are in the set, and the home's own key files are the only exception to the
// persisted-state scan.
func TestInstanceSecrets(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	master := []byte("0123456789abcdef0123456789abcdef")
	if err := os.WriteFile(filepath.Join(home, masterKeyFile), master, 0o600); err != nil {
		t.Fatal(err)
	}
	vals, err := instanceSecrets(home, "board-token-value-0001")
	if err != nil {
		t.Fatal(err)
	}
	set := redact.NewSet(vals...)
	for _, leak := range []string{"board-token-value-0001", string(master), "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=", "3031323334353637383961626364656630313233343536373839616263646566"} {
		if set.FindExact([]byte("x"+leak+"y")) < 0 {
			t.Errorf("instance secret form %q not in the set", leak)
		}
	}
	if set.Len() < 7 {
		t.Errorf("set has %d values, want the board token and several forms of each key", set.Len())
	}
	if !ownSecretFile(home, masterKeyFile) || ownSecretFile(home, "instance.db") {
		t.Error("ownSecretFile: only the 0600 key files are exempt")
	}
	if err := os.Chmod(filepath.Join(home, masterKeyFile), 0o644); err != nil {
		t.Fatal(err)
	}
	if ownSecretFile(home, masterKeyFile) {
		t.Error("a key file readable by others is not exempt")
	}
	if _, err := instanceSecrets(t.TempDir(), "x"); err == nil {
		t.Error("a home without a master key: want an error")
	}
}

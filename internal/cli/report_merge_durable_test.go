package cli

import (
	"errors"
	"io/fs"
	"path/filepath"
	"testing"
)

// TestMergeDurable: when the report after a merge fails, mergeDurable syncs the
// campaign directory's file system and returns the report's error as it is (a usage
// error stays one, exit 2); a sync that fails too is returned with it.
func TestMergeDurable(t *testing.T) {
	t.Parallel()
	report := &UsageError{Err: errors.New("--catalog missing.yaml: no such file")}
	err := mergeDurable(t.TempDir(), report)
	if err != report {
		t.Errorf("synced: %v, want the report's error as it is", err)
	}
	err = mergeDurable(filepath.Join(t.TempDir(), "gone"), report)
	var ue *UsageError
	if !errors.As(err, &ue) || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("sync failed: %v, want the report's usage error and the sync's", err)
	}
}

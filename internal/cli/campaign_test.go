package cli

import (
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

// EnvTestCampaign names the directory of a whole campaign that TestCampaign checks:
// .ci/run's campaign step runs the README's main job there, with the binary the
// README builds,
//
//	agentproof run --all --results $AGENTPROOF_TEST_CAMPAIGN/res --campaign e2e --seed 7 --max-parallel 2 --progress plain \
//	    >$AGENTPROOF_TEST_CAMPAIGN/run.stdout 2>$AGENTPROOF_TEST_CAMPAIGN/run.stderr
//
// and exports the variable for the test command that follows.
const EnvTestCampaign = "AGENTPROOF_TEST_CAMPAIGN"

// TestCampaign runs every testdata/campaign/*.txtar script over a copy of the campaign
// in $AGENTPROOF_TEST_CAMPAIGN (res/, run.stdout, run.stderr in the script's work
// directory): what the default catalog's cells observed and stored, checked file by
// file, and the report regenerated from the stored results byte for byte. The campaign
// (177 cells, the real agent CLIs included) takes minutes, so it is not run inside the
// test binary; without the variable the test skips, except in CI, where .ci/run sets
// it and a missing campaign fails.
func TestCampaign(t *testing.T) {
	t.Parallel()
	dir := os.Getenv(EnvTestCampaign)
	if dir == "" {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI is set but $%s is not: .ci/run runs the campaign step before the test command", EnvTestCampaign)
		}
		t.Skipf("$%s is not set: no whole campaign to check (.ci/run runs one; or run `agentproof run --all` as the variable's comment shows and set it)", EnvTestCampaign)
	}
	testscript.Run(t, testscript.Params{
		Dir:                 "testdata/campaign",
		RequireExplicitExec: true,
		Cmds:                scriptCmds,
		Setup: func(env *testscript.Env) error {
			return copyTree(dir, env.WorkDir)
		},
	})
}

// copyTree copies the regular files and directories under src into dst (created as
// needed); anything else (a symbolic link, a socket) is an error.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		to := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(to, 0o755)
		case d.Type().IsRegular():
			return copyFile(p, to)
		default:
			return &fs.PathError{Op: "copy", Path: p, Err: fs.ErrInvalid}
		}
	})
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

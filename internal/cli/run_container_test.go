package cli

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentproof/agentproof/catalog"
	"github.com/agentproof/agentproof/environment"
	"github.com/agentproof/agentproof/environment/container"
	"github.com/agentproof/agentproof/verdict"
)

// TestContainerTagRefused: a container environment whose image is a tag without a
// digest is a catalog error: validate and run exit 2 before anything starts, naming
// the file, the environment and config.image.
func TestContainerTagRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := copyDefaultCatalog(dir); err != nil {
		t.Fatal(err)
	}
	extra := `environments:
  - id: by-tag
    label: A container by tag
    driver: container
    provider: container
    lifecycle: {setup: create_via_api, probe: run_context_via_api, cleanup: delete_via_api_and_destroy_leases}
    expectedExecutionTarget: {kind: local}
    resources: {cpu: 1, memoryGiB: 1, diskGiB: 1, pids: 64}
    config: {image: "docker.io/library/busybox:latest"}
`
	if err := os.WriteFile(filepath.Join(dir, "zz-tag.yaml"), []byte(extra), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"validate", "--catalog", dir}, {"run", "--catalog", dir, "--all", "--results", t.TempDir(), "--progress", "none"}} {
		var out, errb bytes.Buffer
		code := Main(args, strings.NewReader(""), &out, &errb)
		if verdict.ExitCode(code) != ExitUsage || !strings.Contains(errb.String(), "zz-tag.yaml") ||
			!strings.Contains(errb.String(), "environment by-tag config.image") || !strings.Contains(errb.String(), "has no digest") {
			t.Errorf("%s: exit %d, stderr %q; want exit 2 naming zz-tag.yaml, config.image and the missing digest", args[0], code, errb.String())
		}
	}
}

// TestNotRunHereContainer: on a machine whose engine does not answer (a docker CLI
// without its daemon) the container cells of a
// selection that does not name them are not run here, with the reason; naming the
// container environment is exit 2; a container environment whose image could not be
// pinned is not run here with why.
func TestNotRunHereContainer(t *testing.T) {
	t.Parallel()
	c, err := catalog.Default()
	if err != nil {
		t.Fatal(err)
	}
	var cells []*catalog.Cell
	for _, cell := range c.Cells {
		if cell.Environment.Provider == "container" {
			cells = append(cells, cell)
		}
	}
	if len(cells) == 0 {
		t.Fatal("the default catalog has no container cell")
	}
	noEngine := []environment.Provider{container.New(container.Options{Engine: &container.Engine{Name: container.EngineDocker, Path: "/nonexistent/docker"}})}
	notRun, err := notRunHere(context.Background(), cells, catalog.Selector{All: true}, noEngine, nil)
	if err != nil || len(notRun) != len(cells) || !strings.Contains(notRun[cells[0].ID], "does not answer") {
		t.Fatalf("--all: %v, %d of %d not run here: %q", err, len(notRun), len(cells), notRun[cells[0].ID])
	}
	_, err = notRunHere(context.Background(), cells, catalog.Selector{Environments: []string{"container"}}, noEngine, nil)
	var ue *UsageError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "environment container") || !strings.Contains(err.Error(), "container provider") {
		t.Errorf("--environment container: %v, want a usage error naming the environment and the provider", err)
	}
}

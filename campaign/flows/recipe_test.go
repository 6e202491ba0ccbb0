package flows

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/agentproof/agentproof/catalog"
)

// recipeFlow is a flow of this test only, written as docs/ARCHITECTURE.md "To add a
// flow" says — a play function and its registry entry with the flow's contract —:
// turn 1 must leave the case's workspace file holding the case's marker.
var recipeFlow = Flow{
	FlowContract: catalog.FlowContract{Name: "recipe_file_turn", Needs: []catalog.Need{{Field: catalog.FieldWorkspaceFile, What: "the file the agent writes"}}},
	Play: func(ctx context.Context, s *Session) Outcome {
		v, err := waitTurn(ctx, s, 1)
		if err != nil {
			return Outcome{Err: err}
		}
		got, err := os.ReadFile(filepath.Join(s.Workspace, s.Rendered.WorkspaceFile))
		if err != nil || string(got) != s.Rendered.Marker {
			return Outcome{Problems: []string{fmt.Sprintf("%s holds %q (%v), not the marker", s.Rendered.WorkspaceFile, got, err)}}
		}
		return Outcome{final: v}
	},
}

// recipeCase is a case of the recipe's flow in a suite of the default catalog's
// reference and nop profiles; its reference script writes the marker to the file.
const recipeCase = `cases:
  - id: recipe-file
    label: The recipe's flow
    groups: [core]
    workMode: standard
    flow: recipe_file_turn
    expectedRunCount: 1
    attemptTimeoutMs: {local: 60000}
    expectedTerminalState: {issue: done, run: succeeded}
    title: "Recipe {{nonce}}"
    prompt: Write {{marker}} to {{workspaceFile}}, then post it and mark the task done.
    marker: "RECIPE_{{nonce}}"
    workspaceFile: recipe.txt
    matchers:
      - {kind: message_exact, expected: "{{marker}}"}
    reference:
      turns:
        - trigger: assignment
          steps:
            - edit: {path: "{{workspaceFile}}", write: "{{marker}}"}
            - command: finish_task
              args: {summary: "{{marker}}"}
              present: true
suites:
  - id: recipe
    label: Recipe
    description: The flow a test adds by the recipe.
    groups: [core]
    profiles: [reference, nop]
    environments: [local]
    cases: [recipe-file]
    expectedMatrixSize: 2
`

// TestAddAFlow follows docs/ARCHITECTURE.md "To add a flow" with recipeFlow: once
// registered (as a flow file's init does), catalog loading with the registry's
// contracts accepts a case of it and enforces its contract, the schema lists it, and it
// plays in process against the real server — the reference agent meets it, an agent
// that does nothing breaks it. Not parallel: the flow is in the registry only while the
// test runs (the parallel tests start after it), so that the others see the registry
// the package's files make.
func TestAddAFlow(t *testing.T) {
	register(recipeFlow)
	t.Cleanup(func() { delete(registry, recipeFlow.Name) })

	load := func(t *testing.T, recipe string) (*catalog.Catalog, error) {
		fsys := fstest.MapFS{"recipe/recipe.yaml": &fstest.MapFile{Data: []byte(recipe)}}
		err := fs.WalkDir(catalog.DefaultFS(), ".", func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			b, err := fs.ReadFile(catalog.DefaultFS(), p)
			fsys["default/"+p] = &fstest.MapFile{Data: b}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return catalog.Load(fsys, catalog.WithFlows(Contracts()...))
	}
	c, err := load(t, recipeCase)
	if err != nil {
		t.Fatalf("the catalog refuses a case of the added flow: %v", err)
	}
	_, err = load(t, strings.Replace(recipeCase, "    workspaceFile: recipe.txt\n", "", 1))
	var ve *catalog.ValidationError
	if !errors.As(err, &ve) || !strings.Contains(err.Error(), "recipe/recipe.yaml:2:5: case recipe-file: flow recipe_file_turn needs workspaceFile (the file the agent writes)") {
		t.Errorf("a case breaking the added flow's contract: %v", err)
	}
	schema, err := catalog.Schema(Names())
	if err != nil || !strings.Contains(string(schema), `"recipe_file_turn"`) || !slices.Contains(Names(), recipeFlow.Name) {
		t.Errorf("the schema does not list the added flow (%v)", err)
	}

	for _, tt := range []struct{ agent, problem string }{{"reference", ""}, {"nop", "recipe.txt holds"}} {
		cell := c.Cell("recipe." + tt.agent + ".local.recipe-file")
		if cell == nil {
			t.Fatalf("no %s cell", tt.agent)
		}
		rc, err := cell.Render("0123456789abcdef")
		if err != nil {
			t.Fatal(err)
		}
		w := newWorld(t, rc, cell.Case.Flow, cell.Case.WorkMode, cell.CapabilityGrants)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		script := rc.Reference
		if tt.agent == "nop" {
			script = nopScript
		}
		var agent sync.WaitGroup
		agent.Go(func() { w.runAgent(ctx, t, script) })
		out := Run(ctx, &Session{Board: heartbeatless{w.company()}, TaskID: w.task, Case: cell.Case, Rendered: rc, Workspace: w.workspace, Poll: 5 * time.Millisecond, Log: t.Logf})
		cancel()
		agent.Wait()
		checkOutcome(t, out, tt.problem, "", "")
	}
}

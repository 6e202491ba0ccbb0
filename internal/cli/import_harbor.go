package cli

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentproof/agentproof/catalog"
	"github.com/agentproof/agentproof/environment/container"
	"github.com/agentproof/agentproof/harbor"
)

func newImportCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "import",
		Short: "Turn tasks of another format into catalog files",
	}
	return withSubcommands(cmd, newImportHarborCmd(a))
}

func newImportHarborCmd(a *app) *cobra.Command {
	var out string
	var bases []string
	cmd := &cobra.Command{
		Use:   "harbor DIR... [--out DIR] [--base-image FROM=LOCAL]...",
		Short: "Import Harbor task directories as catalog cases, each with its image built locally and a verifier",
		Long:  strings.TrimSpace(importHarborLong),
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageErrorf("%s needs at least one Harbor task directory (see '%s --help')", cmd.CommandPath(), cmd.CommandPath())
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return importHarbor(cmd.Context(), cmd.OutOrStdout(), args, out, bases)
		},
	}
	cmd.Flags().StringVar(&out, "out", "harbor-catalog", "catalog `directory` to write (created when missing; a task already in it is refused)")
	cmd.Flags().StringArrayVar(&bases, "base-image", nil, "build FROM an image of the local store instead of the one a Dockerfile names (`FROM=LOCAL`, e.g. ubuntu:24.04=localhost/my-ubuntu:24.04; repeatable): for a machine with no registry")
	return cmd
}

// importHarborLong is the help text of `agentproof import harbor`.
const importHarborLong = `
Import Harbor task directories (the task format of Harbor and Terminal-Bench 2) into a
catalog directory, one suite per task, then run them like any other suite:

  agentproof import harbor tasks/fix-greeting --out my-harbor
  agentproof run --catalog my-harbor --with-default --suite harbor-agentproof-fix-greeting

A task directory holds task.toml, instruction.md, environment/Dockerfile, tests/test.sh
and, optionally, solution/solve.sh. Every directory is read and checked first: what
agentproof cannot carry out faithfully (a prebuilt docker_image, a compose
environment, GPUs, internet access, variables for the verifier, unknown keys, ...) is
refused naming the file and the field, exit 2, before anything is built or written.

Then, AT IMPORT, each task's image is built from environment/ with the local engine
(podman build --pull=never: a base image must already be in the local store) and
pinned by its digest in the written environment; run checks that the digest still
resolves. A FROM image the local store does not have is refused before anything is
built, naming the Dockerfile's line and what to do: load the image into the store
(podman load of an archive saved where a registry is reachable), or build FROM a
local image of your own instead with --base-image FROM=LOCAL (the Dockerfile is
built with that FROM replaced; the written catalog says so). A --base-image that no
task's FROM names, or whose LOCAL image is not in the store, is refused too. For each task <id> (task.toml's name as an id: org/name -> org-name):

  <id>.yaml          case <id>: the instruction as the prompt; the tests' archive
                     files/<id>/tests.tar in the workspace; the verifier: tests/test.sh after the agent,
                     then the reward (/logs/verifier/reward.json, else reward.txt),
                     passing on a reward of exactly 1; tests/ protected (an agent that
                     changes them fails verifier_tampered)
                     environment harbor-<id>: driver container, the image by digest,
                     the task's cpus and memory/storage (rounded up to GiB); the
                     workspace at the image's working directory (e.g. /app), seeded
                     from the image's files there when the lease is set up; its
                     tests/ also at /tests; a fresh writable /logs in every launch
                     profiles harbor-<id>-reference (runs solution/solve.sh) and
                     harbor-<id>-nop; suite harbor-<id>: the reference must pass,
                     nop must fail; suite harbor-<id>-hostile: an agent rewriting
                     tests/test.sh and one writing the reward file itself must fail
  files/<id>/tests.tar  the task's tests/ (the case's workspace source)

Exit codes: 0 imported; 2 bad input (a task refused, a build that fails, a task
already in --out), nothing written; 3 no container engine here.
See docs/workspaces.md "Harbor tasks".
`

// importedTask is a task read and built, ready to be written.
type importedTask struct {
	dir  string
	task *harbor.Task
	im   harbor.Import
}

// importHarbor reads every task (all refusals at once), builds each image, checks
// what the catalog needs, then writes the catalog; see importHarborLong.
func importHarbor(ctx context.Context, w io.Writer, dirs []string, out string, flagBases []string) error {
	var tasks []importedTask
	var refusals []string
	ids := map[string]string{}
	for _, dir := range dirs {
		t, err := harbor.LoadTask(os.DirFS(dir), dir)
		var ps *harbor.Problems
		switch {
		case errors.As(err, &ps):
			refusals = append(refusals, ps.Error())
			continue
		case err != nil:
			return usageErrorf("import harbor: %w", err)
		}
		if prev, dup := ids[t.ID]; dup {
			refusals = append(refusals, fmt.Sprintf("%s/%s: task.name: gives case id %s, as %s does", dir, harbor.ConfigFile, t.ID, prev))
		}
		ids[t.ID] = dir
		for _, p := range []string{t.ID + ".yaml", filepath.Join(catalog.FilesDir, t.ID)} {
			if _, err := os.Lstat(filepath.Join(out, p)); err == nil {
				refusals = append(refusals, fmt.Sprintf("--out %s: %s exists already: task %s was imported there (remove it to import again)", out, p, t.Name))
			}
		}
		tasks = append(tasks, importedTask{dir: dir, task: t})
	}
	if len(refusals) > 0 {
		return usageErrorf("import harbor: nothing written:\n%s", strings.Join(refusals, "\n"))
	}
	bases, err := parseBaseImages(flagBases)
	if err != nil {
		return err
	}
	eng, ok := container.FindEngine()
	if !ok {
		return withExit(ExitInconclusive, fmt.Errorf("import harbor: neither podman nor docker is installed: the task images are built with the engine (Debian/Ubuntu: apt-get install podman runc)"))
	}
	if refusals, err = checkBaseImages(ctx, eng, tasks, bases); err != nil {
		return withExit(ExitInconclusive, fmt.Errorf("import harbor: %w", err))
	}
	if len(refusals) > 0 {
		return usageErrorf("import harbor: nothing written:\n%s", strings.Join(refusals, "\n"))
	}
	for i := range tasks {
		if err := buildTask(ctx, eng, &tasks[i], bases); err != nil {
			refusals = append(refusals, err.Error())
		}
	}
	if len(refusals) > 0 {
		return usageErrorf("import harbor: nothing written:\n%s", strings.Join(refusals, "\n"))
	}
	var suites []string
	for _, it := range tasks {
		if err := writeTask(it, out); err != nil {
			return fmt.Errorf("import harbor: %s: %w", it.dir, err)
		}
		fmt.Fprintf(w, "imported %s: case %s, image %s (built from %s%s), suite harbor-%s\n",
			it.task.Name, it.task.ID, it.im.Image, filepath.Join(it.dir, "environment"), harbor.BasesNote(it.im.Bases), it.task.ID)
		if !it.task.Config.Offline {
			fmt.Fprintf(w, "note: %s does not declare that it runs without the network ([environment] network_mode = \"no-network\"): Harbor gives it the network by default, "+
				"and here its agent and its verifier have none (a test.sh that installs its tools from the internet writes no passing reward here)\n", it.task.Name)
		}
		suites = append(suites, "--suite harbor-"+it.task.ID)
		if it.task.HasSolution {
			suites = append(suites, "--suite harbor-"+it.task.ID+"-hostile")
		}
	}
	fmt.Fprintf(w, "run them: agentproof run --catalog %s --with-default %s\n", out, strings.Join(suites, " "))
	return nil
}

// buildTask builds it's image (within the task's build timeout, else 10 minutes) and
// reads its working directory; a failed build or a task the catalog cannot hold is an
// error naming the file and the field.
func buildTask(ctx context.Context, eng container.Engine, it *importedTask, bases map[string]string) error {
	abs, err := filepath.Abs(it.dir)
	if err != nil {
		return err
	}
	req := container.BuildRequest{Context: filepath.Join(abs, "environment"), Name: "localhost/harbor-" + it.task.ID}
	used := map[string]string{}
	for _, b := range harbor.BaseImages(it.task.Dockerfile) {
		if to, ok := bases[b.Image]; ok {
			used[b.Image] = to
		}
	}
	if len(used) > 0 {
		// The task's Dockerfile with its FROM images replaced, built with the task's
		// own context (the task directory is never written).
		f, err := os.CreateTemp("", "agentproof-harbor-dockerfile-")
		if err != nil {
			return err
		}
		defer os.Remove(f.Name())
		_, err = f.WriteString(harbor.ReplaceBaseImages(it.task.Dockerfile, used))
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
		req.Dockerfile = f.Name()
	}
	timeout := 10 * time.Minute
	if s := it.task.Config.BuildTimeoutSec; s > 0 {
		timeout = time.Duration(s * float64(time.Second))
	}
	bctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	img, err := eng.Build(bctx, req)
	if err != nil {
		return fmt.Errorf("%s/%s: the image does not build here (podman build --pull=never: a base image must be in the local store): %w", it.dir, harbor.DockerfileFile, err)
	}
	wd, err := eng.WorkingDir(ctx, img.Ref)
	if err != nil {
		return fmt.Errorf("%s/%s: %w", it.dir, harbor.DockerfileFile, err)
	}
	it.im = harbor.Import{Image: img.Ref, WorkDir: wd, Bases: used}
	if ps := it.task.CatalogProblems(it.im); len(ps) > 0 {
		return (&harbor.Problems{Dir: it.dir, List: ps})
	}
	return nil
}

// parseBaseImages reads the --base-image flags (FROM=LOCAL, each FROM once) into a
// map FROM → LOCAL; a malformed one is a usage error naming it.
func parseBaseImages(flags []string) (map[string]string, error) {
	out := map[string]string{}
	for _, f := range flags {
		from, to, ok := strings.Cut(f, "=")
		switch {
		case !ok || strings.TrimSpace(from) != from || strings.TrimSpace(to) != to || from == "" || to == "" || strings.ContainsAny(f, " \t\n"):
			return nil, usageErrorf("--base-image %q must be FROM=LOCAL: the image a Dockerfile's FROM names, '=', and an image of the local store (e.g. ubuntu:24.04=localhost/my-ubuntu:24.04)", f)
		case out[from] != "":
			return nil, usageErrorf("--base-image %s is given twice", from)
		}
		out[from] = to
	}
	return out, nil
}

// checkBaseImages returns, before any build, the refusals of the tasks' base images:
// a FROM image not in the engine's local store and not mapped by --base-image (naming
// the Dockerfile's line and what to do), a --base-image no task's FROM names, and a
// --base-image whose local image the store does not have. The error is an engine
// that could not say.
func checkBaseImages(ctx context.Context, eng container.Engine, tasks []importedTask, bases map[string]string) ([]string, error) {
	var refusals []string
	named := map[string]bool{}
	have := func(ref string) (bool, error) { return eng.HasImage(ctx, ref) }
	for _, it := range tasks {
		for _, b := range harbor.BaseImages(it.task.Dockerfile) {
			named[b.Image] = true
			if _, mapped := bases[b.Image]; mapped {
				continue
			}
			ok, err := have(b.Image)
			if err != nil {
				return nil, err
			}
			if !ok {
				refusals = append(refusals, fmt.Sprintf("%s/%s:%d: FROM %s: the image is not in podman's local store, and the import never pulls: "+
					"load it into the store (where a registry is reachable: podman pull %s && podman save -o base.tar %s; here: podman load -i base.tar), "+
					"or build from a local image of your own instead: --base-image %s=<local image>",
					it.dir, harbor.DockerfileFile, b.Line, b.Image, b.Image, b.Image, b.Image))
			}
		}
	}
	for _, from := range slices.Sorted(maps.Keys(bases)) {
		if !named[from] {
			refusals = append(refusals, fmt.Sprintf("--base-image %s=%s: no task's %s names %s in FROM", from, bases[from], harbor.DockerfileFile, from))
			continue
		}
		ok, err := have(bases[from])
		if err != nil {
			return nil, err
		}
		if !ok {
			refusals = append(refusals, fmt.Sprintf("--base-image %s=%s: %s is not in podman's local store (podman images lists what is)", from, bases[from], bases[from]))
		}
	}
	return refusals, nil
}

// writeTask writes it's catalog file and files/<id>/tests.tar, the case's workspace
// source: the task's tests/ (the rest of the workspace is seeded from the image's
// working directory when the lease is set up, so the source is an archive, whose
// digest is its own, not the workspace's).
func writeTask(it importedTask, out string) error {
	file, err := it.task.Catalog(it.im)
	if err != nil {
		return err
	}
	dir := filepath.Join(out, catalog.FilesDir, it.task.ID)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := tarHarborTests(os.DirFS(filepath.Join(it.dir, "tests")), &buf); err != nil {
		return fmt.Errorf("%s/tests: %w", it.dir, err)
	}
	if err := os.WriteFile(filepath.Join(dir, harbor.TestsArchive), buf.Bytes(), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(out, it.task.ID+".yaml"), file, 0o644)
}

// tarHarborTests writes src's regular files and directories as a tar archive under
// tests/ (modes kept: an executable stays one; no owner, no times, so the same tests
// give the same bytes); a link or a special file is an error naming it.
func tarHarborTests(src fs.FS, w io.Writer) error {
	tw := tar.NewWriter(w)
	err := fs.WalkDir(src, ".", func(p string, de fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := de.Info()
		if err != nil {
			return err
		}
		name := path.Join(harbor.WorkspaceTests, p)
		switch {
		case de.IsDir():
			return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: name + "/", Mode: 0o755, Format: tar.FormatPAX})
		case !info.Mode().IsRegular():
			return fmt.Errorf("%s is not a regular file or a directory", p)
		}
		b, err := fs.ReadFile(src, p)
		if err != nil {
			return err
		}
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: int64(info.Mode().Perm()), Size: int64(len(b)), Format: tar.FormatPAX}); err != nil {
			return err
		}
		_, err = tw.Write(b)
		return err
	})
	if err != nil {
		return err
	}
	return tw.Close()
}

package cli

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
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
	cmd := &cobra.Command{
		Use:   "harbor DIR... [--out DIR]",
		Short: "Import Harbor task directories as catalog cases, each with its image built locally and a verifier",
		Long:  strings.TrimSpace(importHarborLong),
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageErrorf("%s needs at least one Harbor task directory (see '%s --help')", cmd.CommandPath(), cmd.CommandPath())
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return importHarbor(cmd.Context(), cmd.OutOrStdout(), args, out)
		},
	}
	cmd.Flags().StringVar(&out, "out", "harbor-catalog", "catalog `directory` to write (created when missing; a task already in it is refused)")
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
resolves. For each task <id> (task.toml's name as an id: org/name -> org-name):

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
func importHarbor(ctx context.Context, w io.Writer, dirs []string, out string) error {
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
	eng, ok := container.FindEngine()
	if !ok || eng.Name != container.EnginePodman {
		return withExit(ExitInconclusive, fmt.Errorf("import harbor: podman is not installed: the task images are built with it (Debian/Ubuntu: apt-get install podman runc)"))
	}
	for i := range tasks {
		if err := buildTask(ctx, eng, &tasks[i]); err != nil {
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
		fmt.Fprintf(w, "imported %s: case %s, image %s (built from %s), suite harbor-%s\n",
			it.task.Name, it.task.ID, it.im.Image, filepath.Join(it.dir, "environment"), it.task.ID)
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
func buildTask(ctx context.Context, eng container.Engine, it *importedTask) error {
	abs, err := filepath.Abs(it.dir)
	if err != nil {
		return err
	}
	timeout := 10 * time.Minute
	if s := it.task.Config.BuildTimeoutSec; s > 0 {
		timeout = time.Duration(s * float64(time.Second))
	}
	bctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	img, err := eng.Build(bctx, container.BuildRequest{Context: filepath.Join(abs, "environment"), Name: "localhost/harbor-" + it.task.ID})
	if err != nil {
		return fmt.Errorf("%s/%s: the image does not build here (podman build --pull=never: a base image must be in the local store): %w", it.dir, harbor.DockerfileFile, err)
	}
	wd, err := eng.WorkingDir(ctx, img.Ref)
	if err != nil {
		return fmt.Errorf("%s/%s: %w", it.dir, harbor.DockerfileFile, err)
	}
	it.im = harbor.Import{Image: img.Ref, WorkDir: wd}
	if ps := it.task.CatalogProblems(it.im); len(ps) > 0 {
		return (&harbor.Problems{Dir: it.dir, List: ps})
	}
	return nil
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

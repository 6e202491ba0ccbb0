package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentproof/agentproof/atomicfile"
	"github.com/agentproof/agentproof/catalog"
)

// defaultSnapshotPath is where `models update` writes the snapshot when --snapshot is
// not given: the embedded file, relative to the repository root.
var defaultSnapshotPath = filepath.Join("catalog", filepath.FromSlash(catalog.SnapshotFile))

// newModelsCmd is `agentproof models`: the reviewed model-breadth snapshot
// (docs/breadth.md).
func newModelsCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "models",
		Short: "Show or update the reviewed model-breadth snapshot",
		Long: strings.TrimSpace(`
The default catalog generates its model-breadth profiles from a reviewed ranking
snapshot embedded in agentproof (` + "catalog/" + catalog.SnapshotFile + `): exactly five
unique, available, tool-capable models with rank, canonical id, display name,
supported parameters, source URL, capture time and content hash. Campaigns never
change it; 'models update' is the only way it changes.`),
	}
	return withSubcommands(cmd, newModelsShowCmd(a), newModelsUpdateCmd(a))
}

func newModelsShowCmd(a *app) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "show",
		Short: "Print the embedded snapshot and the profiles generated from it",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if asJSON {
				_, err := a.stdout.Write(catalog.EmbeddedSnapshotBytes())
				return err
			}
			s, err := catalog.EmbeddedSnapshot()
			if err != nil {
				return fmt.Errorf("the embedded snapshot is invalid (this is a bug in agentproof): %w", err)
			}
			printSnapshot(a.stdout, s)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the snapshot file itself")
	return cmd
}

func newModelsUpdateCmd(a *app) *cobra.Command {
	var from, snapshot string
	cmd := &cobra.Command{
		Use:   "update --from FILE",
		Short: "Validate a new reviewed ranking and rewrite the snapshot and its hash",
		Long: strings.TrimSpace(`
Read a new ranking from FILE (the snapshot's JSON shape: schema, snapshotId,
ranking, requiredParameter, sourceUrl, capturedAt, models[] with rank, id, name,
supportedParameters and available; contentHash optional), check the rule — exactly
five models, ranks 1…5 in order, unique ids (and unique generated profile ids),
every model available and supporting the required parameter, an https source URL,
an RFC 3339 capture time and, when FILE carries a contentHash, that it matches its
models — and write the sealed snapshot (with its content hash computed) to
--snapshot, atomically. Every problem is reported at once and nothing is written
(exit 2). Rebuild agentproof afterwards to embed the new snapshot; the generated
profile ids follow the model ids (openrouter-<id, lower-case, runs of other
characters as '-'>).`),
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if from == "" {
				return usageErrorf("--from FILE is required: the reviewed ranking to validate")
			}
			data, err := readSnapshotFile(from)
			if err != nil {
				return &UsageError{Err: err}
			}
			s, err := catalog.ParseSnapshot(from, data, false)
			if err != nil {
				return &UsageError{Err: err}
			}
			out, err := s.Seal()
			if err != nil {
				return fmt.Errorf("sealing the snapshot (this is a bug in agentproof): %w", err)
			}
			fi, err := os.Lstat(snapshot)
			switch {
			case errors.Is(err, os.ErrNotExist):
				return usageErrorf("--snapshot %s does not exist: run from the repository root or name the snapshot file", snapshot)
			case err != nil:
				return usageErrorf("--snapshot %s: %v", snapshot, err)
			case !fi.Mode().IsRegular():
				return usageErrorf("--snapshot %s is not a regular file", snapshot)
			}
			if err := atomicfile.WriteFile(snapshot, out, fi.Mode().Perm()); err != nil {
				return fmt.Errorf("writing %s: %w", snapshot, err)
			}
			sealed, err := catalog.ParseSnapshot(snapshot, out, true)
			if err != nil {
				return fmt.Errorf("re-reading %s (this is a bug in agentproof): %w", snapshot, err)
			}
			fmt.Fprintf(a.stdout, "wrote %s\n", snapshot)
			printSnapshot(a.stdout, sealed)
			fmt.Fprintln(a.stdout, "Rebuild agentproof to embed it (go build -o agentproof ./cmd/agentproof).")
			return nil
		},
	}
	cmd.Flags().StringVar(&from, "from", "", "the new reviewed ranking (JSON)")
	cmd.Flags().StringVar(&snapshot, "snapshot", defaultSnapshotPath, "the snapshot file to rewrite")
	return cmd
}

// readSnapshotFile reads a ranking file: a regular file of at most
// catalog.MaxSnapshotBytes.
func readSnapshotFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("--from %s: %w", path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("--from %s: %w", path, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("--from %s is not a regular file", path)
	}
	b, err := io.ReadAll(io.LimitReader(f, catalog.MaxSnapshotBytes+1))
	if err != nil {
		return nil, fmt.Errorf("--from %s: %w", path, err)
	}
	if len(b) > catalog.MaxSnapshotBytes {
		return nil, fmt.Errorf("--from %s is larger than %d bytes", path, catalog.MaxSnapshotBytes)
	}
	return b, nil
}

// printSnapshot renders a snapshot and its generated profile ids.
func printSnapshot(w io.Writer, s *catalog.Snapshot) {
	fmt.Fprintf(w, "snapshot %s (%s, %s), captured %s from %s\ncontent hash %s\n", s.SnapshotID, s.Ranking, s.RequiredParameter, s.CapturedAt, s.SourceURL, s.ContentHash)
	for _, m := range s.Models {
		fmt.Fprintf(w, "  #%d %-40s %s → profile %s\n", m.Rank, m.ID, m.Name, catalog.BreadthProfileID(m.ID))
	}
}

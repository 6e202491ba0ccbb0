package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentproof/agentproof/campaign/flows"
	"github.com/agentproof/agentproof/catalog"
)

// catalogFlag adds --catalog to cmd and returns where its value lands.
func catalogFlag(cmd *cobra.Command) *string {
	var dir string
	cmd.Flags().StringVar(&dir, "catalog", "", "catalog directory (every *.yaml below it) or file; default: the embedded default catalog")
	return &dir
}

// loadCatalog loads the catalog in dir, or the embedded default catalog when dir is "".
// An invalid catalog, one naming a flow no implementation plays, or an unreadable
// directory is a usage error (exit 2).
func loadCatalog(dir string) (*catalog.Catalog, error) {
	c, err := readCatalog(dir)
	if err != nil {
		return nil, &UsageError{Err: catalogPathError(dir, err)}
	}
	return c, nil
}

// readCatalog loads the catalog in dir (the default when "") with the flow registry's
// implemented flows (catalog.WithFlows), returning the loader's errors as they are.
func readCatalog(dir string) (*catalog.Catalog, error) {
	implemented := catalog.WithFlows(flows.Implemented()...)
	if dir == "" {
		return catalog.Default(implemented)
	}
	return catalog.LoadDir(dir, implemented)
}

// catalogPathError turns a --catalog path that does not exist into an error that says
// what to pass instead; other errors are returned as they are.
func catalogPathError(dir string, err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("--catalog %s: no such file or directory; pass a catalog directory (every *.yaml below it) or one YAML file, or leave --catalog out to use the embedded default catalog", dir)
	}
	return err
}

// selectorFlags adds the cell selectors of spec runner-e2e-harness §3 to cmd. Dimension
// flags repeat and also accept comma-separated values.
func selectorFlags(cmd *cobra.Command, sel *catalog.Selector) {
	f := cmd.Flags()
	f.BoolVar(&sel.All, "all", false, "select every cell of every suite that is not manual-only")
	f.StringSliceVar(&sel.IDs, "id", nil, "select the cell with this `id`, <suite>.<profile>.<environment>.<case> (repeatable; exclusive with --all and dimensions)")
	f.StringSliceVar(&sel.Suites, "suite", nil, "select cells of this suite (repeatable, OR; names manual-only suites too)")
	f.StringSliceVar(&sel.Groups, "group", nil, "select cells carrying this group (repeatable, AND)")
	f.StringSliceVar(&sel.Profiles, "profile", nil, "select cells of this agent profile (repeatable, OR)")
	f.StringSliceVar(&sel.Environments, "environment", nil, "select cells in this environment (repeatable, OR)")
	f.StringSliceVar(&sel.Cases, "case", nil, "select cells of this task case (repeatable, OR)")
}

// selectCells applies sel, mapping selection errors to usage errors (exit 2).
func selectCells(c *catalog.Catalog, sel catalog.Selector) ([]*catalog.Cell, error) {
	cells, err := c.Select(trimSelector(sel))
	var se *catalog.SelectionError
	if errors.As(err, &se) {
		return nil, &UsageError{Err: se}
	}
	if err != nil {
		return nil, fmt.Errorf("selecting cells: %w", err)
	}
	return cells, nil
}

// trimSelector trims every selector value the way `list` does (shared by `run`).
func trimSelector(sel catalog.Selector) catalog.Selector {
	sel.IDs = trimAll(sel.IDs)
	sel.Suites = trimAll(sel.Suites)
	sel.Groups = trimAll(sel.Groups)
	sel.Profiles = trimAll(sel.Profiles)
	sel.Environments = trimAll(sel.Environments)
	sel.Cases = trimAll(sel.Cases)
	return sel
}

// trimAll drops blank values and surrounding spaces (from "a, b" comma lists).
func trimAll(vs []string) []string {
	var out []string
	for _, v := range vs {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}

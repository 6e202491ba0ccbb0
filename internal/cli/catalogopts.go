package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentproof/agentproof/campaign/flows"
	"github.com/agentproof/agentproof/catalog"
	"github.com/agentproof/agentproof/result"
)

// catalogSource is what --catalog and --with-default select: the catalog paths in the
// order given and whether the embedded default catalog is part of the catalog.
type catalogSource struct {
	paths       []string
	withDefault bool
}

// sources maps the flags to catalog.Sources: no --catalog means the embedded default
// catalog alone; --with-default adds it to the given paths.
func (s catalogSource) sources() catalog.Sources {
	return catalog.Sources{Default: s.withDefault || len(s.paths) == 0, Paths: s.paths}
}

// record is the sources as campaign.json and plan.json record them: absolute paths,
// so that `agentproof report` finds them from any directory. Errors: a path that has
// no absolute form (usage error).
func (s catalogSource) record() (*result.CatalogSources, error) {
	r := &result.CatalogSources{Default: s.withDefault || len(s.paths) == 0, Paths: []string{}}
	for _, p := range s.paths {
		abs, err := filepath.Abs(p)
		if err != nil {
			return nil, usageErrorf("--catalog %s: %v", p, err)
		}
		r.Paths = append(r.Paths, abs)
	}
	return r, nil
}

// sourceOf is the catalogSource a campaign recorded.
func sourceOf(r *result.CatalogSources) catalogSource {
	return catalogSource{paths: r.Paths, withDefault: r.Default && len(r.Paths) > 0}
}

// describe names the sources for humans: "the embedded default catalog",
// "--catalog /a --catalog /b --with-default".
func (s catalogSource) describe() string {
	if len(s.paths) == 0 {
		return "the embedded default catalog"
	}
	var parts []string
	for _, p := range s.paths {
		parts = append(parts, "--catalog "+p)
	}
	if s.withDefault {
		parts = append(parts, "--with-default")
	}
	return strings.Join(parts, " ")
}

// catalogFlag adds --catalog (repeatable) and --with-default to cmd and returns where
// their values land.
func catalogFlag(cmd *cobra.Command) *catalogSource {
	var src catalogSource
	f := cmd.Flags()
	f.StringArrayVar(&src.paths, "catalog", nil, "catalog `path`: a directory (every *.yaml below it; a *.yml there is an error) or one YAML file; repeatable, the parts merge into one catalog (an id declared twice is an error naming both files); default: the embedded default catalog")
	f.BoolVar(&src.withDefault, "with-default", false, "add the embedded default catalog to the --catalog paths, so their suites can use its profiles, environments, cases, groups and credentials (codex, reference, local, message-marker, ...)")
	return &src
}

// loadCatalog loads the catalog src selects (catalogSource.sources). An invalid catalog,
// one naming a flow no implementation plays, or an unreadable path is a usage error
// (exit 2).
func loadCatalog(src catalogSource) (*catalog.Catalog, error) {
	if err := src.check(); err != nil {
		return nil, err
	}
	c, err := readCatalog(src)
	if err != nil {
		return nil, &UsageError{Err: withDefaultHint(src, catalogPathError(err))}
	}
	return c, nil
}

// withDefaultHint adds defaultHint(src, err) to err, the error of loading src, when
// there is one; else it returns err as it is.
func withDefaultHint(src catalogSource, err error) error {
	if hint := defaultHint(src, err); hint != "" {
		return fmt.Errorf("%w\n%s", err, hint)
	}
	return err
}

// defaultHint says that --with-default would help src, a catalog of --catalog paths
// without the embedded default catalog whose loading failed with err: "" when it
// would not (src has the default already, err is no validation error, or src with the
// default has as many problems or more). With the default the catalog is valid (what
// it names unknown is the default catalog's: reference, local, message-marker, …), or
// has fewer problems (some of them are).
func defaultHint(src catalogSource, err error) string {
	var ve *catalog.ValidationError
	if len(src.paths) == 0 || src.withDefault || !errors.As(err, &ve) {
		return ""
	}
	_, again := readCatalog(catalogSource{paths: src.paths, withDefault: true})
	if again == nil {
		return "what it names unknown is in the embedded default catalog: add --with-default to use it"
	}
	var ve2 *catalog.ValidationError
	if errors.As(again, &ve2) && len(ve2.Problems) < len(ve.Problems) {
		return fmt.Sprintf("some of what it names unknown is in the embedded default catalog: with --with-default it has %d problem(s) instead of %d", len(ve2.Problems), len(ve.Problems))
	}
	return ""
}

// readCatalog loads the catalog src selects with the flow registry's flows and their
// contracts (catalog.WithFlows), returning the loader's errors as they are.
func readCatalog(src catalogSource) (*catalog.Catalog, error) {
	return catalog.LoadSources(src.sources(), catalog.WithFlows(flows.Contracts()...))
}

// check refuses an empty --catalog value (exit 2).
func (s catalogSource) check() error {
	for _, p := range s.paths {
		if strings.TrimSpace(p) == "" {
			return usageErrorf("--catalog needs a path: a catalog directory or one YAML file")
		}
	}
	return nil
}

// catalogPathError turns a --catalog path that does not exist into an error that says
// what to pass instead; other errors are returned as they are.
func catalogPathError(err error) error {
	var pe *fs.PathError
	if errors.Is(err, fs.ErrNotExist) && errors.As(err, &pe) {
		return fmt.Errorf("--catalog %s: no such file or directory; pass a catalog directory (every *.yaml below it) or one YAML file, or leave --catalog out to use the embedded default catalog", pe.Path)
	}
	return err
}

// selectorFlags adds the cell selectors to cmd: --all, --id, and the dimension flags
// (suite, group, profile, environment, case), which repeat and also accept
// comma-separated values.
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

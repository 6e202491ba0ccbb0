package cli

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/agentproof/agentproof/catalog"
)

// validateReport is what `agentproof validate --json` prints.
type validateReport struct {
	Valid    bool              `json:"valid"`
	Problems []validateProblem `json:"problems"`
	Suites   int               `json:"suites"`
	Cells    int               `json:"cells"`
}

type validateProblem struct {
	File    string `json:"file,omitempty"`
	Line    int    `json:"line,omitempty"`
	Column  int    `json:"column,omitempty"`
	Message string `json:"message"`
}

func newValidateCmd(a *app) *cobra.Command {
	var asJSON bool
	var dir *catalogSource
	cmd := &cobra.Command{
		Use:   "validate",
		Short: "Check a catalog and report every problem with file:line:column",
		Long: `Load a catalog (the embedded default; or the --catalog paths, merged in the order
given, plus the embedded default with --with-default) and check it completely:
strict YAML (unknown keys are errors), duplicate and unknown ids, raw secrets, matrix
sizes, exclusions, matcher specs, templates and reference scripts, ranking hashes, and
the driverConfig of exec profiles (command: the absolute path of an existing executable
file; args: strings using only {{apiUrl}} {{runId}} {{stateDir}} {{taskId}}
{{workspace}}; timeoutMs: 1..86400000; maxOutputBytes: 1..67108864; no other key), and
that every case's flow has an implementation in this agentproof. Only regular files
are read: a named pipe, device or socket among the *.yaml files is a problem naming
it, and is never opened for reading. A catalog directory reads *.yaml files only: a
*.yml file in it is a problem naming it (rename it to .yaml).
Every problem is reported at once, in two rounds: malformed YAML and unknown or
misspelt keys first (a declaration that does not decode is not checked further), then every
problem of what the catalog means. Exit code 0 when valid, 2 when not, 70 on an
internal error (a bug in agentproof).`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := dir.check(); err != nil {
				return err
			}
			c, err := readCatalog(*dir)
			var ve *catalog.ValidationError
			if err != nil && !errors.As(err, &ve) {
				return &UsageError{Err: catalogPathError(err)}
			}
			rep := validateReport{Valid: err == nil, Problems: []validateProblem{}}
			if ve != nil {
				for _, p := range ve.Problems {
					rep.Problems = append(rep.Problems, validateProblem{File: p.File, Line: p.Line, Column: p.Column, Message: p.Message})
				}
			} else {
				rep.Suites, rep.Cells = len(c.Suites), len(c.Cells)
			}
			if asJSON {
				if err := json.NewEncoder(a.stdout).Encode(rep); err != nil {
					return err
				}
				if ve != nil {
					return withExit(ExitUsage, nil)
				}
				return nil
			}
			if ve != nil {
				for _, p := range ve.Problems {
					fmt.Fprintln(a.stderr, p.String())
				}
				if hint := defaultHint(*dir, err); hint != "" {
					fmt.Fprintln(a.stderr, hint)
				}
				return withExit(ExitUsage, fmt.Errorf("catalog is invalid: %d problem(s)", len(ve.Problems)))
			}
			manual := 0
			for _, cell := range c.Cells {
				if cell.Suite.ManualOnly {
					manual++
				}
			}
			if manual > 0 {
				_, err = fmt.Fprintf(a.stdout, "catalog is valid: %d suites, %d cells (%d in manual-only suites, which --all leaves out)\n", rep.Suites, rep.Cells, manual)
				return err
			}
			_, err = fmt.Fprintf(a.stdout, "catalog is valid: %d suites, %d cells\n", rep.Suites, rep.Cells)
			return err
		},
	}
	dir = catalogFlag(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object {valid, problems[{file, line, column, message}], suites, cells}")
	return cmd
}

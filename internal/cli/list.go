package cli

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentproof/agentproof/catalog"

	"github.com/agentproof/agentproof/verdict"
)

// listCell is one element of `agentproof list --json`.
type listCell struct {
	ID                  string          `json:"id"`
	Suite               string          `json:"suite"`
	Profile             string          `json:"profile"`
	Environment         string          `json:"environment"`
	Case                string          `json:"case"`
	Generation          string          `json:"generation"`
	Driver              string          `json:"driver"`
	Provider            string          `json:"provider"`
	Model               string          `json:"model"`
	Groups              []string        `json:"groups"`
	RequiredCredentials []string        `json:"requiredCredentials"`
	AttemptTimeoutMs    int64           `json:"attemptTimeoutMs"`
	ExpectedRunCount    int             `json:"expectedRunCount"`
	ExpectedVerdict     verdict.Verdict `json:"expectedVerdict,omitempty"`
	ManualOnly          bool            `json:"manualOnly"`
	SuiteFingerprint    string          `json:"suiteFingerprint"`
}

func newListCmd(a *app) *cobra.Command {
	var sel catalog.Selector
	var asJSON, matrixJSON bool
	var shards int
	var weights string
	var dir *catalogSource
	cmd := &cobra.Command{
		Use:   "list [selectors]",
		Short: "List catalog cells as TSV, JSON, a CI job matrix or weighted shards",
		Long: `List the cells of the catalog's matrix, one per line, as tab-separated values with
the header ID, SUITE, GENERATION, PROVIDER, MODEL, CREDENTIALS (credentials
comma-joined). Nothing is started and no credential is read.

Without a selector every cell is listed, manual-only suites included; --all lists
what a run with --all would run (no manual-only suites). Selectors:
--suite, --group, --profile, --environment, --case repeat (OR within a dimension,
AND across dimensions; groups are ANDed); --id is exclusive with --all and with the
dimensions. An unknown value or an empty selection exits 2.

--json prints the selected cells as a JSON array. --matrix-json prints one JSON line
{include: [{executionId, suiteId, profileId, envVar, environmentId, caseId,
timeoutMinutes, needsDaytona}], needsDaytona, executionIds} sorted by executionId, for
CI matrices and Kubernetes Indexed Jobs (envVar: the credential the cell's profile
needs, "" for none; needsDaytona: whether the cell runs in a Daytona sandbox, which
needs that provider's credentials in the job); it leaves out manual-only suites unless
they are named.

--shards N splits the selection (as run would select it) into N shards of balanced
expected duration and prints the shard plan (schema agentproof.shards/v1: every
shard's cells, the suites' definition hashes and the plan's fingerprint); with
--matrix-json it prints the GitHub Actions matrix of the shards instead, one line
{include: [{shard: "i/N", index, count, cells, expectedMinutes, timeoutMinutes,
credentials}], fingerprint, count}. Each cell's expected duration is the median of
its attempts in the history given with --weights (a history.json); a cell without
history gets its attempt deadline scaled by the median ratio of duration to deadline
of the cells that have one. Shards are filled longest first, each cell to the shard
with the least expected time so far. 'agentproof run --plan FILE --shard i/N' runs
shard i of the plan; a summary line on stderr gives the expected times.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if asJSON && matrixJSON {
				return usageErrorf("--json and --matrix-json cannot be combined")
			}
			if weights != "" && shards == 0 {
				return usageErrorf("--weights weighs the cells of --shards N: give --shards too")
			}
			c, err := loadCatalog(*dir)
			if err != nil {
				return err
			}
			sel.Listing = !matrixJSON && shards == 0
			cells, err := selectCells(c, sel)
			if err != nil {
				return err
			}
			switch {
			case shards != 0:
				p, err := planShards(cells, shards, weights)
				if err != nil {
					return err
				}
				fmt.Fprintln(a.stderr, shardSummary(p))
				return a.printShards(c, p, matrixJSON)
			case matrixJSON:
				return encodeLine(a, catalog.Matrix(cells))
			case asJSON:
				return writeListJSON(a, cells)
			}
			return writeListTSV(a, cells)
		},
	}
	dir = catalogFlag(cmd)
	selectorFlags(cmd, &sel)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the selected cells as a JSON array")
	cmd.Flags().BoolVar(&matrixJSON, "matrix-json", false, "print the CI job matrix {include, needsDaytona, executionIds} as one JSON line (with --shards: the matrix of the shards)")
	cmd.Flags().IntVar(&shards, "shards", 0, "split the selection into `N` shards of balanced expected duration and print the shard plan")
	cmd.Flags().StringVar(&weights, "weights", "", "history.json `file` whose durations weigh the cells of --shards")
	return cmd
}

// encodeLine writes v as one JSON line on stdout.
func encodeLine(a *app, v any) error { return json.NewEncoder(a.stdout).Encode(v) }

// writeListJSON writes `list --json`: the cells as an indented JSON array.
func writeListJSON(a *app, cells []*catalog.Cell) error {
	out := make([]listCell, 0, len(cells))
	for _, cell := range cells {
		creds, groups := cell.RequiredCredentials, cell.Groups
		if creds == nil {
			creds = []string{}
		}
		if groups == nil {
			groups = []string{}
		}
		out = append(out, listCell{
			ID: cell.ID, Suite: cell.Suite.ID, Profile: cell.Profile.ID,
			Environment: cell.Environment.ID, Case: cell.Case.ID,
			Generation: cell.Profile.Generation, Driver: cell.Profile.Driver.String(),
			Provider: cell.Profile.Provider, Model: cell.Profile.Model,
			Groups: groups, RequiredCredentials: creds,
			AttemptTimeoutMs: cell.AttemptTimeoutMs, ExpectedRunCount: cell.Case.ExpectedRunCount,
			ExpectedVerdict: cell.ExpectedVerdict, ManualOnly: cell.Suite.ManualOnly,
			SuiteFingerprint: cell.Suite.Fingerprint,
		})
	}
	enc := json.NewEncoder(a.stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

// writeListTSV writes the default listing: a header, then one tab-separated line per
// cell.
func writeListTSV(a *app, cells []*catalog.Cell) error {
	var b strings.Builder
	b.WriteString("ID\tSUITE\tGENERATION\tPROVIDER\tMODEL\tCREDENTIALS\n")
	for _, cell := range cells {
		fmt.Fprintf(&b, "%s\t%s\t%s\t%s\t%s\t%s\n", cell.ID, cell.Suite.ID, cell.Profile.Generation,
			cell.Profile.Provider, cell.Profile.Model, strings.Join(cell.RequiredCredentials, ","))
	}
	_, err := a.stdout.Write([]byte(b.String()))
	return err
}

package cli

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/agentproof/agentproof/campaign"
	"github.com/agentproof/agentproof/report"
	"github.com/agentproof/agentproof/result"
)

func newCompareCmd(a *app) *cobra.Command {
	var results string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "compare <before> <after>",
		Short: "Compare two campaigns cell by cell: regressions, fixes, still failing, known failures, not run here, new and removed",
		Long: `Compare two campaigns cell by cell, from their campaign.json (written by 'agentproof
run' and 'agentproof report'). Each of <before> and <after> is a campaign directory or
a campaign id under --results.

Every cell of either campaign gets one change, by how it counts (calibration cells:
whether they met their expectation):

  regressed           passed before, failed after
  fixed               did not pass before (failed or inconclusive), passed after
  still failing       did not pass before, failed after
  inconclusive        inconclusive after (incomplete evidence is no regression)
  unexpectedly passed a known failure that passed after: its baseline entry is stale
  known failure       after, it ended as its entry in the baseline of known failures
                      expects (no regression)
  not run here        after, this machine could not provide its environment (the
                      reason is shown; never a regression nor a fix)
  definition changed  its suite's definition hash differs: a boundary, not compared
  new, removed        only in <after> (or not run here before: the reason is shown),
                      only in <before>
  still passing       passed in both (only counted)

The text output lists each change with its cells, the failure class and reason of
the later result, the suites whose definition changed, and the counts. --json prints
the comparison document (schema agentproof.compare/v1) instead:

  schema, before, after  the schema tag and the two campaign ids
  counts                 cells per change, every change present (zeros included)
  suites                 the suites whose definition changed, each with suiteId,
                         hashBefore and hashAfter ([] when none changed)
  cells                  every cell of either campaign: executionId, change,
                         before and after (verdicts, absent when the cell is
                         not in that campaign), failureClass and reason of the
                         later result, stateBefore/stateAfter (known_failure or
                         unexpected_pass), notRunBefore (why <before> did not run
                         it), hashBefore/hashAfter for a definition change
  regressed              true when a cell regressed (the exit code is then 1)

Exit codes: 0 nothing regressed, 1 a cell regressed, 2 an argument that names no
campaign (or a campaign.json that is not one), 70 internal error.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 2 {
				return usageErrorf("%s takes two campaigns, <before> and <after>, got %d argument(s) (see '%s --help')", cmd.CommandPath(), len(args), cmd.CommandPath())
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			before, err := openCampaign(results, args[0])
			if err != nil {
				return err
			}
			after, err := openCampaign(results, args[1])
			if err != nil {
				return err
			}
			c := result.Compare(before, after)
			if asJSON {
				enc := json.NewEncoder(a.stdout)
				enc.SetIndent("", "  ")
				if err := enc.Encode(c); err != nil {
					return err
				}
			} else if _, err := a.stdout.Write(report.CompareText(c)); err != nil {
				return err
			}
			return withExit(c.ExitCode(), nil)
		},
	}
	cmd.Flags().StringVar(&results, "results", "agentproof-results", "results root `directory` in which campaign ids are looked up")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the comparison as JSON (schema agentproof.compare/v1)")
	return cmd
}

// openCampaign reads the campaign.json of arg: a directory holding one, else a
// campaign id under results. Anything else is a *UsageError naming arg.
func openCampaign(results, arg string) (*result.Campaign, error) {
	paths := []string{filepath.Join(arg, result.CampaignFile)}
	if result.ValidCampaignID(arg) {
		paths = append(paths, filepath.Join(results, arg, result.CampaignFile))
	}
	for _, p := range paths {
		c, err := result.ReadCampaign(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, &UsageError{Err: err}
		}
		return c, nil
	}
	if st, err := os.Stat(arg); err == nil && st.IsDir() {
		return nil, notACampaign(arg)
	}
	if result.ValidCampaignID(arg) {
		if err := campaignExists(results, arg); err != nil {
			return nil, err // names the closest id and the campaigns there
		}
		return nil, notACampaign(filepath.Join(results, arg))
	}
	return nil, usageErrorf("%q is neither a campaign directory nor a campaign id with a %s under --results %s", arg, result.CampaignFile, results)
}

// notACampaign is the usage error for dir, a directory without a campaign.json, saying
// what to do: a campaign `agentproof run` started (it holds plan.json) gets its
// campaign.json from `agentproof report`; a results directory is compared by naming two
// of its campaigns; anything else is no campaign.
func notACampaign(dir string) error {
	if _, err := os.Stat(filepath.Join(dir, campaign.PlanFile)); err == nil {
		return usageErrorf("%s has no %s yet (run 'agentproof report --results %s --campaign %s' to write it)", dir, result.CampaignFile, filepath.Dir(dir), filepath.Base(dir))
	}
	if ids, err := campaignDirs(dir); err == nil && len(ids) > 0 {
		example := ids[max(0, len(ids)-2):]
		if len(example) == 1 {
			example = append(example, "<other campaign>")
		}
		return usageErrorf("%s is a results directory, not a campaign: name two of its %d campaign(s), e.g. agentproof compare --results %s %s %s", dir, len(ids), dir, example[0], example[1])
	}
	return usageErrorf("%s is not a campaign directory: it has no %s", dir, result.CampaignFile)
}

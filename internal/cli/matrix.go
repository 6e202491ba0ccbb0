package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/agentproof/agentproof/atomicfile"
	"github.com/agentproof/agentproof/report"
	"github.com/agentproof/agentproof/result"
)

func newMatrixCmd(a *app) *cobra.Command {
	var results, html string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "matrix",
		Short: "The runner qualification matrix: which runner, at which version, honours which boundary",
		Long: `Print the runner qualification matrix of every campaign under --results (their
campaign.json files), as Markdown for a README, or with --json as JSON (schema
agentproof.matrix/v1) for tools, and write it as a self-contained page (--html, default
<results>/matrix.html; "" writes none).

Rows are runners: a profile in an environment, with the driver, provider, model and
agent CLI (name and version) of its latest campaign. Columns are cases grouped by the
capability they qualify (basics, permissions approve/decline, Stop while pending, warm
session, native questions, steering and follow-ups, plans, recovery, files, journeys,
other). Each cell is the runner's latest state on that case (passed, failed, known
failure, not run here with why, inconclusive, missing), since which CLI version (or, for
agentproof's own agents, which campaign) that state holds, its history over the
campaigns oldest first with the CLI version where it changed, and a link to the latest
attempt's evidence. Nothing is run.

Exit codes: 0 printed, 2 no campaign under --results or an unreadable campaign.json.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			q, err := qualify(results)
			if err != nil {
				return err
			}
			noPage := cmd.Flags().Changed("html") && html == ""
			if !noPage {
				if err := writeMatrixPage(q, html, results); err != nil {
					return err
				}
			}
			if asJSON {
				_, err = a.stdout.Write(report.MatrixJSON(q))
				return err
			}
			_, err = a.stdout.Write(report.MatrixMarkdown(q))
			return err
		},
	}
	cmd.Flags().StringVar(&results, "results", defaultResults, "results root `directory` whose campaigns the matrix reads")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the matrix as JSON (agentproof.matrix/v1) instead of Markdown")
	cmd.Flags().StringVar(&html, "html", "", "write the matrix page to `file` (default <results>/matrix.html; \"\" writes none)")
	return cmd
}

// qualify reads the campaign.json of every campaign under results and builds the
// matrix. No campaign, or a campaign.json that does not read, is a usage error.
func qualify(results string) (*result.Qualification, error) {
	ids, err := campaignDirs(results)
	if err != nil {
		return nil, err
	}
	var campaigns []*result.Campaign
	for _, id := range ids {
		c, err := result.ReadCampaign(filepath.Join(results, id, result.CampaignFile))
		if errors.Is(err, fs.ErrNotExist) {
			continue // results without a report yet: agentproof report makes campaign.json
		}
		if err != nil {
			return nil, &UsageError{Err: err}
		}
		campaigns = append(campaigns, c)
	}
	if len(campaigns) == 0 {
		return nil, usageErrorf("no campaign.json under %s: run 'agentproof report --results %s' first", results, results)
	}
	return result.Qualify(campaigns), nil
}

// writeMatrixPage writes the matrix page to path ("" : <results>/matrix.html)
// atomically.
func writeMatrixPage(q *result.Qualification, path, results string) error {
	if path == "" {
		path = filepath.Join(results, report.MatrixFile)
	}
	page, err := report.MatrixHTML(q)
	if err != nil {
		return err
	}
	if err := atomicfile.WriteFile(path, page, result.FileMode, atomicfile.MakeDirs()); err != nil {
		return fmt.Errorf("writing the matrix page: %w", err)
	}
	return nil
}

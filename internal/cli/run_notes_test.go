package cli

import (
	"strings"
	"testing"

	"github.com/agentproof/agentproof/campaign"
	"github.com/agentproof/agentproof/result"
)

// TestResumeCommand: the command an interrupted run suggests repeats what --resume
// needs and nothing else: the campaign id, the --catalog paths (and --with-default)
// it ran with, --results unless it is the default, each shell-quoted when it must be.
func TestResumeCommand(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		src     *result.CatalogSources
		results string
		jobs    int
		want    string
	}{
		{"default catalog and results", &result.CatalogSources{Default: true}, defaultResults, 0, "agentproof run --resume c1"},
		{"no record", nil, "res", 0, "agentproof run --resume c1 --results res"},
		{"paths with default", &result.CatalogSources{Default: true, Paths: []string{"/cat/a", "/my cat/b"}}, "out dir/it's", 0, `agentproof run --resume c1 --catalog /cat/a --catalog '/my cat/b' --with-default --results 'out dir/it'\''s'`},
		{"paths alone", &result.CatalogSources{Paths: []string{"/cat"}}, defaultResults, 0, "agentproof run --resume c1 --catalog /cat"},
		{"max parallel", &result.CatalogSources{Default: true}, defaultResults, 2, "agentproof run --resume c1 --max-parallel 2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			plan := &campaign.Plan{CampaignID: "c1", CatalogSources: tc.src}
			got := resumeCommand(plan, tc.results, tc.jobs)
			if got != tc.want {
				t.Errorf("resumeCommand = %s, want %s", got, tc.want)
			}
			// The rerun a campaign with failures suggests is the same line with its flag.
			rerun, want := rerunCommand(plan, tc.results, tc.jobs), strings.Replace(tc.want, " --resume ", " --rerun-failed ", 1)
			if rerun != want {
				t.Errorf("rerunCommand = %s, want %s", rerun, want)
			}
		})
	}
}

package cli

import (
	"testing"

	"github.com/agentproof/agentproof/campaign"
	"github.com/agentproof/agentproof/report"
)

// TestResumeCommand: the command an interrupted run suggests repeats what --resume
// needs and nothing else: the campaign id, the --catalog paths (and --with-default)
// it ran with, --results unless it is the default, each shell-quoted when it must be.
func TestResumeCommand(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		src     *report.CatalogSources
		results string
		jobs    int
		want    string
	}{
		{"default catalog and results", &report.CatalogSources{Default: true}, defaultResults, 0, "agentproof run --resume c1"},
		{"no record", nil, "res", 0, "agentproof run --resume c1 --results res"},
		{"paths with default", &report.CatalogSources{Default: true, Paths: []string{"/cat/a", "/my cat/b"}}, "out dir/it's", 0, `agentproof run --resume c1 --catalog /cat/a --catalog '/my cat/b' --with-default --results 'out dir/it'\''s'`},
		{"paths alone", &report.CatalogSources{Paths: []string{"/cat"}}, defaultResults, 0, "agentproof run --resume c1 --catalog /cat"},
		{"max parallel", &report.CatalogSources{Default: true}, defaultResults, 2, "agentproof run --resume c1 --max-parallel 2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := resumeCommand(&campaign.Plan{CampaignID: "c1", CatalogSources: tc.src}, tc.results, tc.jobs)
			if got != tc.want {
				t.Errorf("resumeCommand = %s, want %s", got, tc.want)
			}
		})
	}
}

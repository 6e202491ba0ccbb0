package cli

import (
	"github.com/spf13/pflag"

	"github.com/agentproof/agentproof/result"
)

// historyKeepFlag adds --history-keep to fs, bound to keep (default
// result.DefaultHistoryKeep).
func historyKeepFlag(fs *pflag.FlagSet, keep *int) {
	fs.IntVar(keep, "history-keep", result.DefaultHistoryKeep,
		"campaigns history.json keeps per suite definition (the newest; plus each one's latest green campaign, without its cells, for the regression check); 0 keeps every campaign")
}

// historyKeep is result.CampaignOptions.HistoryKeep of --history-keep n: n, or -1
// (every campaign) for 0. Error: a usage error for n < 0.
func historyKeep(n int) (int, error) {
	if n < 0 {
		return 0, usageErrorf("--history-keep %d: want a whole number ≥ 0 (0 keeps every campaign)", n)
	}
	return keepOf(n), nil
}

// keepOf maps a valid --history-keep to result.CampaignOptions.HistoryKeep.
func keepOf(n int) int {
	if n == 0 {
		return -1
	}
	return n
}

package report

import "fmt"

// regressionWords is "regressed since <id> (latest green)".
func regressionWords(since string) string {
	return fmt.Sprintf("regressed since %s (latest green)", since)
}

// regressedCount is the word the summary and dashboard use for n regressions.
func regressedCount(n int) string {
	if n == 1 {
		return "1 cell regressed"
	}
	return fmt.Sprintf("%d cells regressed", n)
}

package cli

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
)

// BenchmarkCLICell measures one real-CLI cell end to end:
// `agentproof run --id core-compatibility.<cli>.local.message-marker` as a child
// process (a hard link named agentproof to this test binary, so that the CLI can start
// `agentproof mcp`), reporting the median attempt wall time (cell-ms), the median wall
// time of the CLI processes (cli-ms, from the heartbeat records; the MCP server runs
// inside it) and the share of the cell spent outside the CLI process, in agentproof
// (agentproof-%: goal ≤ 10). It needs the pinned CLIs: without them it is skipped on a
// developer machine and fails in CI.
//
//	go test ./internal/cli -run '^$' -bench BenchmarkCLICell -benchtime 5x
func BenchmarkCLICell(b *testing.B) {
	dir := scriptAgentsDir()
	if dir == "" {
		if os.Getenv("CI") != "" {
			b.Fatal("CI is set but the pinned agent CLIs are not installed (run .ci/agents.sh)")
		}
		b.Skip("the pinned agent CLIs are not installed (agentproof agents install)")
	}
	self, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	bin := filepath.Join(b.TempDir(), "agentproof")
	if err := os.Link(self, bin); err != nil {
		b.Fatal(err)
	}
	for _, cli := range []string{"codex", "opencode"} {
		b.Run(cli, func(b *testing.B) {
			res := b.TempDir()
			var cell, cliMs, share []float64
			for i := 0; b.Loop(); i++ {
				id := "b" + strconv.Itoa(i)
				var stdout, stderr bytes.Buffer
				cmd := exec.Command(bin, "run", "--id", "core-compatibility."+cli+".local.message-marker", "--results", res,
					"--campaign", id, "--progress", "none", "--max-automatic-retries", "0")
				cmd.Env = []string{"HOME=" + res, "TMPDIR=" + os.TempDir(), "PATH=/usr/bin:/bin", EnvAgentsDir + "=" + dir}
				cmd.Stdout, cmd.Stderr = &stdout, &stderr
				if err := cmd.Run(); err != nil {
					b.Fatalf("%v: %s %s", err, stdout.String(), stderr.String())
				}
				at := filepath.Join(res, id, "core-compatibility", cli, "local", "message-marker", "attempt-1")
				cellMs, ms := attemptTimes(b, at)
				cell = append(cell, float64(cellMs))
				cliMs = append(cliMs, float64(ms))
				share = append(share, 100*float64(cellMs-ms)/float64(max(cellMs, 1)))
			}
			b.ReportMetric(median(cell), "cell-ms")
			b.ReportMetric(median(cliMs), "cli-ms")
			b.ReportMetric(median(share), "agentproof-%")
		})
	}
}

package agentproof_test

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// readmeTestsBlocks are the ```sh blocks of README.md's "## Tests" section, each as its
// lines.
func readmeTestsBlocks(t *testing.T) [][]string {
	t.Helper()
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "\n## Tests\n")
	if !ok {
		t.Fatal(`README.md has no "## Tests" section`)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	var blocks [][]string
	for _, m := range regexp.MustCompile("(?s)```sh\n(.*?)\n *```").FindAllStringSubmatch(section, -1) {
		var lines []string
		for _, l := range strings.Split(m[1], "\n") {
			lines = append(lines, strings.TrimSpace(l))
		}
		blocks = append(blocks, lines)
	}
	return blocks
}

// ciLines are the lines of .ci/run, trimmed.
func ciLines(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(".ci/run")
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, l := range strings.Split(string(b), "\n") {
		lines = append(lines, strings.TrimSpace(l))
	}
	return lines
}

// TestCIRunsTheREADMECommands: the README's test command (the first block of "## Tests")
// is a command line of .ci/run, exactly; .ci/run's campaign step builds the binary with
// the README's build line and runs `./agentproof run --all` as the README says, but for
// where the results go.
func TestCIRunsTheREADMECommands(t *testing.T) {
	t.Parallel()
	blocks := readmeTestsBlocks(t)
	if len(blocks) < 3 || len(blocks[0]) != 1 {
		t.Fatalf(`README.md "## Tests" has %d sh blocks; want the test command alone first, then -short, then the campaign step`, len(blocks))
	}
	ci := ciLines(t)
	test := blocks[0][0]
	if !slices.ContainsFunc(ci, func(l string) bool { return l == test || strings.HasPrefix(l, test+" ||") }) {
		t.Errorf(".ci/run does not run the README's test command %q", test)
	}
	campaign := blocks[2]
	if len(campaign) != 2 || !slices.Contains(ci, campaign[0]) {
		t.Errorf(".ci/run does not build agentproof as the README's campaign step says (%q)", campaign)
	}
	results := regexp.MustCompile(`--results \S+`)
	normal := func(l string) string { return results.ReplaceAllString(strings.TrimSuffix(l, " \\"), "--results R") }
	want := normal(campaign[1])
	if !strings.HasPrefix(want, "./agentproof run --all ") || !slices.ContainsFunc(ci, func(l string) bool { return normal(l) == want }) {
		t.Errorf(".ci/run does not run the README's campaign %q (but for --results)", campaign[1])
	}
}

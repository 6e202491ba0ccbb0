package report

import (
	"context"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"gotest.tools/v3/golden"

	"github.com/agentproof/agentproof/result"
	"github.com/agentproof/agentproof/verdict"
)

// twoVersions is the qualification of two campaigns of a codex runner at CLI versions
// 0.170.0 and 0.171.0: the approve boundary passes, then fails; Stop passes in both;
// the warm session passes, then is not run here (this machine lacked bubblewrap).
func twoVersions() *result.Qualification {
	res := func(cs string, v verdict.Verdict, version string) result.Result {
		return result.Result{ExecutionID: "nb.codex.local." + cs, SuiteID: "nb", ProfileID: "codex", EnvironmentID: "local", CaseID: cs,
			Verdict: v, Attempt: 1, Cleanup: result.CleanupPassed, Model: "openai/gpt-5",
			Evidence:     []string{"nb/codex/local/" + cs + "/attempt-1/logs/flow.log"},
			RuntimeFacts: []result.RuntimeFacts{{Driver: "exec:codex", CLIName: "codex", CLIVersion: version}}}
	}
	notRun := result.Result{ExecutionID: "nb.codex.local.warm-three-turn", SuiteID: "nb", ProfileID: "codex", EnvironmentID: "local", CaseID: "warm-three-turn",
		Verdict: verdict.Inconclusive, Synthetic: true, NotRunHere: "needs bubblewrap, which is not installed"}
	return result.Qualify([]*result.Campaign{
		{CampaignID: "camp-a", GeneratedAt: "2026-12-01T00:00:00Z", Results: []result.Result{res("permission-approve-write", verdict.Passed, "0.170.0"), res("pending-permission-stop", verdict.Passed, "0.170.0"),
			res("warm-three-turn", verdict.Passed, "0.170.0")}},
		{CampaignID: "camp-b", GeneratedAt: "2026-12-02T00:00:00Z", Results: []result.Result{res("permission-approve-write", verdict.Failed, "0.171.0"), res("pending-permission-stop", verdict.Passed, "0.171.0"),
			notRun}},
	})
}

// TestMatrixMarkdown: the Markdown matrix says per boundary what changed between the
// two CLI versions, and why a cell was not run here; so does the JSON (both kept in
// golden files, -update rewrites them).
func TestMatrixMarkdown(t *testing.T) {
	t.Parallel()
	q := twoVersions()
	md := string(MatrixMarkdown(q))
	golden.Assert(t, md, "golden/matrix.md")
	golden.Assert(t, string(MatrixJSON(q)), "golden/matrix.json")
	for _, want := range []string{
		"| codex (local) · exec:codex · codex 0.171.0 · openai/gpt-5 | – not run here: needs bubblewrap, which is not installed, since camp-b (✓ 0.170.0 –) |",
		"## permissions (approve / decline)",
		"| codex (local) · exec:codex · codex 0.171.0 · openai/gpt-5 | ✗ failed, since 0.171.0 (✓ 0.170.0 ✗ 0.171.0) [evidence](camp-b/nb/codex/local/permission-approve-write/attempt-1/result.json) |",
		"| codex (local) · exec:codex · codex 0.171.0 · openai/gpt-5 | ✓ passed, since 0.170.0 (✓ 0.170.0 ✓ 0.171.0) [evidence](camp-b/nb/codex/local/pending-permission-stop/attempt-1/result.json) |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("the matrix lacks %q:\n%s", want, md)
		}
	}
}

// TestMatrixInBrowser opens the matrix page in headless Chromium at a desktop and a
// phone width: no console error, no request but the page itself, one coloured cell
// per runner and boundary with its state, since when and history, the page no wider
// than a phone's screen (tables scroll inside their box); screenshots are kept in
// $AGENTPROOF_ARTIFACTS (matrix-desktop.png, matrix-phone.png).
func TestMatrixInBrowser(t *testing.T) {
	t.Parallel()
	chromium := findChromium(t)
	page, err := MatrixHTML(twoVersions())
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), MatrixFile)
	if err := os.WriteFile(path, page, 0o644); err != nil {
		t.Fatal(err)
	}
	pageURL := (&url.URL{Scheme: "file", Path: filepath.ToSlash(path)}).String()
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), chromedp.ExecPath(chromium), chromedp.Headless,
		chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck,
		chromedp.UserDataDir(t.TempDir()), chromedp.Flag("disable-background-networking", true), chromedp.WindowSize(1440, 900))
	defer cancelAlloc()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	ctx, cancelTimeout := context.WithTimeout(ctx, 90*time.Second)
	defer cancelTimeout()
	var mu sync.Mutex
	var problems []string
	if err := chromedp.Listen(ctx, func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch e := ev.(type) {
		case *runtime.EventConsoleAPICalled:
			problems = append(problems, "console "+string(e.Type))
		case *runtime.EventExceptionThrown:
			problems = append(problems, "exception: "+e.ExceptionDetails.Text)
		case *network.EventRequestWillBeSent:
			if e.Request.URL != pageURL {
				problems = append(problems, "request "+e.Request.URL)
			}
		}
	}); err != nil {
		t.Fatalf("starting chromium: %v", err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("driving chromium: %v", err)
		}
	}
	must(chromedp.Do(ctx, chromedp.Navigate(pageURL), chromedp.WaitReady(chromedp.ID("summary"))))
	cells, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll("td.cell[data-state]")).map(c => c.dataset.case + ": " + c.innerText.replace(/\n/g, " / "))`))
	must(err)
	desktop, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	must(err)
	must(chromedp.Do(ctx, chromedp.EmulateViewport(390, 844), chromedp.Navigate(pageURL), chromedp.WaitReady(chromedp.ID("summary"))))
	fits, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.documentElement.scrollWidth <= window.innerWidth`))
	must(err)
	phone, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	must(err)

	want := []string{
		"permission-approve-write: ✗ failed / since 0.171.0 / ✓ 0.170.0 ✗ 0.171.0 / evidence",
		"pending-permission-stop: ✓ passed / since 0.170.0 / ✓ 0.170.0 ✓ 0.171.0 / evidence",
		"warm-three-turn: – not run here / needs bubblewrap, which is not installed / since camp-b / ✓ 0.170.0 –",
	}
	if strings.Join(cells, "\n") != strings.Join(want, "\n") {
		t.Errorf("cells:\n%s\nwant:\n%s", strings.Join(cells, "\n"), strings.Join(want, "\n"))
	}
	if !fits {
		t.Error("on a 390 px wide screen the page is wider than the screen")
	}
	mu.Lock()
	if len(problems) > 0 {
		t.Errorf("console errors or requests: %v", problems)
	}
	mu.Unlock()
	dir := os.Getenv("AGENTPROOF_ARTIFACTS")
	if dir == "" {
		dir = t.TempDir()
	}
	must(os.MkdirAll(dir, 0o755))
	for name, b := range map[string][]byte{"matrix-desktop.png": desktop, "matrix-phone.png": phone} {
		must(os.WriteFile(filepath.Join(dir, name), b, 0o644))
	}
}

// TestStateMarks: every cell state of the vocabulary has its own mark, so the matrix's
// legend and cells never show an empty one.
func TestStateMarks(t *testing.T) {
	t.Parallel()
	seen := map[string]result.CellState{}
	for _, s := range result.CellStates {
		m := stateMarks[s]
		if m == "" {
			t.Errorf("state %s has no mark", s)
		}
		if other, dup := seen[m]; dup {
			t.Errorf("states %s and %s share the mark %q", other, s, m)
		}
		seen[m] = s
	}
}

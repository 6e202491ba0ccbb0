package report

import (
	"context"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// findChromium returns Debian's chromium (or $AGENTPROOF_CHROMIUM). The browser test
// must run in CI: when CI=true and no browser is installed it FAILS (.ci/run installs
// the `chromium` package). Only on a developer machine without chromium and without CI
// set does it skip, saying so.
func findChromium(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: this test starts a headless Chromium (seconds); the full test command runs it")
	}
	for _, name := range []string{os.Getenv("AGENTPROOF_CHROMIUM"), "chromium", "chromium-browser", "google-chrome"} {
		if name == "" {
			continue
		}
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("chromium is not installed but CI is set: install Debian's chromium package (.ci/run does)")
	}
	t.Skip("chromium is not installed and CI is unset: skipping the browser test locally (apt-get install chromium to run it)")
	return ""
}

// TestDashboardInBrowser opens the generated dashboard from disk in headless Chromium:
// no console errors, no network requests, a failed card expands to its matcher table,
// the partial-campaign toggle reveals the partial campaign, a run's transcript opens
// to its steps (hostile text inert, long text cut with a note), and a screenshot is saved
// (in $AGENTPROOF_ARTIFACTS when set, else the test's temporary directory).
func TestDashboardInBrowser(t *testing.T) {
	t.Parallel()
	chromium := findChromium(t)
	root, _, _ := buildFixtureHistory(t)
	page := filepath.Join(root, "camp-2", DashboardFile)
	pageURL := (&url.URL{Scheme: "file", Path: filepath.ToSlash(page)}).String()

	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromium),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.WindowSize(1440, 1000),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	ctx, cancelTimeout := context.WithTimeout(ctx, 90*time.Second)
	defer cancelTimeout()

	var mu sync.Mutex
	var problems, requests []string
	err := chromedp.Listen(ctx, func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch e := ev.(type) {
		case *runtime.EventConsoleAPICalled:
			switch e.Type {
			case runtime.ConsoleAPICalledTypeError, runtime.ConsoleAPICalledTypeWarning, runtime.ConsoleAPICalledTypeAssert:
				problems = append(problems, "console "+string(e.Type))
			}
		case *runtime.EventExceptionThrown:
			problems = append(problems, "exception: "+e.ExceptionDetails.Text)
		case *log.EventEntryAdded:
			if e.Entry.Level == log.EntryLevelError || e.Entry.Level == log.EntryLevelWarning {
				problems = append(problems, "log "+string(e.Entry.Level)+": "+e.Entry.Text)
			}
		case *network.EventRequestWillBeSent:
			requests = append(requests, e.Request.URL)
		}
	})
	if err != nil {
		t.Fatalf("starting chromium: %v", err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("driving chromium: %v", err)
		}
	}
	countVisible := `Array.from(document.querySelectorAll("#campaigns tr.camp")).filter(r => !r.hidden).length`
	must(chromedp.Do(ctx, chromedp.Navigate(pageURL), chromedp.WaitReady(chromedp.ID("history"))))
	cards, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("details.card").length`))
	must(err)
	topShot, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	must(err)
	must(chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(`details[data-state="failed"] > summary`)),
		chromedp.WaitVisible(chromedp.CSS(`details[data-state="failed"][open] table.matchers`)),
	))
	failedOpen, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("details[data-state=failed][open]").length`))
	must(err)
	matcherRows, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll("details[data-state=failed][open] table.matchers tbody tr")).map(r => Array.from(r.cells).map(c => c.innerText).join(" | "))`))
	must(err)
	shownBefore, err := chromedp.Run(ctx, chromedp.Evaluate[int](countVisible))
	must(err)
	must(chromedp.Do(ctx, chromedp.Click(chromedp.ID("camp-partial"))))
	shownAfter, err := chromedp.Run(ctx, chromedp.Evaluate[int](countVisible))
	must(err)
	shownText, err := chromedp.Run(ctx, chromedp.Text(chromedp.ID("camp-shown")))
	must(err)
	shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	must(err)
	cardShot, err := chromedp.Run(ctx, chromedp.Screenshot(chromedp.CSS(`details[data-state="failed"][open]`)))
	must(err)
	historyShot, err := chromedp.Run(ctx, chromedp.Screenshot(chromedp.ID("history")))
	must(err)

	// Transcript: the failed card's run trajectory opens to its steps, the hostile
	// argument shown as text, the long result cut with a note, the partial flag shown.
	must(chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(`details[data-state="failed"][open] details.transcript > summary`)),
		chromedp.WaitVisible(chromedp.CSS(`details[data-state="failed"][open] details.transcript[open] li.step`)),
	))
	transcript, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll("details.transcript[open] li.step")).map(li => li.className + " | " + li.innerText.replace(/\s+/g, " "))`))
	must(err)
	transcriptHead, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`details.transcript[open] > summary`)))
	must(err)
	transcriptImgs, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("details.transcript img, details.transcript script").length`))
	must(err)
	transcriptShot, err := chromedp.Run(ctx, chromedp.Screenshot(chromedp.CSS(`details.transcript[open]`)))
	must(err)

	// Triage: the "Needs attention" list puts the failed cell first, then the
	// inconclusive one, each with its reason and (when it has some) an evidence link;
	// a filter in the URL fragment applies on load, and changing a filter writes it
	// back.
	triage, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll("#triage-list li")).map(li => li.getAttribute("data-verdict") + " " + li.querySelector(".tri-cell").textContent + " | " + li.querySelector(".tri-reason").textContent.slice(0, 40) + " | " + (li.querySelector(".tri-evidence") ? li.querySelector(".tri-evidence").getAttribute("href") : "-"))`))
	must(err)
	must(chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#triage-list li.inconclusive a.tri-cell`)),
		chromedp.WaitVisible(chromedp.CSS(`details[data-state="missing"][open] .body`))))
	cardReason, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector("details.card[data-verdict=failed] summary .reason").textContent`))
	must(err)
	must(chromedp.Do(ctx, chromedp.Navigate(pageURL+"#verdict=failed"), chromedp.WaitReady(chromedp.ID("history"))))
	countCards := `Array.from(document.querySelectorAll("details.card")).filter(c => !c.hidden).map(c => c.getAttribute("data-verdict")).join(",")`
	filtered, err := chromedp.Run(ctx, chromedp.Evaluate[string](countCards))
	must(err)
	cellShown, err := chromedp.Run(ctx, chromedp.Text(chromedp.ID("cell-shown")))
	must(err)
	_, err = chromedp.Run(ctx, chromedp.Evaluate[bool](`(function(){var s=document.getElementById("cell-verdict"); s.value="inconclusive"; s.dispatchEvent(new Event("change")); var k=document.getElementById("cell-class"); k.value="permanent_infrastructure"; k.dispatchEvent(new Event("change")); return true})()`))
	must(err)
	hash, err := chromedp.Run(ctx, chromedp.Evaluate[string](`location.hash`))
	must(err)
	filtered2, err := chromedp.Run(ctx, chromedp.Evaluate[string](countCards))
	must(err)
	// Regressions against the latest green campaign and the per-cell history strip
	// (dashboard_cellhistory.go): the failed cell regressed since camp-green, its strip
	// shows passed → failed across definition boundaries.
	must(chromedp.Do(ctx, chromedp.Navigate(pageURL), chromedp.WaitReady(chromedp.ID("history"))))
	regressions, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll("#regressions ul.baselines li")).map(li => li.className + " " + li.innerText)`))
	must(err)
	badge, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(document.querySelector("details.card[data-verdict=failed] summary .regressed-badge")||{textContent:"-"}).textContent + " | " + (document.querySelector("#triage-list li.failed .tri-regressed")||{textContent:"-"}).textContent`))
	must(err)
	strip, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(function(){var h=document.querySelector("details.card[data-verdict=failed] summary .cellhist"); if(!h){return "-"} return Array.from(h.querySelectorAll(".h")).map(x => x.getAttribute("title")).join(", ") + " | " + h.querySelectorAll(".brk").length + " | " + h.querySelector(".chg").textContent})()`))
	must(err)
	// The first campaign of the history (camp-green) had nothing to compare with: its
	// suites share one folded line, whose ids show only once it is opened.
	firstURL := (&url.URL{Scheme: "file", Path: filepath.ToSlash(filepath.Join(root, "camp-green", DashboardFile))}).String()
	firstRun := `(function(){var l=document.querySelectorAll("#regressions ul.baselines li"); var d=document.querySelector("#regressions li.without details"); if(!d){return l.length + " | -"} var ids=Array.from(d.querySelectorAll(".suite-id")); return [l.length, d.querySelector("summary").innerText, d.open, ids.map(x => x.textContent + ":" + x.checkVisibility()).join(",")].join(" | ")})()`
	must(chromedp.Do(ctx, chromedp.Navigate(firstURL), chromedp.WaitReady(chromedp.ID("history"))))
	firstClosed, err := chromedp.Run(ctx, chromedp.Evaluate[string](firstRun))
	must(err)
	must(chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#regressions li.without details > summary`)),
		chromedp.WaitVisible(chromedp.CSS(`#regressions li.without details[open] .suite-id`))))
	firstOpen, err := chromedp.Run(ctx, chromedp.Evaluate[string](firstRun))
	must(err)
	firstShot, err := chromedp.Run(ctx, chromedp.Screenshot(chromedp.ID("regressions")))
	must(err)
	must(chromedp.Do(ctx, chromedp.Navigate(pageURL), chromedp.WaitReady(chromedp.ID("history"))))
	// The per-turn workspace diff of the failed card: turn 2 opens to the text before
	// and after (the <script> in it is text) and the binary file by its hash.
	must(chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(`details[data-state="failed"] > summary`)),
		chromedp.Click(chromedp.CSS(`details[data-state="failed"] .wsdiff details.turn[data-turn="2"] > summary`)),
		chromedp.WaitVisible(chromedp.CSS(`details[data-state="failed"] .wsdiff details.turn[data-turn="2"][open] pre.after`)),
	))
	wsdiff, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll("details[data-state=failed] .wsdiff details.turn")).map(t => t.querySelector("summary").innerText + " | " + Array.from(t.querySelectorAll(".chg")).map(c => c.getAttribute("data-change") + " " + c.querySelector(".p").textContent + " [" + Array.from(c.querySelectorAll("pre")).map(p => p.textContent.trim().replace(/\n/g, "/")).join(" ~ ") + "] " + c.querySelectorAll(".meta")[c.querySelectorAll(".meta").length-1].textContent).join("; "))`))
	must(err)
	wsShot, err := chromedp.Run(ctx, chromedp.Screenshot(chromedp.CSS(`details[data-state="failed"] .wsdiff`)))
	must(err)
	must(chromedp.Do(ctx, chromedp.EmulateViewport(390, 844), chromedp.Navigate(pageURL), chromedp.WaitReady(chromedp.ID("history"))))
	phoneShot, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	must(err)
	// At phone width the regression list and a card's history strip fit the screen.
	phoneFit, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(function(){var r=document.getElementById("regressions").getBoundingClientRect(); var h=document.querySelector("details.card[data-verdict=failed] .cellhist").getBoundingClientRect(); return [Math.round(r.right) <= 390, Math.round(h.right) <= 390, h.height > 0].join(",")})()`))
	must(err)
	phoneCardShot, err := chromedp.Run(ctx, chromedp.Screenshot(chromedp.CSS(`details.card[data-verdict=failed] summary`)))
	must(err)

	dir := os.Getenv("AGENTPROOF_ARTIFACTS")
	if dir == "" {
		dir = t.TempDir()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	shotPath := filepath.Join(dir, "dashboard.png")
	if err := os.WriteFile(shotPath, shot, 0o644); err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string][]byte{"dashboard-failed-card.png": cardShot, "dashboard-top.png": topShot, "dashboard-history.png": historyShot, "dashboard-phone.png": phoneShot, "dashboard-transcript.png": transcriptShot, "dashboard-phone-card.png": phoneCardShot, "dashboard-workspace-diff.png": wsShot, "dashboard-first-run.png": firstShot} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("screenshots in %s: dashboard.png, dashboard-top.png, dashboard-failed-card.png, dashboard-history.png, dashboard-phone.png and dashboard-phone-card.png (390 px wide), dashboard-transcript.png, dashboard-workspace-diff.png, dashboard-first-run.png", dir)

	mu.Lock()
	defer mu.Unlock()
	if len(problems) > 0 {
		t.Errorf("console errors or warnings: %q", problems)
	}
	for _, r := range requests {
		if r != pageURL && r != firstURL && !strings.HasPrefix(r, "data:") {
			t.Errorf("network request to %q", r)
		}
	}
	// The test catalog's calibration suite has 2 cells and core 3 (wrong has no Daytona).
	if cards != 5 {
		t.Errorf("%d cards, want 5", cards)
	}
	if failedOpen != 1 {
		t.Errorf("%d failed cards open, want 1", failedOpen)
	}
	if len(matcherRows) != 2 || !strings.HasPrefix(matcherRows[0], "failed | message_exact") || !strings.Contains(matcherRows[0], `"><img src=x onerror=alert(2)>`) || !strings.HasPrefix(matcherRows[1], "passed | issue_status") {
		t.Errorf("matcher table rows: %q", matcherRows)
	}
	if shownBefore != 3 || shownAfter != 4 || shownText != "4 of 4 campaigns shown" {
		t.Errorf("partial toggle: %d rows before, %d after, %q", shownBefore, shownAfter, shownText)
	}
	if len(triage) != 2 || !strings.HasPrefix(triage[0], "failed core.reference.daytona.message-marker | candidate_failure; matcher message_exa") ||
		!strings.Contains(triage[0], " | core/reference/daytona/message-marker/attempt-1/") ||
		!strings.HasPrefix(triage[1], "inconclusive core.wrong.local.message-marker | permanent_infrastructure; no result.json") || !strings.HasSuffix(triage[1], " | -") {
		t.Errorf("needs attention: %q", triage)
	}
	if !strings.HasPrefix(cardReason, "candidate_failure; matcher message_exact failed") {
		t.Errorf("the failed card's summary shows %q, want its reason", cardReason)
	}
	if filtered != "failed" || cellShown != "1 of 5 cells shown" {
		t.Errorf("#verdict=failed shows cards %q (%q), want the failed one", filtered, cellShown)
	}
	if len(transcript) != 4 || !strings.HasPrefix(transcript[0], "step user | ") || !strings.Contains(transcript[0], "PAPERCLIP_E2E_OK_abc") ||
		!strings.HasPrefix(transcript[1], "step agent | ") || !strings.Contains(transcript[1], `call finish_task item_1`) || !strings.Contains(transcript[1], `"><img src=x onerror=alert(3)>`) ||
		!strings.Contains(transcript[1], "28,051 in / 20 out tokens") || !strings.Contains(transcript[2], "error of item_2") || !strings.Contains(transcript[2], "result cut here: 4500 bytes in all") {
		t.Errorf("transcript steps: %q", transcript)
	}
	if !strings.Contains(transcriptHead, "run run-day-1 · codex-exec-json · 4 steps · 2 tool calls") || !strings.Contains(transcriptHead, "partial") || transcriptImgs != 0 {
		t.Errorf("transcript summary %q, %d img/script elements inside", transcriptHead, transcriptImgs)
	}
	if len(regressions) != 2 || !strings.HasPrefix(regressions[0], " calibration: latest green camp-1") ||
		!strings.HasPrefix(regressions[1], "regressed core: latest green camp-green · 1 regressed · core.reference.daytona.message-marker (passed → failed)") {
		t.Errorf("regressions list: %q", regressions)
	}
	const firstNote = "2 suites: no earlier green campaign of this suite definition"
	if firstClosed != "1 | "+firstNote+" | false | calibration:false,core:false" || firstOpen != "1 | "+firstNote+" | true | calibration:true,core:true" {
		t.Errorf("first campaign's regressions list: closed %q, opened %q", firstClosed, firstOpen)
	}
	if badge != "regressed since camp-green (latest green) | regressed since camp-green (latest green)" {
		t.Errorf("regression marks on the failed card and its triage entry: %q", badge)
	}
	if strip != "camp-green: passed, camp-0: failed (suite definition changed), camp-2: failed (suite definition changed) | 2 | passed → failed in camp-2" {
		t.Errorf("the failed card's history strip: %q", strip)
	}
	if len(wsdiff) != 2 || wsdiff[0] != "Turn 1 · 2 changed: 2 added | added notes.md [# plan/<script>alert(3)</script>] after: 27 bytes · sha256 "+strings.Repeat("a", 64)+"; added out.bin [] after: 4 bytes · sha256 "+strings.Repeat("b", 64) ||
		wsdiff[1] != "Turn 2 · 2 changed: 1 modified, 1 removed | modified notes.md [# plan/<script>alert(3)</script> ~ # done/OK_n3] after: 12 bytes · sha256 "+strings.Repeat("c", 64)+"; removed out.bin [] after: absent" {
		t.Errorf("workspace diff:\n%s", strings.Join(wsdiff, "\n"))
	}
	if phoneFit != "true,true,true" {
		t.Errorf("at 390 px the regressions list and the history strip do not fit (right edge within 390, strip drawn): %s", phoneFit)
	}
	if hash != "#verdict=inconclusive&class=permanent_infrastructure" || filtered2 != "inconclusive" {
		t.Errorf("after choosing inconclusive and permanent_infrastructure: hash %q, cards %q", hash, filtered2)
	}
}

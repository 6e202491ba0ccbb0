package match

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"gotest.tools/v3/golden"

	"github.com/agentproof/agentproof/canonjson"
)

type state int

const (
	pass state = iota
	fail
	notReached
)

func (s state) String() string { return [...]string{"pass", "fail", "notReached"}[s] }

func stateOf(o Outcome) state {
	switch {
	case o.NotReached:
		return notReached
	case o.Passed:
		return pass
	}
	return fail
}

// msg is an observation holding only a message.
func msg(s string) *Observation { return &Observation{Message: s, HasMessage: true} }

// full is an observation with every kind of evidence, for the non-message kinds.
// planObs is an observation of a two-step plan with one approval in status.
func planObs(status string) *Observation {
	return &Observation{JSON: json.RawMessage(`{"documents":[{"key":"plan","latestRevisionId":"rev-1","revisions":[{"id":"rev-1","body":"1. a\n2. b\n"}]}],` +
		`"interactions":[],"approvals":[{"id":"approval-1","status":"` + status + `","targetRevisionId":"rev-1"}]}`)}
}

// blockerObs is a blocker-guidance observation whose task is assigned to assignee.
func blockerObs(assignee string) *Observation {
	return &Observation{JSON: json.RawMessage(`{"issue":{"id":"t","status":"done","assigneeActorId":"` + assignee + `"},` +
		`"comments":[{"id":"c1","authorActorId":"worker","createdAt":"1"},{"id":"c2","authorActorId":null,"createdAt":"2"}],` +
		`"company":{"agentId":"worker","managerId":"manager","actors":[{"id":"worker"},{"id":"manager"}],"tasks":[{"id":"t"}],` +
		`"runs":[{"id":"r1","actorId":"worker","taskId":"t","status":"succeeded","wakeReason":"issue_assigned","openedAt":"0"},` +
		`{"id":"r2","actorId":"worker","taskId":"t","status":"succeeded","wakeReason":"issue_commented","openedAt":"2"}]}}`)}
}

func full() *Observation {
	return &Observation{
		Message:     "PAPERCLIP_E2E_OK_7",
		HasMessage:  true,
		Turns:       []string{"turn one PAPERCLIP_E2E_WARM_T1_7", "PAPERCLIP\\_E2E\\_WARM\\_T2\\_7\r\n"},
		IssueStatus: "done",
		RunStatus:   "succeeded",
		RuntimeMode: "native",
		Environment: "local",
		RuntimeFacts: []map[string]string{
			{RuntimeDriver: "exec:codex", RuntimeCLIName: "codex", RuntimeCLIVersion: "0.171.0", RuntimeBinarySHA256: strings.Repeat("ab", 32)},
			{RuntimeDriver: "exec:codex", RuntimeCLIName: "codex", RuntimeCLIVersion: "0.171.0", RuntimeBinarySHA256: strings.Repeat("ab", 32)},
		},
		HasRuntimeFacts: true,
		Files: map[string][]byte{
			"daytona-warm-7.txt": []byte("T1-7\nT2-7\nT3-7\n"),
			"dir/unicode.txt":    []byte("héllo  wörld\r\n"),
			"decomposed.txt":     []byte("cafe\u0301 ﬁle\n"),
			"empty.txt":          {},
		},
		HasWorkspaceSnapshot: true,
		Artifacts: []Artifact{
			{Name: "final-state.png", MimeType: "image/png", SHA256: strings.Repeat("ab", 32), ByteSize: 1024},
			{Name: "server.log", MimeType: "text/plain", ByteSize: 10},
		},
		HasArtifacts: true,
		JSON: []byte(`{"issue":{"status":"done","title":"Rotate key"},"runs":[{"status":"succeeded","n":1.0},{"status":"failed","n":2}],` +
			`"interactions":[],"documents":{"plan":{"revision":2,"steps":["a","b","c"],"0":"zero"}}}`),
	}
}

func withoutJSON(o *Observation) *Observation { o.JSON = nil; return o }

// emptySHA is the SHA-256 of no bytes.
const emptySHA = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

var homeBinary = []byte{0, 0xff, 0xfe, 'b', 0, 0x80}

func shaOf(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// withHome adds a downloaded agent home: an instructions file and a binary.
func withHome(o *Observation) *Observation {
	o.HasHomeFiles = true
	o.HomeFiles = map[string][]byte{"AGENTS.md": []byte("nonce-7\n"), "bin/blob.bin": homeBinary}
	return o
}

// withDownload adds artifact out.bin registered as registered and downloaded as got.
func withDownload(o *Observation, registered, got []byte) *Observation {
	o.Artifacts = append(o.Artifacts, Artifact{Name: "out.bin", MimeType: "application/octet-stream", SHA256: shaOf(registered),
		ByteSize: int64(len(registered)), Downloaded: true, Content: got})
	return o
}
func withoutSnapshot(o *Observation) *Observation {
	o.HasWorkspaceSnapshot, o.Files = false, nil
	return o
}
func withoutArtifacts(o *Observation) *Observation {
	o.HasArtifacts, o.Artifacts = false, nil
	return o
}
func withJSON(o *Observation, doc string) *Observation { o.JSON = []byte(doc); return o }
func withStatus(o *Observation, issue, run string) *Observation {
	o.IssueStatus, o.RunStatus = issue, run
	return o
}

type evalCase struct {
	name string
	spec Spec
	obs  *Observation
	want state
}

var evalCases = []evalCase{
	// message_exact
	{"exact/pass", Spec{Kind: KindMessageExact, Expected: "PAPERCLIP_E2E_OK_7"}, msg("PAPERCLIP_E2E_OK_7"), pass},
	{"exact/normalised both sides", Spec{Kind: KindMessageExact, Expected: "  a\\_b \t c "}, msg("a_b  c\r\n"), pass},
	{"exact/markdown escaped marker", Spec{Kind: KindMessageExact, Expected: "PAPERCLIP_E2E_OK_7"}, msg(`PAPERCLIP\_E2E\_OK\_7`), pass},
	{"exact/fail extra text", Spec{Kind: KindMessageExact, Expected: "PAPERCLIP_E2E_OK_7"}, msg("Done: PAPERCLIP_E2E_OK_7"), fail},
	{"exact/newline is not space", Spec{Kind: KindMessageExact, Expected: "a b"}, msg("a\nb"), fail},
	{"exact/empty message observed", Spec{Kind: KindMessageExact, Expected: ""}, msg(""), pass},
	{"exact/empty message fails", Spec{Kind: KindMessageExact, Expected: "x"}, msg(""), fail},
	{"exact/unicode", Spec{Kind: KindMessageExact, Expected: "héllo wörld ✓"}, msg("\u00a0héllo\t wörld ✓\ufeff"), pass},
	{"exact/case sensitive", Spec{Kind: KindMessageExact, Expected: "ok"}, msg("OK"), fail},
	{"exact/no message", Spec{Kind: KindMessageExact, Expected: "x"}, &Observation{}, notReached},
	// Unicode: NFC by default on both sides; normalize none|nfkc; failures name the
	// characters outside printable ASCII the sides differ in.
	{"exact/nfc composes by default", Spec{Kind: KindMessageExact, Expected: "café"}, msg("cafe\u0301"), pass},
	{"exact/nfc expected decomposed", Spec{Kind: KindMessageExact, Expected: "cafe\u0301"}, msg("café"), pass},
	{"exact/normalize none keeps code points", Spec{Kind: KindMessageExact, Expected: "café", Normalize: NormalizeNone}, msg("cafe\u0301"), fail},
	{"exact/no-break space named", Spec{Kind: KindMessageExact, Expected: "hello, world"}, msg("hello,\u00a0world"), fail},
	{"exact/nfkc folds no-break space", Spec{Kind: KindMessageExact, Expected: "hello, world", Normalize: NormalizeNFKC}, msg("hello,\u00a0world"), pass},
	{"exact/nfkc folds ligature and full width", Spec{Kind: KindMessageExact, Expected: "file OK", Normalize: NormalizeNFKC}, msg("ﬁle ＯＫ"), pass},
	{"exact/homoglyph named", Spec{Kind: KindMessageExact, Expected: "paypal"}, msg("p\u0430ypal"), fail},
	{"exact/ascii difference has no hint", Spec{Kind: KindMessageExact, Expected: "PAPERCLIP_OK_1"}, msg("PAPERCLIP_OK_2"), fail},
	{"exact/nil observation", Spec{Kind: KindMessageExact, Expected: "x"}, nil, notReached},
	// message_contains
	{"contains/pass", Spec{Kind: KindMessageContains, Expected: "E2E_OK_7"}, msg("Done. PAPERCLIP\\_E2E\\_OK\\_7."), pass},
	{"contains/fail", Spec{Kind: KindMessageContains, Expected: "E2E_OK_8"}, msg("PAPERCLIP_E2E_OK_7"), fail},
	{"contains/empty expected", Spec{Kind: KindMessageContains, Expected: ""}, msg(""), pass},
	{"contains/turn 2", Spec{Kind: KindMessageContains, Expected: "PAPERCLIP_E2E_WARM_T2_7", Turn: 2}, full(), pass},
	{"contains/turn 1 lacks T2", Spec{Kind: KindMessageContains, Expected: "PAPERCLIP_E2E_WARM_T2_7", Turn: 1}, full(), fail},
	{"contains/turn 3 missing", Spec{Kind: KindMessageContains, Expected: "x", Turn: 3}, full(), notReached},
	{"contains/zero-width space named", Spec{Kind: KindMessageContains, Expected: "PAPERCLIP_OK"}, msg("done: PAPER\u200bCLIP_OK"), fail},
	{"contains/nfc", Spec{Kind: KindMessageContains, Expected: "é"}, msg("cafe\u0301 au lait"), pass},
	{"occurrences/nfc", Spec{Kind: KindMessageOccurrences, Expected: "é", Count: intp(2)}, msg("e\u0301 and é"), pass},
	// message_occurrences
	{"occurrences/once", Spec{Kind: KindMessageOccurrences, Expected: "OK_7", Count: intp(1)}, msg("PAPERCLIP_E2E_OK_7"), pass},
	{"occurrences/twice fails once", Spec{Kind: KindMessageOccurrences, Expected: "OK_7", Count: intp(1)}, msg("OK_7 and OK_7"), fail},
	{"occurrences/overlapping counted once", Spec{Kind: KindMessageOccurrences, Expected: "aa", Count: intp(2)}, msg("aaaa a"), pass},
	{"occurrences/overlapping not 3", Spec{Kind: KindMessageOccurrences, Expected: "aa", Count: intp(3)}, msg("aaaa"), fail},
	{"occurrences/zero", Spec{Kind: KindMessageOccurrences, Expected: "ERROR", Count: intp(0)}, msg("all good"), pass},
	{"occurrences/empty expected counts 0", Spec{Kind: KindMessageOccurrences, Expected: "", Count: intp(0)}, msg("abc"), pass},
	{"occurrences/empty expected never 1", Spec{Kind: KindMessageOccurrences, Expected: "", Count: intp(1)}, msg("abc"), fail},
	{"occurrences/unicode", Spec{Kind: KindMessageOccurrences, Expected: "ü", Count: intp(2)}, msg("über über"), pass},
	{"occurrences/no message", Spec{Kind: KindMessageOccurrences, Expected: "x", Count: intp(0)}, &Observation{}, notReached},
	// message_regex
	{"regex/pass", Spec{Kind: KindMessageRegex, Pattern: `PC_H_\d+`}, msg("say PC\\_H\\_12 now"), pass},
	{"regex/unanchored fails", Spec{Kind: KindMessageRegex, Pattern: `^PC_H_\d+$`}, msg("x PC_H_12"), fail},
	{"regex/i flag", Spec{Kind: KindMessageRegex, Pattern: `done`, Flags: "i"}, msg("DONE"), pass},
	{"regex/no i flag", Spec{Kind: KindMessageRegex, Pattern: `done`}, msg("DONE"), fail},
	{"regex/m flag", Spec{Kind: KindMessageRegex, Pattern: `^b$`, Flags: "m"}, msg("a\nb\nc"), pass},
	{"regex/no m flag", Spec{Kind: KindMessageRegex, Pattern: `^b$`}, msg("a\nb\nc"), fail},
	{"regex/s flag", Spec{Kind: KindMessageRegex, Pattern: `a.b`, Flags: "s"}, msg("a\nb"), pass},
	{"regex/no s flag", Spec{Kind: KindMessageRegex, Pattern: `a.b`}, msg("a\nb"), fail},
	{"regex/sees normalised message", Spec{Kind: KindMessageRegex, Pattern: `^a b$`}, msg(" a \t b\r\n"), pass},
	{"regex/no message", Spec{Kind: KindMessageRegex, Pattern: `x`}, &Observation{}, notReached},
	// message_ordered
	{"ordered/pass", Spec{Kind: KindMessageOrdered, Expected: []any{"T1", "T2", "T3"}}, msg("T1 then T2 then T3"), pass},
	{"ordered/wrong order", Spec{Kind: KindMessageOrdered, Expected: []any{"T1", "T3", "T2"}}, msg("T1 then T2 then T3"), fail},
	{"ordered/reused text fails", Spec{Kind: KindMessageOrdered, Expected: []any{"abc", "bcd"}}, msg("abcd"), fail},
	{"ordered/repeated item needs two", Spec{Kind: KindMessageOrdered, Expected: []any{"x", "x"}}, msg("x"), fail},
	{"ordered/repeated item present twice", Spec{Kind: KindMessageOrdered, Expected: []any{"x", "x"}}, msg("xx"), pass},
	{"ordered/items normalised", Spec{Kind: KindMessageOrdered, Expected: []any{"WARM\\_T1", "WARM  T2"}}, msg("WARM_T1\r\nWARM\tT2"), pass},
	{"ordered/empty message", Spec{Kind: KindMessageOrdered, Expected: []any{"a"}}, msg(""), fail},
	{"ordered/no message", Spec{Kind: KindMessageOrdered, Expected: []any{"a"}}, &Observation{}, notReached},
	{"ordered/nfkc items", Spec{Kind: KindMessageOrdered, Expected: []any{"file", "done"}, Normalize: NormalizeNFKC}, msg("ﬁle is done"), pass},
	{"ordered/named at the offset in the message", Spec{Kind: KindMessageOrdered, Expected: []any{"T1", "hello world"}}, msg("T1 then hello\u00a0world"), fail},
	// issue_status, run_status
	{"issue status/pass", Spec{Kind: KindIssueStatus, Expected: "done"}, full(), pass},
	{"issue status/fail", Spec{Kind: KindIssueStatus, Expected: "done"}, withStatus(full(), "in_review", "succeeded"), fail},
	{"issue status/not observed", Spec{Kind: KindIssueStatus, Expected: "done"}, withStatus(full(), "", ""), notReached},
	{"run status/pass", Spec{Kind: KindRunStatus, Expected: "succeeded"}, full(), pass},
	{"run status/fail", Spec{Kind: KindRunStatus, Expected: "succeeded"}, withStatus(full(), "done", "failed"), fail},
	{"run status/case sensitive", Spec{Kind: KindRunStatus, Expected: "Succeeded"}, full(), fail},
	{"run status/not observed", Spec{Kind: KindRunStatus, Expected: "succeeded"}, &Observation{}, notReached},
	// runtime_mode, environment
	{"runtime mode/pass", Spec{Kind: KindRuntimeMode, Expected: "native"}, full(), pass},
	{"runtime mode/fail", Spec{Kind: KindRuntimeMode, Expected: "legacy"}, full(), fail},
	{"runtime mode/not observed", Spec{Kind: KindRuntimeMode, Expected: "legacy"}, msg("x"), notReached},
	{"environment/pass", Spec{Kind: KindEnvironment, Expected: "local"}, full(), pass},
	{"environment/fail", Spec{Kind: KindEnvironment, Expected: "daytona"}, full(), fail},
	{"environment/not observed", Spec{Kind: KindEnvironment, Expected: "local"}, msg("x"), notReached},
	// runtime_metadata: every run must match every key
	{"runtime metadata/pass", Spec{Kind: KindRuntimeMetadata, Expected: map[string]any{RuntimeCLIName: "codex", RuntimeCLIVersion: "0.171.0"}}, full(), pass},
	{"runtime metadata/other binary", Spec{Kind: KindRuntimeMetadata, Expected: map[string]any{RuntimeBinarySHA256: strings.Repeat("cd", 32)}}, full(), fail},
	{"runtime metadata/one run differs", Spec{Kind: KindRuntimeMetadata, Expected: map[string]any{RuntimeDriver: "exec:codex"}}, func() *Observation {
		o := full()
		o.RuntimeFacts[1] = map[string]string{RuntimeDriver: "exec:opencode"}
		return o
	}(), fail},
	{"runtime metadata/key not recorded", Spec{Kind: KindRuntimeMetadata, Expected: map[string]any{RuntimeProvider: "scripted"}}, full(), notReached},
	{"runtime metadata/mismatch beats unrecorded", Spec{Kind: KindRuntimeMetadata, Expected: map[string]any{RuntimeProvider: "scripted", RuntimeCLIVersion: "9.9.9"}}, full(), fail},
	// plan_revisions: the plan document's revisions and the decisions targeting them
	{"plan revisions/pass", Spec{Kind: KindPlanRevisions, Expected: []any{map[string]any{"steps": 2, "outcome": "approved"}}}, planObs("approved"), pass},
	{"plan revisions/pending", Spec{Kind: KindPlanRevisions, Expected: []any{map[string]any{"steps": 2, "outcome": "approved"}}}, planObs("pending"), fail},
	{"plan revisions/no json", Spec{Kind: KindPlanRevisions, Expected: []any{map[string]any{"steps": 2, "outcome": "approved"}}}, msg("x"), notReached},
	// blocker_guidance: question, human answer, continuation, no manager run (blocker_test.go has the rest)
	{"process identity/warm: one process", Spec{Kind: KindProcessIdentity, SamePIDAcrossTurns: ptrBool(true)}, procObs(pi(41, 900), pi(41, 900), pi(41, 900)), pass},
	{"process identity/warm: a new process", Spec{Kind: KindProcessIdentity, SamePIDAcrossTurns: ptrBool(true)}, procObs(pi(41, 900), pi(42, 950), pi(41, 900)), fail},
	{"process identity/warm: pid reused", Spec{Kind: KindProcessIdentity, SamePIDAcrossTurns: ptrBool(true)}, procObs(pi(41, 900), pi(41, 977)), fail},
	{"process identity/warm: one run", Spec{Kind: KindProcessIdentity, SamePIDAcrossTurns: ptrBool(true)}, procObs(pi(41, 900)), notReached},
	{"process identity/unrecorded", Spec{Kind: KindProcessIdentity, SamePIDAcrossTurns: ptrBool(true)}, procObs(pi(41, 900), pi(0, 0)), notReached},
	{"process identity/not collected", Spec{Kind: KindProcessIdentity, SamePIDAcrossTurns: ptrBool(false)}, msg("x"), notReached},
	{"process identity/per turn: own processes", Spec{Kind: KindProcessIdentity, SamePIDAcrossTurns: ptrBool(false)}, procObs(pi(41, 900), pi(42, 950), pi(43, 990)), pass},
	{"process identity/per turn: one shared", Spec{Kind: KindProcessIdentity, SamePIDAcrossTurns: ptrBool(false)}, procObs(pi(41, 900), pi(42, 950), pi(41, 900)), fail},
	{"no mutation/untouched", Spec{Kind: KindNoMutation, Path: "proof.txt"}, watchObs(RunWatch{Observed: true, Complete: true, Events: []WatchEvent{{Op: "create", Path: "other.txt"}}}), pass},
	{"no mutation/written and deleted", Spec{Kind: KindNoMutation, Path: "proof.txt"}, watchObs(RunWatch{Observed: true, Complete: true, Events: []WatchEvent{{Op: "create", Path: "proof.txt"}, {Op: "delete", Path: "proof.txt"}}}), fail},
	{"no mutation/below a directory", Spec{Kind: KindNoMutation, Path: "out"}, watchObs(RunWatch{Observed: true, Complete: true, Events: []WatchEvent{{Op: "create", Path: "out/x"}}}), fail},
	{"no mutation/prefix is not below", Spec{Kind: KindNoMutation, Path: "out"}, watchObs(RunWatch{Observed: true, Complete: true, Events: []WatchEvent{{Op: "create", Path: "outer"}}}), pass},
	{"no mutation/touched in an incomplete watch", Spec{Kind: KindNoMutation, Path: "proof.txt"}, watchObs(RunWatch{Observed: true, Events: []WatchEvent{{Op: "write", Path: "proof.txt"}}}), fail},
	{"no mutation/incomplete", Spec{Kind: KindNoMutation, Path: "proof.txt"}, watchObs(RunWatch{Observed: true}), notReached},
	{"no mutation/a run not watched", Spec{Kind: KindNoMutation, Path: "proof.txt"}, watchObs(RunWatch{Observed: true, Complete: true}, RunWatch{}), notReached},
	{"no mutation/not collected", Spec{Kind: KindNoMutation, Path: "proof.txt"}, msg("x"), notReached},
	// permission_order: the write came after the approval of the permission for it.
	{"permission order/written after the approval", Spec{Kind: KindPermissionOrder, Path: "proof.txt"}, orderObs(permWrite("approved", "/w/proof.txt", "10:00:01.000000"), ev("create", "proof.txt", "10:00:01.000200")), pass},
	{"permission order/codex: the command names it", Spec{Kind: KindPermissionOrder, Path: "proof.txt"}, orderObs(`{"id":"p1","status":"approved","kind":"execute","title":"printf '%s' 'x' > '/w/proof.txt'","createdAt":"2026-12-06T10:00:00.500000Z","resolvedAt":"2026-12-06T10:00:01.000000Z"}`, ev("create", "proof.txt", "10:00:01.100000")), pass},
	{"permission order/written before asking", Spec{Kind: KindPermissionOrder, Path: "proof.txt"}, orderObs(permWrite("approved", "/w/proof.txt", "10:00:01.000000"), ev("create", "proof.txt", "10:00:00.100000")), fail},
	{"permission order/approved a read, wrote the file", Spec{Kind: KindPermissionOrder, Path: "proof.txt"}, orderObs(permWrite("approved", "/w/notes.txt", "10:00:01.000000"), ev("create", "proof.txt", "10:00:02.000000")), fail},
	{"permission order/declined, written anyway", Spec{Kind: KindPermissionOrder, Path: "proof.txt"}, orderObs(permWrite("declined", "/w/proof.txt", "10:00:01.000000"), ev("create", "proof.txt", "10:00:02.000000")), fail},
	{"permission order/a longer name is not the file", Spec{Kind: KindPermissionOrder, Path: "proof.txt"}, orderObs(permWrite("approved", "/w/myproof.txt", "10:00:01.000000"), ev("create", "proof.txt", "10:00:02.000000")), fail},
	{"permission order/nothing written", Spec{Kind: KindPermissionOrder, Path: "proof.txt"}, orderObs(permWrite("approved", "/w/proof.txt", "10:00:01.000000")), fail},
	{"permission order/no time", Spec{Kind: KindPermissionOrder, Path: "proof.txt"}, orderObs(permWrite("approved", "/w/proof.txt", "10:00:01.000000"), WatchEvent{Op: "create", Path: "proof.txt"}), notReached},
	{"permission order/no permissions", Spec{Kind: KindPermissionOrder, Path: "proof.txt"}, watchObs(RunWatch{Observed: true, Complete: true, Events: []WatchEvent{ev("create", "proof.txt", "10:00:02.000000")}}), notReached},
	{"permission order/not watched", Spec{Kind: KindPermissionOrder, Path: "proof.txt"}, msg("x"), notReached},
	{"command/exit 0", Spec{Kind: KindCommand, Name: "tests", ExitCode: intp(0)}, verObs(vrun("tests", 0, "ok\n", nil)), pass},
	{"command/exit 1", Spec{Kind: KindCommand, Name: "tests", ExitCode: intp(0)}, verObs(vrun("tests", 1, "FAIL\n", nil)), fail},
	{"command/killed by its deadline", Spec{Kind: KindCommand, Name: "tests", ExitCode: intp(0)}, verObs(VerifierRun{Step: "tests", Started: true, TimedOut: true}), fail},
	{"command/output contains", Spec{Kind: KindCommand, Name: "tests", Expected: "PASS"}, verObs(vrun("tests", 0, "--- PASS\n", nil)), pass},
	{"command/output lacks", Spec{Kind: KindCommand, Name: "tests", Expected: "PASS"}, verObs(vrun("tests", 0, "--- FAIL\n", nil)), fail},
	{"command/regex", Spec{Kind: KindCommand, Name: "tests", Pattern: `^ok\s+\S+`, Flags: "m"}, verObs(vrun("tests", 0, "x\nok  \tmod\n", nil)), pass},
	{"command/report counts", Spec{Kind: KindCommand, Name: "tests", Tests: &TestsSpec{Failed: intp(0), MinPassed: intp(2)}}, verObs(vrun("tests", 0, "", &TestCounts{Format: "junit", Passed: 3})), pass},
	{"command/report failures", Spec{Kind: KindCommand, Name: "tests", Tests: &TestsSpec{Failed: intp(0)}}, verObs(vrun("tests", 1, "", &TestCounts{Format: "ctrf", Passed: 3, Failed: 1})), fail},
	{"command/too few passed", Spec{Kind: KindCommand, Name: "tests", Tests: &TestsSpec{MinPassed: intp(4)}}, verObs(vrun("tests", 0, "", &TestCounts{Format: "junit", Passed: 3})), fail},
	{"command/no report", Spec{Kind: KindCommand, Name: "tests", Tests: &TestsSpec{Failed: intp(0)}}, verObs(vrun("tests", 0, "", nil)), notReached},
	{"command/step not run", Spec{Kind: KindCommand, Name: "lint", ExitCode: intp(0)}, verObs(vrun("tests", 0, "", nil)), notReached},
	{"command/no verification", Spec{Kind: KindCommand, Name: "tests", ExitCode: intp(0)}, msg("x"), notReached},
	{"blocker guidance/pass", Spec{Kind: KindBlockerGuidance}, blockerObs("worker"), pass},
	{"blocker guidance/reassigned", Spec{Kind: KindBlockerGuidance}, blockerObs("manager"), fail},
	{"blocker guidance/no json", Spec{Kind: KindBlockerGuidance}, msg("x"), notReached},
	// chat_handoff (chat_test.go has the rest)
	{"chat handoff/pass", chatSpec, chatObs(nil), pass},
	{"chat handoff/no plan", chatSpec, chatObs(func(d map[string]any) { handoff(d)["planRevisionId"] = nil }), fail},
	{"chat handoff/no chat view", chatSpec, msg("x"), notReached},
	// task_title (title_test.go has the rest)
	{"task title/named", namingSpec, titleObs(titleFixture{}), pass},
	{"task title/no json fails", namingSpec, msg("x"), fail},
	{"runtime metadata/not observed", Spec{Kind: KindRuntimeMetadata, Expected: map[string]any{RuntimeCLIName: "codex"}}, msg("x"), notReached},
	// file_exists, file_exact, file_contains
	{"file exists/pass", Spec{Kind: KindFileExists, Path: "daytona-warm-7.txt"}, full(), pass},
	{"file exists/cleaned path", Spec{Kind: KindFileExists, Path: "./dir//unicode.txt"}, full(), pass},
	{"file exists/empty file exists", Spec{Kind: KindFileExists, Path: "empty.txt"}, full(), pass},
	{"file exists/missing file", Spec{Kind: KindFileExists, Path: "nope.txt"}, full(), fail},
	{"file exists/no snapshot", Spec{Kind: KindFileExists, Path: "daytona-warm-7.txt"}, withoutSnapshot(full()), notReached},
	{"file absent/pass", Spec{Kind: KindFileAbsent, Path: "nope.txt"}, full(), pass},
	{"file absent/file exists", Spec{Kind: KindFileAbsent, Path: "daytona-warm-7.txt"}, full(), fail},
	{"file absent/empty file exists", Spec{Kind: KindFileAbsent, Path: "empty.txt"}, full(), fail},
	{"file absent/no snapshot", Spec{Kind: KindFileAbsent, Path: "nope.txt"}, withoutSnapshot(full()), notReached},
	{"file exact/pass", Spec{Kind: KindFileExact, Path: "daytona-warm-7.txt", Expected: "T1-7\nT2-7\nT3-7\n"}, full(), pass},
	{"file exact/not normalised", Spec{Kind: KindFileExact, Path: "dir/unicode.txt", Expected: "héllo wörld"}, full(), fail},
	{"file exact/raw unicode", Spec{Kind: KindFileExact, Path: "dir/unicode.txt", Expected: "héllo  wörld\r\n"}, full(), pass},
	{"file exact/missing trailing newline", Spec{Kind: KindFileExact, Path: "daytona-warm-7.txt", Expected: "T1-7\nT2-7\nT3-7"}, full(), fail},
	{"file exact/missing file", Spec{Kind: KindFileExact, Path: "nope.txt", Expected: ""}, full(), fail},
	{"file exact/no snapshot", Spec{Kind: KindFileExact, Path: "a", Expected: ""}, withoutSnapshot(full()), notReached},
	{"file contains/pass", Spec{Kind: KindFileContains, Path: "daytona-warm-7.txt", Expected: "T2-7\n"}, full(), pass},
	{"file contains/fail", Spec{Kind: KindFileContains, Path: "daytona-warm-7.txt", Expected: "T4-7"}, full(), fail},
	{"file contains/raw spaces", Spec{Kind: KindFileContains, Path: "dir/unicode.txt", Expected: "o  w"}, full(), pass},
	{"file contains/missing file", Spec{Kind: KindFileContains, Path: "nope.txt", Expected: ""}, full(), fail},
	{"file contains/no snapshot", Spec{Kind: KindFileContains, Path: "a", Expected: ""}, withoutSnapshot(full()), notReached},
	{"file exact/nfc by default", Spec{Kind: KindFileExact, Path: "decomposed.txt", Expected: "café ﬁle\n"}, full(), pass},
	{"file exact/normalize none", Spec{Kind: KindFileExact, Path: "decomposed.txt", Expected: "café ﬁle\n", Normalize: NormalizeNone}, full(), fail},
	{"file contains/nfkc", Spec{Kind: KindFileContains, Path: "decomposed.txt", Expected: "café file", Normalize: NormalizeNFKC}, full(), pass},
	{"file contains/nfc keeps ligature", Spec{Kind: KindFileContains, Path: "decomposed.txt", Expected: "file"}, full(), fail},
	// artifact_exists
	{"artifact/by name", Spec{Kind: KindArtifactExists, Name: "server.log"}, full(), pass},
	{"artifact/name and type", Spec{Kind: KindArtifactExists, Name: "final-state.png", MimeType: "image/png"}, full(), pass},
	{"artifact/wrong type", Spec{Kind: KindArtifactExists, Name: "final-state.png", MimeType: "image/jpeg"}, full(), fail},
	{"artifact/missing", Spec{Kind: KindArtifactExists, Name: "failure.png"}, full(), fail},
	{"artifact/none collected yet observed", Spec{Kind: KindArtifactExists, Name: "x"}, &Observation{HasArtifacts: true}, fail},
	{"artifact/not collected", Spec{Kind: KindArtifactExists, Name: "server.log"}, withoutArtifacts(full()), notReached},
	// sha256, downloaded bytes and the agent home
	{"file exists/sha256", Spec{Kind: KindFileExists, Path: "empty.txt", SHA256: emptySHA}, full(), pass},
	{"file exists/wrong sha256", Spec{Kind: KindFileExists, Path: "daytona-warm-7.txt", SHA256: emptySHA}, full(), fail},
	{"file exact/text right but sha256 wrong", Spec{Kind: KindFileExact, Path: "daytona-warm-7.txt", Expected: "T1-7\nT2-7\nT3-7\n", SHA256: emptySHA}, full(), fail},
	{"home/binary by sha256", Spec{Kind: KindFileExists, Path: "bin/blob.bin", Source: SourceAgentHome, SHA256: shaOf(homeBinary)}, withHome(full()), pass},
	{"home/binary altered", Spec{Kind: KindFileExists, Path: "bin/blob.bin", Source: SourceAgentHome, SHA256: shaOf(append([]byte{1}, homeBinary...))}, withHome(full()), fail},
	{"home/instructions exact", Spec{Kind: KindFileExact, Path: "AGENTS.md", Source: SourceAgentHome, Expected: "nonce-7\n"}, withHome(full()), pass},
	{"home/not the workspace", Spec{Kind: KindFileExists, Path: "daytona-warm-7.txt", Source: SourceAgentHome}, withHome(full()), fail},
	{"home/not downloaded", Spec{Kind: KindFileExists, Path: "AGENTS.md", Source: SourceAgentHome}, full(), notReached},
	{"home/workspace by default", Spec{Kind: KindFileExists, Path: "AGENTS.md"}, withHome(full()), fail},
	{"artifact/downloaded bytes equal", Spec{Kind: KindArtifactExists, Name: "out.bin", SHA256: shaOf(homeBinary)}, withDownload(full(), homeBinary, homeBinary), pass},
	{"artifact/download is not the registered bytes", Spec{Kind: KindArtifactExists, Name: "out.bin"}, withDownload(full(), homeBinary, []byte("other")), fail},
	{"artifact/sha256 of other bytes", Spec{Kind: KindArtifactExists, Name: "out.bin", SHA256: emptySHA}, withDownload(full(), homeBinary, homeBinary), fail},
	{"artifact/expected text", Spec{Kind: KindArtifactExists, Name: "out.bin", Expected: "readback nonce-7\n"}, withDownload(full(), []byte("readback nonce-7\n"), []byte("readback nonce-7\n")), pass},
	{"artifact/expected other text", Spec{Kind: KindArtifactExists, Name: "out.bin", Expected: "readback nonce-8\n"}, withDownload(full(), []byte("readback nonce-7\n"), []byte("readback nonce-7\n")), fail},
	{"artifact/sha256 needs the bytes", Spec{Kind: KindArtifactExists, Name: "server.log", SHA256: emptySHA}, full(), notReached},
	// encoding hex: the exact bytes of a binary, byte for byte
	{"home/binary exact hex", Spec{Kind: KindFileExact, Path: "bin/blob.bin", Source: SourceAgentHome, Expected: "00fffe620080", Encoding: EncodingHex}, withHome(full()), pass},
	{"home/binary one byte off", Spec{Kind: KindFileExact, Path: "bin/blob.bin", Source: SourceAgentHome, Expected: "00fffe620081", Encoding: EncodingHex}, withHome(full()), fail},
	{"home/binary a prefix is not equal", Spec{Kind: KindFileExact, Path: "bin/blob.bin", Source: SourceAgentHome, Expected: "00fffe62", Encoding: EncodingHex}, withHome(full()), fail},
	{"home/text as hex", Spec{Kind: KindFileExact, Path: "AGENTS.md", Source: SourceAgentHome, Expected: "6e6f6e63652d370a", Encoding: EncodingHex}, withHome(full()), pass},
	{"home/hex not downloaded", Spec{Kind: KindFileExact, Path: "bin/blob.bin", Source: SourceAgentHome, Expected: "00", Encoding: EncodingHex}, full(), notReached},
	{"artifact/exact hex bytes", Spec{Kind: KindArtifactExists, Name: "out.bin", Expected: "00fffe620080", Encoding: EncodingHex}, withDownload(full(), homeBinary, homeBinary), pass},
	{"artifact/other hex bytes", Spec{Kind: KindArtifactExists, Name: "out.bin", Expected: "00fffe620081", Encoding: EncodingHex}, withDownload(full(), homeBinary, homeBinary), fail},
	{"artifact/hex needs the bytes", Spec{Kind: KindArtifactExists, Name: "server.log", Expected: "00", Encoding: EncodingHex}, full(), notReached},
	// json_path
	{"json path/rfc", Spec{Kind: KindJSONPath, Path: "$.issue.status", Expected: "done"}, full(), pass},
	{"json path/legacy", Spec{Kind: KindJSONPath, Path: "runs.1.status", Expected: "failed"}, full(), pass},
	{"json path/legacy numeric member", Spec{Kind: KindJSONPath, Path: "documents.plan.0", Expected: "zero"}, full(), pass},
	{"json path/canonical number", Spec{Kind: KindJSONPath, Path: "$.runs[0].n", Expected: 1}, full(), pass},
	{"json path/object key order ignored", Spec{Kind: KindJSONPath, Path: "$.issue", Expected: map[string]any{"title": "Rotate key", "status": "done"}}, full(), pass},
	{"json path/array", Spec{Kind: KindJSONPath, Path: "documents.plan.steps", Expected: []any{"a", "b", "c"}}, full(), pass},
	{"json path/array order matters", Spec{Kind: KindJSONPath, Path: "documents.plan.steps", Expected: []any{"c", "b", "a"}}, full(), fail},
	{"json path/type matters", Spec{Kind: KindJSONPath, Path: "$.documents.plan.revision", Expected: "2"}, full(), fail},
	{"json path/wrong value", Spec{Kind: KindJSONPath, Path: "$.issue.status", Expected: "todo"}, full(), fail},
	{"json path/no node", Spec{Kind: KindJSONPath, Path: "$.issue.missing", Expected: "done"}, full(), fail},
	{"json path/two nodes", Spec{Kind: KindJSONPath, Path: "$.runs[*].status", Expected: "succeeded"}, full(), fail},
	{"json path/filter selects one", Spec{Kind: KindJSONPath, Path: "$.runs[?@.status=='failed'].n", Expected: 2}, full(), pass},
	{"json path/null value", Spec{Kind: KindJSONPath, Path: "$.a", Expected: false}, withJSON(full(), `{"a":null}`), fail},
	{"json path/no document", Spec{Kind: KindJSONPath, Path: "$.a", Expected: 1}, withoutJSON(full()), notReached},
	{"json path/bad document", Spec{Kind: KindJSONPath, Path: "$.a", Expected: 1}, withJSON(full(), `{"a":`), notReached},
	// json_schema
	{"json schema/pass", Spec{Kind: KindJSONSchema, Schema: map[string]any{
		"type": "object", "required": []any{"issue", "runs"},
		"properties": map[string]any{"runs": map[string]any{"type": "array", "minItems": 2}},
	}}, full(), pass},
	{"json schema/fail lists errors", Spec{Kind: KindJSONSchema, Schema: map[string]any{
		"type": "object", "required": []any{"missing"},
		"properties": map[string]any{
			"issue": map[string]any{"properties": map[string]any{"status": map[string]any{"const": "todo"}}},
			"runs":  map[string]any{"maxItems": 1},
		},
	}}, full(), fail},
	{"json schema/2020-12 prefixItems", Spec{Kind: KindJSONSchema, Schema: map[string]any{
		"prefixItems": []any{map[string]any{"type": "string"}}, "items": false,
	}}, withJSON(full(), `["a", 1]`), fail},
	{"json schema/format asserted", Spec{Kind: KindJSONSchema, Schema: map[string]any{"properties": map[string]any{
		"email": map[string]any{"format": "email"}, "when": map[string]any{"format": "date-time"}, "id": map[string]any{"format": "uuid"},
	}}}, withJSON(full(), `{"email":"not an address","when":"yesterday","id":"123"}`), fail},
	{"json schema/format satisfied", Spec{Kind: KindJSONSchema, Schema: map[string]any{"properties": map[string]any{
		"email": map[string]any{"format": "email"}, "when": map[string]any{"format": "date-time"}, "id": map[string]any{"format": "uuid"},
	}}}, withJSON(full(), `{"email":"a@example.com","when":"2026-12-01T12:00:00Z","id":"0b9e5b4a-3f1c-4e1a-9a57-1d6f0c1e2b3a"}`), pass},
	{"json schema/null document", Spec{Kind: KindJSONSchema, Schema: map[string]any{"type": "null"}}, withJSON(full(), `null`), pass},
	{"json schema/no document", Spec{Kind: KindJSONSchema, Schema: true}, withoutJSON(full()), notReached},
}

func TestEvaluateKinds(t *testing.T) {
	t.Parallel()
	covered := map[Kind][3]bool{}
	var details strings.Builder
	for _, tc := range evalCases {
		m, err := Compile(tc.spec)
		if err != nil {
			t.Fatalf("%s: Compile: %v", tc.name, err)
		}
		o := m.Evaluate(tc.obs)
		if got := stateOf(o); got != tc.want {
			t.Errorf("%s: %s, want %s (detail %s)", tc.name, got, tc.want, o.Detail)
		}
		if o.Kind != tc.spec.Kind {
			t.Errorf("%s: outcome kind %q", tc.name, o.Kind)
		}
		if o.Passed && o.NotReached {
			t.Errorf("%s: both passed and notReached", tc.name)
		}
		if len(o.Detail) > DetailLimit {
			t.Errorf("%s: detail is %d bytes", tc.name, len(o.Detail))
		}
		c := covered[tc.spec.Kind]
		c[tc.want] = true
		covered[tc.spec.Kind] = c
		fmt.Fprintf(&details, "%s\t%s\t%s\n", tc.name, stateOf(o), o.Detail)
	}
	for _, k := range Kinds() {
		c := covered[k]
		if !c[pass] || !c[fail] {
			t.Errorf("kind %s lacks a passing or a failing case", k)
		}
		if k != KindMessageExact && !c[notReached] && !c[fail] {
			t.Errorf("kind %s lacks cases", k)
		}
	}
	golden.Assert(t, details.String(), "details.golden")
}

func TestEvaluateOutcomes(t *testing.T) {
	t.Parallel()
	ms, err := CompileAll([]Spec{
		{Kind: KindMessageOccurrences, Expected: "aa", Count: intp(1)},
		{Kind: KindJSONPath, Path: "$.runs[*].status", Expected: "x"},
		{Kind: KindArtifactExists, Name: "server.log"},
		{Kind: KindFileExists, Path: "nope"},
	})
	if err != nil {
		t.Fatal(err)
	}
	obs := full()
	obs.Message = "aaaaa"
	got := Evaluate(ms, obs)
	want := []Outcome{
		{Kind: KindMessageOccurrences, Expected: 1, Observed: 2,
			Detail: `expected {"kind":"message_occurrences","expected":"aa","count":1}; observed 2`},
		{Kind: KindJSONPath, Expected: "x", Observed: mustObject(`selected`, 2, `nodes`, []any{
			mustObject(`path`, `$['runs'][0]['status']`, `value`, "succeeded"), mustObject(`path`, `$['runs'][1]['status']`, `value`, "failed")}),
			Detail: `expected {"kind":"json_path","expected":"x","path":"$.runs[*].status"}; observed {"selected":2,"nodes":[{"path":"$['runs'][0]['status']","value":"succeeded"},{"path":"$['runs'][1]['status']","value":"failed"}]}`},
		{Kind: KindArtifactExists, Passed: true, Expected: mustObject("name", "server.log"), Observed: obs.Artifacts, Detail: "matched"},
		{Kind: KindFileExists, Expected: "nope", Observed: false, Detail: `expected {"kind":"file_exists","path":"nope"}; observed false`},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("outcomes (-want +got):\n%s", diff)
	}
	var zero Matcher
	if o := zero.Evaluate(obs); o.Passed || o.NotReached || !strings.Contains(o.Detail, "not compiled") {
		t.Errorf("zero Matcher outcome %+v", o)
	}
}

func TestDetailBounded(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("wörd ", 5000) // 30 000 bytes, multi-byte runes
	cases := []Spec{
		{Kind: KindMessageExact, Expected: "short"},
		{Kind: KindMessageExact, Expected: long + "x"},
		{Kind: KindFileExact, Path: "f", Expected: long + "y"},
		{Kind: KindJSONSchema, Schema: map[string]any{"type": "string", "description": long}},
	}
	obs := msg(long)
	obs.HasWorkspaceSnapshot, obs.Files = true, map[string][]byte{"f": []byte(long)}
	obs.JSON = []byte(`{"a":"` + long + `"}`)
	for _, s := range cases {
		m, err := Compile(s)
		if err != nil {
			t.Fatal(err)
		}
		o := m.Evaluate(obs)
		if o.Passed || o.NotReached {
			t.Fatalf("%s: want failure, got %+v", s.Kind, o.Detail)
		}
		if len(o.Detail) > DetailLimit {
			t.Errorf("%s: detail %d bytes > %d", s.Kind, len(o.Detail), DetailLimit)
		}
		if !strings.HasPrefix(o.Detail, `expected {"kind":"`+string(s.Kind)) || !strings.Contains(o.Detail, "; observed ") {
			t.Errorf("%s: detail shape %.80q", s.Kind, o.Detail)
		}
		if !strings.Contains(o.Detail, truncMark) {
			t.Errorf("%s: truncated detail lacks the mark", s.Kind)
		}
		if !utf8.ValidString(o.Detail) {
			t.Errorf("%s: detail is not valid UTF-8", s.Kind)
		}
	}
	// A schema failure keeps its errors inside the bound: they come before the value.
	m, _ := Compile(Spec{Kind: KindJSONSchema, Schema: map[string]any{"required": []any{"b"}}})
	if o := m.Evaluate(obs); !strings.Contains(o.Detail, `"errors":["/: missing property 'b'"]`) {
		t.Errorf("schema errors not in detail: %.300s", o.Detail)
	}
}

func TestSecretsNeverInOutcome(t *testing.T) {
	t.Parallel()
	secret := "sk-proj-ABCDEFGHIJKLMNOP_q  r\"s\\t\u00e9"
	specs := []Spec{
		{Kind: KindMessageExact, Expected: "nope"},
		{Kind: KindMessageContains, Expected: secret + "!"},
		{Kind: KindMessageOrdered, Expected: []any{"a", secret, "zzz"}},
		{Kind: KindFileExact, Path: "f", Expected: "x"},
		{Kind: KindArtifactExists, Name: "other"},
		{Kind: KindJSONPath, Path: "$.k", Expected: "v"},
		{Kind: KindJSONSchema, Schema: map[string]any{"required": []any{"missing"}}},
		{Kind: KindIssueStatus, Expected: "done"},
	}
	obs := &Observation{
		Message:              "a token " + secret + " and " + Normalize(secret),
		HasMessage:           true,
		IssueStatus:          secret,
		Files:                map[string][]byte{"f": []byte("key=" + secret)},
		HasWorkspaceSnapshot: true,
		Artifacts:            []Artifact{{Name: "log-" + secret}},
		HasArtifacts:         true,
		JSON:                 []byte(fmt.Sprintf(`{"k":%q,%q:1}`, secret, secret)),
		Secrets:              []string{"", " " + secret + " ", "ABCDEFGHIJKLMNOP"},
	}
	ms, err := CompileAll(specs)
	if err != nil {
		t.Fatal(err)
	}
	forms := []string{secret, Normalize(secret), "ABCDEFGHIJKLMNOP", `q  r\"s\\t`, `q r\"s\\t`}
	for _, o := range Evaluate(ms, obs) {
		if o.Passed {
			t.Errorf("%s unexpectedly passed", o.Kind)
		}
		for _, f := range forms {
			if strings.Contains(o.Detail, f) {
				t.Errorf("%s detail contains secret form %q: %s", o.Kind, f, o.Detail)
			}
			for _, v := range []any{o.Expected, o.Observed} {
				if s := fmt.Sprintf("%v", v); strings.Contains(s, f) {
					t.Errorf("%s expected/observed contains secret form %q: %s", o.Kind, f, s)
				}
			}
		}
		if !strings.Contains(o.Detail, redaction) {
			t.Errorf("%s detail shows no redaction: %s", o.Kind, o.Detail)
		}
	}
}

func TestEvaluateConcurrentDeterministic(t *testing.T) {
	t.Parallel()
	specs := make([]Spec, 0, len(evalCases))
	for _, tc := range evalCases {
		specs = append(specs, tc.spec)
	}
	ms, err := CompileAll(specs)
	if err != nil {
		t.Fatal(err)
	}
	obs := full()
	obs.Secrets = []string{"Rotate key"}
	want := Evaluate(ms, obs)
	var wg sync.WaitGroup
	results := make([][]Outcome, 8)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = Evaluate(ms, obs)
		}()
	}
	wg.Wait()
	for i, got := range results {
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("goroutine %d differs (-first +this):\n%s", i, diff)
		}
	}
	for i, o := range want {
		if o.Kind != specs[i].Kind {
			t.Fatalf("outcome %d is for %s, matcher is %s", i, o.Kind, specs[i].Kind)
		}
	}
}

// mustObject builds a canonjson.Object from alternating keys and values.
func mustObject(kv ...any) any {
	var o canonjson.Object
	for i := 0; i < len(kv); i += 2 {
		o = append(o, canonjson.Member{Key: kv[i].(string), Value: kv[i+1]})
	}
	return o
}

func TestContainsLong(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("ab", 40)
	for _, tt := range []struct {
		s, sub string
		want   bool
	}{
		{"xx" + long + "yy", long, true},
		{"xx" + long[:70] + "yy", long, false},
		{strings.Repeat("a", 100) + "b", strings.Repeat("a", 40) + "b", true},
		{"short", "or", true},
		{"short", "", true},
		{"", long, false},
	} {
		if got := containsLong(tt.s, tt.sub); got != tt.want || got != strings.Contains(tt.s, tt.sub) {
			t.Errorf("containsLong(%q, %q) = %v, want %v", tt.s, tt.sub, got, tt.want)
		}
	}
}

func TestLongObservedIsBoundedAndRedactedAcrossTheCut(t *testing.T) {
	t.Parallel()
	secret := "Zq9Kx7Wm3Pv8Rt2Ly6Hn4Bs1Dc5Fg0Jk"
	long := strings.Repeat("x", DetailLimit-5) + secret + strings.Repeat("y", 10000)
	obs := &Observation{
		Message: long, HasMessage: true,
		Files: map[string][]byte{"big.bin": []byte(long)}, HasWorkspaceSnapshot: true,
		Secrets: []string{secret},
	}
	ms, err := CompileAll([]Spec{
		{Kind: KindMessageExact, Expected: "x"},
		{Kind: KindFileContains, Path: "big.bin", Expected: "yyy"},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range Evaluate(ms, obs) {
		s, ok := o.Observed.(string)
		if !ok {
			t.Fatalf("%s observed %T", o.Kind, o.Observed)
		}
		if len(s) > DetailLimit || !strings.HasSuffix(s, truncMark) {
			t.Errorf("%s observed is %d bytes, ends %q", o.Kind, len(s), s[max(0, len(s)-20):])
		}
		if strings.Contains(s, secret[:5]) || strings.Contains(o.Detail, secret[:5]) {
			t.Errorf("%s shows the start of a secret cut at the bound", o.Kind)
		}
	}
}

func TestNeedsJSONEscape(t *testing.T) {
	t.Parallel()
	for s, want := range map[string]bool{
		"plain-token_123": false, "héllo": false, "é\"": true, "a\\b": true, "a\nb": true, "\xff": true, "é\x01": true,
	} {
		if got := needsJSONEscape(s); got != want {
			t.Errorf("needsJSONEscape(%q) = %v, want %v", s, got, want)
		}
	}
}

// TestJSONPathFailureNamesPaths: a failed json_path lists every selected node with its
// RFC 9535 normalized path, not only its value.
func TestJSONPathFailureNamesPaths(t *testing.T) {
	t.Parallel()
	m, err := Compile(Spec{Kind: KindJSONPath, Path: "$..id", Expected: "x"})
	if err != nil {
		t.Fatal(err)
	}
	o := m.Evaluate(&Observation{JSON: []byte(`{"a":[{"id":"p"},{"b":{"id":"q"}}],"it's":{"id":7}}`)})
	for _, want := range []string{`"selected":3`, `{"path":"$['a'][0]['id']","value":"p"}`, `{"path":"$['a'][1]['b']['id']","value":"q"}`, `{"path":"$['it\\'s']['id']","value":7}`} {
		if o.Passed || !strings.Contains(o.Detail, want) {
			t.Errorf("detail %s lacks %s", o.Detail, want)
		}
	}
}

func TestSecretInNumberIsRedactedFromDetail(t *testing.T) {
	t.Parallel()
	m, err := Compile(Spec{Kind: KindJSONPath, Path: "$.n", Expected: 1})
	if err != nil {
		t.Fatal(err)
	}
	o := m.Evaluate(&Observation{JSON: []byte(`{"n":98765432101}`), Secrets: []string{"98765432101"}})
	if o.Passed || strings.Contains(o.Detail, "98765432101") || !strings.HasSuffix(o.Detail, `"value":`+redaction+`}]}`) {
		t.Errorf("detail %q", o.Detail)
	}
}

func ptrBool(b bool) *bool { return &b }

// verObs is an observation of verifier runs.
func verObs(runs ...VerifierRun) *Observation {
	return &Observation{Verifiers: runs, HasVerifiers: true}
}

// vrun is a verifier step that ran and exited with code.
func vrun(step string, code int, output string, report *TestCounts) VerifierRun {
	return VerifierRun{Step: step, Started: true, ExitCode: &code, Output: output, Report: report}
}

func pi(pid int, ticks uint64) ProcessIdentity { return ProcessIdentity{PID: pid, StartTicks: ticks} }

// procObs is an observation of runs carried out by the processes ps, in order.
func procObs(ps ...ProcessIdentity) *Observation {
	return &Observation{Processes: ps, HasProcesses: true}
}

// watchObs is an observation of runs whose workspace watches are ws, in order.
func watchObs(ws ...RunWatch) *Observation { return &Observation{Watches: ws, HasWatches: true} }

// orderObs is one complete watched run with events and the composite JSON holding one
// permission (its JSON).
func orderObs(perm string, events ...WatchEvent) *Observation {
	o := watchObs(RunWatch{Observed: true, Complete: true, Events: events})
	o.JSON = json.RawMessage(`{"permissions":[` + perm + `]}`)
	return o
}

// permWrite is a permission's JSON: an edit of location, status, resolved at the
// clock time resolved (created half a second before).
func permWrite(status, location, resolved string) string {
	return `{"id":"p1","status":"` + status + `","kind":"edit","title":"Write","locations":["` + location + `"],"createdAt":"2026-12-06T09:59:59.500000Z","resolvedAt":"2026-12-06T` + resolved + `Z"}`
}

// ev is a watch event at the clock time at (2026-12-06, UTC).
func ev(op, path, at string) WatchEvent {
	return WatchEvent{Op: op, Path: path, At: "2026-12-06T" + at + "Z"}
}

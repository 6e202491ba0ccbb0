package match

import (
	"strings"
	"syscall"
	"testing"
	"time"
)

// coreSet is the six-matcher terminal set most cases use: message_exact(marker),
// message_occurrences(marker, 1), issue_status, run_status, runtime_mode, environment.
func coreSet(b *testing.B, marker string) []Matcher {
	b.Helper()
	ms, err := CompileAll([]Spec{
		{Kind: KindMessageExact, Expected: marker},
		{Kind: KindMessageOccurrences, Expected: marker, Count: intp(1)},
		{Kind: KindIssueStatus, Expected: "done"},
		{Kind: KindRunStatus, Expected: "succeeded"},
		{Kind: KindRuntimeMode, Expected: "native"},
		{Kind: KindEnvironment, Expected: "local"},
	})
	if err != nil {
		b.Fatal(err)
	}
	return ms
}

// message64K returns a 64 KiB reply of prose lines ending with marker; when messy, the
// lines use CRLF, Markdown-escaped underscores and tab/space runs, so normalisation has
// to rewrite the message.
func message64K(marker string, messy bool) string {
	line := "The agent inspected the workspace, ran the checks and reported its result.\n"
	if messy {
		line = "The agent  inspected the\tworkspace, ran the checks and reported\\_its result.\r\n"
	}
	var sb strings.Builder
	for sb.Len() < 64*1024-len(line)-len(marker) {
		sb.WriteString(line)
	}
	sb.WriteString(marker)
	for sb.Len() < 64*1024 {
		sb.WriteByte('.')
	}
	return sb.String()
}

// BenchmarkEvaluateCoreSet evaluates the six-matcher terminal set against a 64 KiB
// message and reports sets/s (goal ≥ 20 000). "clean" needs no rewriting; "messy" makes
// normalisation rewrite the message; secrets adds four 64-byte secrets to redact. The
// message_exact matcher fails (the reply is more than the marker), so every iteration
// also renders a bounded failure detail.
func BenchmarkEvaluateCoreSet(b *testing.B) {
	const marker = "PAPERCLIP_E2E_OK_4242"
	secrets := []string{strings.Repeat("s1", 32), strings.Repeat("s2", 32), strings.Repeat("s3", 32), strings.Repeat("s4", 32)}
	for _, bc := range []struct {
		name    string
		messy   bool
		secrets []string
	}{
		{"clean", false, nil},
		{"messy", true, nil},
		{"clean+secrets", false, secrets},
	} {
		b.Run(bc.name, func(b *testing.B) {
			ms := coreSet(b, marker)
			obs := &Observation{
				Message: message64K(marker, bc.messy), HasMessage: true,
				IssueStatus: "done", RunStatus: "succeeded", RuntimeMode: "native", Environment: "local",
				Secrets: bc.secrets,
			}
			out := Evaluate(ms, obs)
			if out[0].Passed || !out[1].Passed || !out[2].Passed || !out[5].Passed {
				b.Fatalf("unexpected outcomes: %+v", out)
			}
			b.SetBytes(int64(len(obs.Message)))
			b.ReportAllocs()
			cpu0 := processCPU(b)
			for b.Loop() {
				Evaluate(ms, obs)
			}
			cpu := processCPU(b) - cpu0
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "sets/s")
			// CPU time is what the process itself spent (GC included), so it stays
			// meaningful when other work shares the machine; wall-clock sets/s does not.
			b.ReportMetric(float64(b.N)/cpu.Seconds(), "sets/cpu-s")
		})
	}
}

// processCPU returns the user plus system CPU time this process has used.
func processCPU(b *testing.B) time.Duration {
	b.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatalf("getrusage: %v", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

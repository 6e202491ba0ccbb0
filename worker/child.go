package worker

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/signal"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

var lifetimePattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[1-9][0-9]{0,8}$`) })

// ParseLifetime parses a fixture program's lifetime argument: it must match
// ^[1-9][0-9]{0,8}$ and is then capped at MaxChildLifetimeMS. It returns milliseconds, or
// an error naming the grammar.
func ParseLifetime(s string) (int64, error) {
	if !lifetimePattern().MatchString(s) {
		return 0, fmt.Errorf("lifetime %q must match ^[1-9][0-9]{0,8}$ (milliseconds)", clipText(s, 32))
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("lifetime %q: %w", s, err)
	}
	return min(v, MaxChildLifetimeMS), nil
}

// RunChild is the fixture program: `fixture-child <fixture>
// <lifetime-ms>`. It must run in a process of its own, because it changes that process's
// signal dispositions (SIGPIPE is ignored so a broken pipe is a write error; hang ignores
// SIGTERM). It returns the exit code the process must exit with:
//
//   - ExitUsage (64) for a wrong argument count, an unknown fixture or a bad lifetime;
//   - ExitParentLost (125) when stdin reaches end-of-file (the controller is gone or settled);
//   - ExitWatchdog (124) when the lifetime ends;
//   - pass: ExitPass once its output is written (or after FlushLimitMS regardless);
//   - fail: ExitFail likewise; hang: never exits by itself before the two above;
//   - noisy: writes forever, blocking when the reader does not keep up (back-pressure);
//   - ExitOutputError (74) when writing its output fails.
//
// Every fixture first prints a report: its name and lifetime, the names (never the
// values) of its environment variables, and the capabilities it denied itself.
func RunChild(args []string, stdin io.Reader, stdout, stderr io.Writer, environ []string) int {
	return runChild(args, stdin, stdout, stderr, environ, nil)
}

// runChild is RunChild; started, when set, is called once the arguments are valid and
// right before any fixture code runs (the guarded gate's start callback: it reports
// the payload record).
func runChild(args []string, stdin io.Reader, stdout, stderr io.Writer, environ []string, started func()) int {
	if len(args) != 2 {
		fmt.Fprintf(stderr, "usage: fixture-child <%s> <lifetime-ms>\n", strings.Join(Fixtures(), "|"))
		return ExitUsage
	}
	fixture := args[0]
	if !IsFixture(fixture) {
		fmt.Fprintf(stderr, "fixture-child: unknown fixture %q (want one of %s)\n", clipText(fixture, 32), strings.Join(Fixtures(), ", "))
		return ExitUsage
	}
	lifetime, err := ParseLifetime(args[1])
	if err != nil {
		fmt.Fprintf(stderr, "fixture-child: %v\n", err)
		return ExitUsage
	}
	if started != nil {
		started()
	}
	signal.Ignore(syscall.SIGPIPE)
	if fixture == "hang" {
		signal.Ignore(syscall.SIGTERM)
	}
	denied := denyNewPrivileges()

	done := make(chan int, 4)
	go func() {
		// stdin is never written by the worker: end-of-file (or an error) means the
		// controller settled or is gone.
		_, _ = io.Copy(io.Discard, stdin)
		done <- ExitParentLost
	}()
	watchdog := time.AfterFunc(time.Duration(lifetime)*time.Millisecond, func() { done <- ExitWatchdog })
	defer watchdog.Stop()

	report := childReport(fixture, lifetime, environ, denied)
	switch fixture {
	case "pass", "fail":
		code := ExitPass
		if fixture == "fail" {
			code = ExitFail
		}
		go func() {
			if _, err := io.WriteString(stdout, report); err != nil {
				done <- ExitOutputError
				return
			}
			if fixture == "fail" {
				if _, err := io.WriteString(stderr, "fixture fail: failing on purpose\n"); err != nil {
					done <- ExitOutputError
					return
				}
			}
			done <- code
		}()
		flush := time.AfterFunc(FlushLimitMS*time.Millisecond, func() { done <- code })
		defer flush.Stop()
	case "hang":
		go func() {
			if _, err := io.WriteString(stdout, report); err != nil {
				done <- ExitOutputError
			}
		}()
	case "noisy":
		go func() {
			if _, err := io.WriteString(stdout, report); err != nil {
				done <- ExitOutputError
				return
			}
			block := noisyBlock()
			for {
				// A blocking write is the back-pressure: noisy never buffers ahead.
				if _, err := stdout.Write(block); err != nil {
					done <- ExitOutputError
					return
				}
			}
		}()
	}
	return <-done
}

func childReport(fixture string, lifetime int64, environ []string, denied string) string {
	names := make([]string, 0, len(environ))
	for _, kv := range environ {
		k, _, _ := strings.Cut(kv, "=")
		names = append(names, k)
	}
	sort.Strings(names)
	return fmt.Sprintf("sf-fixture-child/1 fixture=%s lifetime-ms=%d\nenv names: %s\ndenied: %s\n",
		fixture, lifetime, strings.Join(names, " "), denied)
}

// denyNewPrivileges sets no_new_privs on the calling thread (threads it creates inherit
// it) and reports what /proc says, so the report states an observed fact.
func denyNewPrivileges() string {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	const prSetNoNewPrivs = 38
	if _, _, e := syscall.RawSyscall(syscall.SYS_PRCTL, prSetNoNewPrivs, 1, 0); e != 0 {
		return fmt.Sprintf("new-privileges (prctl failed: %v)", e)
	}
	f, err := os.Open("/proc/thread-self/status")
	if err != nil {
		return "new-privileges (not confirmed: " + err.Error() + ")"
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "NoNewPrivs:"); ok {
			return "new-privileges (NoNewPrivs=" + strings.TrimSpace(v) + ")"
		}
	}
	return "new-privileges (not confirmed)"
}

func noisyBlock() []byte {
	line := []byte("noisy: the quick brown fox jumps over the lazy dog 0123456789\n")
	return bytes.Repeat(line, (256<<10)/len(line))
}

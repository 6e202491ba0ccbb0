package initproc

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	t.Parallel()
	ok := []string{"--status-fd", "4", "--pass-fds", "1", "--cgroup-fd", "5", "--cgroup-fd", "6", "--counters", "--listen", "127.0.0.1:80=" + BridgeDir + "/cp.sock",
		"--listen", "127.0.1.2:8080=" + BridgeDir + "/model.sock", "--", "/bin/agent", "agent", "x"}
	a, err := parse(ok)
	if err != nil || a.path != "/bin/agent" || len(a.argv) != 2 || !a.counters || !slices.Equal(a.cgroupFDs, []int{5, 6}) || len(a.listens) != 2 ||
		a.listens[0].name != "cp" || a.listens[0].addr.String() != "127.0.0.1:80" || a.listens[1].socket != BridgeDir+"/model.sock" {
		t.Fatalf("%+v %v", a, err)
	}
	sock := []string{"--status-socket", "/run/agentproof-init/status.sock", "--pass-fds", "0", "--counters", "--", "/bin/agent", "agent"}
	if a, err := parse(sock); err != nil || a.statusSocket != "/run/agentproof-init/status.sock" || a.statusFD != -1 || !a.counters {
		t.Fatalf("status socket: %+v %v", a, err)
	}
	for name, args := range map[string][]string{
		"status socket and fd":     {"--status-socket", "/run/s.sock", "--status-fd", "3", "--pass-fds", "0", "--", "/a", "a"},
		"status socket relative":   {"--status-socket", "s.sock", "--pass-fds", "0", "--", "/a", "a"},
		"status socket not clean":  {"--status-socket", "/run/../s.sock", "--pass-fds", "0", "--", "/a", "a"},
		"status socket not a sock": {"--status-socket", "/run/s", "--pass-fds", "0", "--", "/a", "a"},
		"status socket no pass":    {"--status-socket", "/run/s.sock", "--", "/a", "a"},
		"no command":               {"--status-fd", "3", "--pass-fds", "0"},
		"status fd mismatch":       {"--status-fd", "5", "--pass-fds", "0", "--", "/a", "a"},
		"listen off loopback":      {"--status-fd", "3", "--pass-fds", "0", "--listen", "0.0.0.0:80=" + BridgeDir + "/x.sock", "--", "/a", "a"},
		"listen IPv6":              {"--status-fd", "3", "--pass-fds", "0", "--listen", "[::1]:80=" + BridgeDir + "/x.sock", "--", "/a", "a"},
		"listen no port":           {"--status-fd", "3", "--pass-fds", "0", "--listen", "127.0.0.1=" + BridgeDir + "/x.sock", "--", "/a", "a"},
		"listen port too big":      {"--status-fd", "3", "--pass-fds", "0", "--listen", "127.0.0.1:65536=" + BridgeDir + "/x.sock", "--", "/a", "a"},
		"listen octet":             {"--status-fd", "3", "--pass-fds", "0", "--listen", "127.0.0.256:80=" + BridgeDir + "/x.sock", "--", "/a", "a"},
		"listen leading zero":      {"--status-fd", "3", "--pass-fds", "0", "--listen", "127.0.0.01:80=" + BridgeDir + "/x.sock", "--", "/a", "a"},
		"listen 3 octets":          {"--status-fd", "3", "--pass-fds", "0", "--listen", "127.0.1:80=" + BridgeDir + "/x.sock", "--", "/a", "a"},
		"listen sign":              {"--status-fd", "3", "--pass-fds", "0", "--listen", "127.0.0.1:+80=" + BridgeDir + "/x.sock", "--", "/a", "a"},
		"socket elsewhere":         {"--status-fd", "3", "--pass-fds", "0", "--listen", "127.0.0.1:80=/run/x.sock", "--", "/a", "a"},
		"socket deeper":            {"--status-fd", "3", "--pass-fds", "0", "--listen", "127.0.0.1:80=" + BridgeDir + "/a/x.sock", "--", "/a", "a"},
		"socket not .sock":         {"--status-fd", "3", "--pass-fds", "0", "--listen", "127.0.0.1:80=" + BridgeDir + "/x", "--", "/a", "a"},
		"relative command":         {"--status-fd", "3", "--pass-fds", "0", "--", "a", "a"},
		"unknown flag":             {"--shell", "sh", "--", "/a", "a"},
		"missing value":            {"--status-fd"},
		"cgroup fd too low":        {"--status-fd", "4", "--pass-fds", "1", "--cgroup-fd", "4", "--", "/a", "a"},
		"cgroup fd not a fd":       {"--status-fd", "3", "--pass-fds", "0", "--cgroup-fd", "x", "--", "/a", "a"},
	} {
		if _, err := parse(args); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestReadCounter(t *testing.T) {
	t.Parallel()
	f := filepath.Join(t.TempDir(), "events")
	_ = os.WriteFile(f, []byte("oom 2\noom_kill 3\n"), 0o644)
	if n, ok := ReadCounter(f, "oom_kill"); !ok || n != 3 {
		t.Errorf("counter %d %v", n, ok)
	}
	if _, ok := ReadCounter(f, "max"); ok {
		t.Error("a missing key was found")
	}
}

// TestStatusJSON: the hand-written exit report is what encoding/json makes of the same
// Status: it decodes to the same value, and is byte for byte json.Marshal's when no
// string needs HTML escaping.
func TestStatusJSON(t *testing.T) {
	t.Parallel()
	for _, s := range []Status{
		{Schema: StatusSchema},
		{Schema: StatusSchema, PID: 7, Exited: true, ExitCode: 137, Signal: "SIGKILL"},
		{Schema: StatusSchema, Error: "starting the agent /a b: \"quoted\" \\ tab\t nl\n cr\r nul\x00 esc\x1b é 日本 \xff\xfe end"},
		{Schema: StatusSchema, Exited: true, Connections: map[string]int64{"model": 3, "cp": 0, "a\"b": -1}, Counters: map[string]int64{CounterOOMKills: 1, CounterForkRefusals: 2}},
	} {
		checkStatusJSON(t, s)
	}
}

func FuzzStatusJSON(f *testing.F) {
	f.Add("SIGTERM", "no loopback interface", "cp", int64(2))
	f.Add("", "\x00\x1f\"\\\u2028<>&\xc3", "\xff", int64(-5))
	f.Fuzz(func(t *testing.T, signal, msg, key string, n int64) {
		checkStatusJSON(t, Status{Schema: StatusSchema, PID: int(n), Signal: signal, Error: msg, Connections: map[string]int64{key: n}})
	})
}

func checkStatusJSON(t *testing.T, s Status) {
	t.Helper()
	got := s.AppendJSON(nil)
	want, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var a, b Status
	if err := json.Unmarshal(got, &a); err != nil {
		t.Fatalf("%q: %v", got, err)
	}
	if err := json.Unmarshal(want, &b); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a, b) {
		t.Errorf("decoded %+v, encoding/json's %+v\n%s\n%s", a, b, got, want)
	}
	if !json.Valid(got) || (!escapedAlike(string(want)) && string(got) != string(want)) {
		t.Errorf("got %s, encoding/json %s", got, want)
	}
}

// escapedAlike reports whether encoding/json's output holds an escape the hand encoder
// spells differently or not at all (\b, \f, the HTML characters, U+2028, U+2029):
// both are valid JSON of the same string.
func escapedAlike(s string) bool {
	for _, esc := range []string{`\b`, `\f`, `\u003c`, `\u003e`, `\u0026`, `\u2028`, `\u2029`} {
		if strings.Contains(s, esc) {
			return true
		}
	}
	return false
}

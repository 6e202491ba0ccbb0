package environment

import (
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentproof/agentproof/billing"
)

func TestAllowlistProblems(t *testing.T) {
	t.Parallel()
	cp := Endpoint{Name: "cp", Kind: EndpointControlPlane, Listen: "127.0.0.1:4100", Dial: "127.0.0.1:4100"}
	prov := Endpoint{Name: "openai", Kind: EndpointProvider, Listen: "api.openai.com:443", Dial: "api.openai.com:443"}
	rows := []struct {
		name string
		list Allowlist
		live bool
		want []string // substrings, one per expected problem
	}{
		{"control plane and model", Allowlist{cp, {Name: "model", Kind: EndpointModel, Listen: "model.test:80", Dial: "localhost:9"}}, false, nil},
		{"provider under live", Allowlist{cp, prov}, true, nil},
		{"provider without live", Allowlist{prov}, false, []string{"allowed only under --live"}},
		{"control plane off loopback", Allowlist{{Name: "cp", Kind: EndpointControlPlane, Listen: "127.0.0.1:1", Dial: "10.0.0.1:80"}}, false, []string{"must dial a loopback address"}},
		{"provider listening under another name", Allowlist{{Name: "p", Kind: EndpointProvider, Listen: "api.example.com:443", Dial: "evil.example.com:443"}}, true, []string{"must listen under the name it dials"}},
		{"provider by address", Allowlist{{Name: "p", Kind: EndpointProvider, Listen: "1.2.3.4:443", Dial: "1.2.3.4:443"}}, true, []string{"must be a loopback IPv4 address or a DNS name", "must name its host"}},
		{"duplicates", Allowlist{cp, cp}, false, []string{`name "cp" is listed twice`, "listed twice"}},
		{"bad fields", Allowlist{{Name: "Bad Name", Kind: "peer", Listen: "127.0.0.1:0", Dial: "nohost"}}, false, []string{"1-32 characters", "port", "not host:port", "is not control_plane"}},
		{"listen on an outside address", Allowlist{{Name: "x", Kind: EndpointModel, Listen: "0.0.0.0:80", Dial: "127.0.0.1:80"}}, false, []string{"loopback IPv4"}},
	}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			t.Parallel()
			got := r.list.Problems(r.live)
			if len(got) != len(r.want) {
				t.Fatalf("problems %q, want %d like %q", got, len(r.want), r.want)
			}
			all := strings.Join(got, "\n")
			for _, w := range r.want {
				if !strings.Contains(all, w) {
					t.Errorf("%q not in %q", w, got)
				}
			}
		})
	}
}

func TestShape(t *testing.T) {
	t.Parallel()
	s := Shape{CPUCores: 2, MemoryBytes: 4 * GiB, PIDs: 512, DiskBytes: 10 * GiB}
	if !s.Pinned() || s.Problems() != nil || s.IsZero() {
		t.Errorf("%+v: pinned %v, problems %v", s, s.Pinned(), s.Problems())
	}
	if !(Shape{}).IsZero() || (Shape{}).Pinned() {
		t.Error("the zero shape pins nothing")
	}
	bad := Shape{CPUCores: math.NaN(), MemoryBytes: 1, PIDs: 2, DiskBytes: 3}
	if p := bad.Problems(); len(p) != 4 {
		t.Errorf("problems %q", p)
	}
	if (Shape{CPUCores: 1, MemoryBytes: GiB, DiskBytes: GiB}).Pinned() {
		t.Error("a shape without pids is not pinned")
	}
}

func validLease(dir string) *Lease {
	return &Lease{Schema: LeaseSchema, ID: filepath.Base(dir), Provider: ProviderSandbox, EnvironmentID: "sandbox",
		Shape:     Shape{CPUCores: 1, MemoryBytes: 64 << 20, PIDs: 64, DiskBytes: 8 << 20},
		StartedAt: time.Date(2026, 9, 1, 12, 0, 0, 0, time.UTC), Dir: dir, Workspace: filepath.Join(dir, "disk", "workspace"),
		Endpoints: []Endpoint{{Name: "cp", Kind: EndpointControlPlane, Listen: "127.0.0.1:4100", Dial: "127.0.0.1:4100", Socket: filepath.Join(dir, "bridge", "cp.sock")}},
		State:     json.RawMessage(`{"uid":65534}`)}
}

func TestLeaseFile(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "lease-0123456789abcdef")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	l := validLease(dir)
	if err := WriteLeaseFile(l); err != nil {
		t.Fatal(err)
	}
	back, err := ReadLeaseFile(l.LeaseFile())
	if err != nil {
		t.Fatal(err)
	}
	a, _ := json.Marshal(l)
	b, _ := json.Marshal(back)
	if string(a) != string(b) {
		t.Errorf("round trip:\n%s\n%s", a, b)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("the atomic write left %d entries", len(entries))
	}
	// Moved into another directory, the file no longer describes its directory.
	other := filepath.Join(t.TempDir(), "lease-0123456789abcdef")
	_ = os.Mkdir(other, 0o700)
	data, _ := os.ReadFile(l.LeaseFile())
	_ = os.WriteFile(filepath.Join(other, LeaseFileName), data, 0o600)
	var se *SpecError
	if _, err := ReadLeaseFile(filepath.Join(other, LeaseFileName)); !errors.As(err, &se) {
		t.Errorf("a moved lease file was accepted: %v", err)
	}
	if _, err := ReadLeaseFile("relative/lease.json"); !errors.As(err, &se) {
		t.Errorf("a relative path was accepted: %v", err)
	}
}

func TestParseLeaseProblems(t *testing.T) {
	t.Parallel()
	good, _ := json.Marshal(validLease("/r/lease-0123456789abcdef"))
	if _, err := ParseLease(good); err != nil {
		t.Fatal(err)
	}
	// The sockets may live in the lease's own short socket directory instead.
	short := validLease("/r/lease-0123456789abcdef")
	short.SocketDir = "/run/apf-0123456789abcdef"
	short.Endpoints[0].Socket = "/run/apf-0123456789abcdef/cp.sock"
	shortJSON, _ := json.Marshal(short)
	if _, err := ParseLease(shortJSON); err != nil {
		t.Errorf("sockets in the socket directory: %v", err)
	}
	rows := map[string]string{
		"socket outside both": strings.Replace(string(shortJSON), `/run/apf-0123456789abcdef/cp.sock`, `/run/other.sock`, 1),
		"relative socketDir":  strings.Replace(string(shortJSON), `"socketDir":"/run/apf-0123456789abcdef"`, `"socketDir":"run/apf"`, 1),
		"unknown field":       strings.Replace(string(good), `"schema"`, `"colour":"blue","schema"`, 1),
		"bad id":              strings.Replace(string(good), `"id":"lease-0123456789abcdef"`, `"id":"../etc"`, 1),
		"socket outside":      strings.Replace(string(good), `/r/lease-0123456789abcdef/bridge/cp.sock`, `/run/other.sock`, 1),
		"unpinned":            strings.Replace(string(good), `"pids":64`, `"pids":0`, 1),
		"trailing":            string(good) + `{}`,
		"provider":            strings.Replace(string(good), `"provider":"sandbox"`, `"provider":"daytona"`, 1),
	}
	for name, data := range rows {
		var se *SpecError
		if _, err := ParseLease([]byte(data)); !errors.As(err, &se) {
			t.Errorf("%s: accepted (%v)", name, err)
		}
	}
}

// FuzzParseLease: any bytes either parse into a lease without problems or give a
// *SpecError; nothing panics.
func FuzzParseLease(f *testing.F) {
	good, _ := json.Marshal(validLease("/r/lease-0123456789abcdef"))
	f.Add(good)
	f.Add([]byte(`{"schema":"agentproof.lease.v1"}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		l, err := ParseLease(data)
		if err != nil {
			var se *SpecError
			if !errors.As(err, &se) {
				t.Fatalf("error of type %T: %v", err, err)
			}
			return
		}
		if p := l.Problems(); len(p) > 0 {
			t.Fatalf("parsed a lease with problems %v", p)
		}
	})
}

func TestLeaseRecordRuntime(t *testing.T) {
	t.Parallel()
	l := validLease("/r/lease-0123456789abcdef")
	l.Reuse = true
	l.Shape = Shape{CPUCores: 2, MemoryBytes: 2 << 30, PIDs: 256, DiskBytes: 1 << 30}
	open := NewLeaseRecord(l, 0, nil)
	if open.EndedAt != "" || open.CleanupConfirmed || !open.Reused || open.Shape == nil {
		t.Errorf("open record %+v", open)
	}
	end := CleanupReport{LeaseID: l.ID, Confirmed: true, EndedAt: l.StartedAt.Add(90 * time.Minute)}
	rec := NewLeaseRecord(l, 3, &end)
	if rec.EndedAt != "2026-09-01T13:30:00.000Z" || rec.StartedAt != "2026-09-01T12:00:00.000Z" || rec.Launches != 3 || !rec.CleanupConfirmed || rec.Remaining != nil {
		t.Errorf("record %+v", rec)
	}
	rt := Runtime(ProviderSandbox, []LeaseRecord{rec}, nil, time.Time{})
	if rt.CostStatus != billing.RuntimeUnpriced || rt.EstimatedListCostUSD != nil || *rt.LeaseDurationMs != 5_400_000 || *rt.CPUCores != 2 || *rt.MemoryGiB != 2 || *rt.DiskGiB != 1 {
		t.Errorf("sandbox runtime %+v", rt)
	}
	// A lease never cleaned up ends at the campaign's finish, never counts as free.
	rt = Runtime(ProviderSandbox, []LeaseRecord{open}, nil, l.StartedAt.Add(time.Hour))
	if rt.CostStatus != billing.RuntimeUnpriced || *rt.LeaseDurationMs != 3_600_000 {
		t.Errorf("open lease runtime %+v", rt)
	}
	local := &Lease{Schema: LeaseSchema, ID: "lease-0000000000000001", Provider: ProviderLocal, EnvironmentID: "local", StartedAt: l.StartedAt}
	lr := NewLeaseRecord(local, 1, &end)
	if lr.Shape != nil {
		t.Errorf("local record has a shape: %+v", lr)
	}
	if rt := Runtime(ProviderLocal, []LeaseRecord{lr}, nil, time.Time{}); rt.CostStatus != billing.RuntimeNotMetered {
		t.Errorf("local runtime %+v", rt)
	}
	unpinned := rec
	unpinned.Shape = &Shape{CPUCores: 1}
	if rt := Runtime(ProviderSandbox, []LeaseRecord{unpinned}, nil, time.Time{}); rt.CostStatus != billing.RuntimeUnavailable {
		t.Errorf("a lease without its full shape must be unavailable: %+v", rt)
	}
}

func TestCleanupReason(t *testing.T) {
	t.Parallel()
	r := CleanupReport{LeaseID: "lease-x", Remaining: Inventory{Processes: []Process{{PID: 42, Comm: "sleeper"}}, Mounts: []string{"/l/disk"}}, Errors: []string{"umount: busy"}}
	if got := r.Reason(); !strings.Contains(got, "42 (sleeper)") || !strings.Contains(got, "/l/disk") || !strings.Contains(got, "umount: busy") {
		t.Errorf("reason %q", got)
	}
	if (CleanupReport{Confirmed: true}).Reason() != "" {
		t.Error("a confirmed cleanup has no reason")
	}
}

// TestNotRunReason: the reason of the cells a probe's provider cannot run is the
// distinct Needs of its failed checks in order (a failed check without Needs gives
// its name and detail); an available report gives none.
func TestNotRunReason(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		checks []Check
		want   string
	}{
		{[]Check{{Name: "a", OK: true, Detail: "fine"}}, ""},
		{[]Check{{Name: "bwrap", Detail: "missing", Needs: "bubblewrap is not installed"}, {Name: "k", OK: true}}, "bubblewrap is not installed"},
		{[]Check{
			{Name: "privileges", Detail: "uid 1000", Needs: "needs root"},
			{Name: "cgroup memory", Detail: "v1", Needs: "needs root"},
			{Name: "odd", Detail: "what happened"},
			{Name: "passed", OK: true, Needs: "ignored"},
		}, "needs root; odd: what happened"},
	} {
		if got := NewProbeReport(ProviderSandbox, tc.checks).NotRunReason(); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.checks, got, tc.want)
		}
	}
}

// TestUnenforcedReason: the reason an environment is not run here names each declared
// limit the probe says is not enforced, grouped by why, in resource order; limits not
// declared, or enforced, are not named.
func TestUnenforcedReason(t *testing.T) {
	t.Parallel()
	r := ProbeReport{Limits: []Limit{
		{Resource: ResourceCPU, Needs: "needs cgroup v2 delegation; this machine has cgroup v1"},
		{Resource: ResourceMemory, Needs: "needs cgroup v2 delegation; this machine has cgroup v1"},
		{Resource: ResourcePIDs, Enforced: true},
		{Resource: ResourceDisk, Needs: "needs root"},
	}}
	for _, c := range []struct {
		shape Shape
		want  string
	}{
		{Shape{}, ""},
		{Shape{PIDs: 64}, ""},
		{Shape{MemoryBytes: GiB}, "memory limit needs cgroup v2 delegation; this machine has cgroup v1"},
		{Shape{CPUCores: 1, MemoryBytes: GiB, PIDs: 64, DiskBytes: GiB}, "cpu and memory limits need cgroup v2 delegation; this machine has cgroup v1; disk limit needs root"},
	} {
		if got := r.UnenforcedReason(c.shape.Declared()); got != c.want {
			t.Errorf("%+v: %q, want %q", c.shape, got, c.want)
		}
	}
	if got := (ProbeReport{}).UnenforcedReason((Shape{CPUCores: 1}).Declared()); got != "" {
		t.Errorf("a report without limits: %q", got)
	}
}

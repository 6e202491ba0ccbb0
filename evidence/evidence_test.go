package evidence

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/agentproof/agentproof/canonjson"
	"github.com/google/go-cmp/cmp"
)

func sampleMeta() Metadata {
	code := 0
	return Metadata{
		Pins:        Pins{Collector: LocalFixtureCollector, Environment: "go1.26.8/linux-amd64"},
		Check:       "fixture.pass",
		CollectedAt: "2026-11-30T03:40:00.123Z",
		Observation: ProcessObservation{Program: "pass", ProcessEnd: ProcessEnd{ExitCode: &code, Exited: true, StdioClosed: true,
			SignalsSent: []string{}}, Workspace: WorkspaceRemoved, MaxOutputBytes: 100},
	}
}

func TestPutGetList(t *testing.T) {
	t.Parallel()
	s, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	body := LocalFixtureBody{Fixture: "pass", Stdout: []byte("hello\n")}.Format()
	id, err := s.Put(sampleMeta(), body)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ParseID(id); err != nil {
		t.Fatal(err)
	}
	rec, err := s.Get(id)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(sampleMeta(), rec.Metadata); diff != "" {
		t.Errorf("metadata (-want +got):\n%s", diff)
	}
	if !bytes.Equal(rec.Body, body) {
		t.Errorf("body = %q, want %q", rec.Body, body)
	}
	ids, err := s.List()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{id}, ids); diff != "" {
		t.Errorf("List (-want +got):\n%s", diff)
	}
	// Identity covers metadata and body: changing either changes the id.
	other := sampleMeta()
	other.CollectedAt = "2026-11-30T03:40:00.124Z"
	id2, err := s.Put(other, body)
	if err != nil {
		t.Fatal(err)
	}
	id3, err := s.Put(sampleMeta(), append(body, 'x'))
	if err != nil {
		t.Fatal(err)
	}
	if id2 == id || id3 == id || id2 == id3 {
		t.Errorf("ids not distinct: %s %s %s", id, id2, id3)
	}
}

func TestConcurrentPutSameRecord(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	const writers = 16
	ids := make([]string, writers)
	errs := make([]error, writers)
	var wg sync.WaitGroup
	for i := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Each writer opens its own Store, as separate processes would.
			s, err := Open(dir)
			if err != nil {
				errs[i] = err
				return
			}
			ids[i], errs[i] = s.Put(sampleMeta(), []byte("same body"))
		}()
	}
	wg.Wait()
	for i := range writers {
		if errs[i] != nil {
			t.Fatalf("writer %d: %v", i, errs[i])
		}
		if ids[i] != ids[0] {
			t.Fatalf("writer %d id %s != %s", i, ids[i], ids[0])
		}
	}
	s, _ := Open(dir)
	got, err := s.List()
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 {
		t.Fatalf("List = %v, want one record", got)
	}
	entries, err := os.ReadDir(filepath.Join(dir, ids[0][:2]))
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 {
		t.Errorf("directory holds %d entries (temp files left?), want 1", len(entries))
	}
}

func TestValidation(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		mutate   func(*Metadata)
		problems int
	}{
		{"empty collector", func(m *Metadata) { m.Pins.Collector = "" }, 1},
		{"bad environment and check", func(m *Metadata) { m.Pins.Environment = "a b"; m.Check = "Upper" }, 2},
		{"attempt without run", func(m *Metadata) { m.Pins.AttemptID = "x/1" }, 2},
		{"mismatched attempt", func(m *Metadata) { m.Pins.RunID = "run-1"; m.Pins.Epoch = 2; m.Pins.AttemptID = "run-1/3" }, 1},
		{"negative epoch", func(m *Metadata) { m.Pins.RunID = "r"; m.Pins.Epoch = -1; m.Pins.AttemptID = "r/-1" }, 1},
		{"nul in check", func(m *Metadata) { m.Check = "a\x00" }, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, err := Open(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			m := sampleMeta()
			tt.mutate(&m)
			_, err = s.Put(m, nil)
			var verr *ValidationError
			if !errors.As(err, &verr) {
				t.Fatalf("Put error = %v, want *ValidationError", err)
			}
			if len(verr.Problems) != tt.problems {
				t.Errorf("problems = %q, want %d", verr.Problems, tt.problems)
			}
			if ids, _ := s.List(); len(ids) != 0 {
				t.Errorf("invalid metadata stored: %v", ids)
			}
		})
	}
	good := sampleMeta()
	good.Pins.RunID, good.Pins.Epoch, good.Pins.AttemptID = "run-1", 2, "run-1/2"
	if err := ValidateMetadata(good); err != nil {
		t.Errorf("valid attempt pins rejected: %v", err)
	}
}

func TestOpenAndGetErrors(t *testing.T) {
	t.Parallel()
	for _, dir := range []string{"relative/dir", "/tmp/a\x00b"} {
		var verr *ValidationError
		if _, err := Open(dir); !errors.As(err, &verr) {
			t.Errorf("Open(%q) = %v, want *ValidationError", dir, err)
		}
	}
	s, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var verr *ValidationError
	if _, err := s.Get("../etc/passwd"); !errors.As(err, &verr) {
		t.Errorf("Get(bad id) = %v, want *ValidationError", err)
	}
	if _, err := s.Get(strings.Repeat("a", 64)); !errors.Is(err, ErrNotFound) {
		t.Errorf("Get(missing) = %v, want ErrNotFound", err)
	}
	id, err := s.Put(sampleMeta(), []byte("body"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(s.Dir(), id[:2], id)
	if err := os.WriteFile(path, []byte("tampered"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(id); !errors.Is(err, ErrCorrupt) {
		t.Errorf("Get(tampered) = %v, want ErrCorrupt", err)
	}
}

func TestBodyRoundTrip(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		body LocalFixtureBody
		want string
	}{
		{"complete", LocalFixtureBody{Fixture: "pass", Stdout: []byte("out\n"), Stderr: []byte("err")},
			"sf-local-fixture/1 fixture=pass\n== stdout: 4 bytes ==\nout\n\n== stderr: 3 bytes ==\nerr\n== end ==\n"},
		{"truncated", LocalFixtureBody{Fixture: "noisy", Stdout: []byte("xxxx"), TruncatedAt: 4},
			"sf-local-fixture/1 fixture=noisy\n== stdout: 4 bytes ==\nxxxx\n== stderr: 0 bytes ==\n\n== output truncated at 4 bytes ==\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := tt.body.Format()
			if string(got) != tt.want {
				t.Fatalf("Format = %q, want %q", got, tt.want)
			}
			back, err := ParseLocalFixtureBody(got)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(back.Format(), got) {
				t.Errorf("round trip changed the body: %q", back.Format())
			}
		})
	}
}

func FuzzParseLocalFixtureBody(f *testing.F) {
	f.Add([]byte(LocalFixtureBody{Fixture: "pass", Stdout: []byte("a\nb"), Stderr: []byte("c")}.Format()))
	f.Add([]byte(LocalFixtureBody{Fixture: "noisy", Stdout: []byte("x"), TruncatedAt: 1}.Format()))
	f.Add([]byte("sf-local-fixture/1 fixture=x\n== stdout: 99999999999 bytes ==\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		b, err := ParseLocalFixtureBody(data)
		if err != nil {
			return
		}
		if !bytes.Equal(b.Format(), data) {
			t.Fatalf("accepted body does not round-trip: %q", data)
		}
	})
}

func FuzzDecode(f *testing.F) {
	_, data, err := Encode(sampleMeta(), []byte("body"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(data)
	f.Add([]byte(RecordHeader + "\n{}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		id := sha(data)
		rec, err := Decode(id, data)
		if err != nil {
			return
		}
		id2, data2, err := Encode(rec.Metadata, rec.Body)
		if err != nil {
			t.Fatal(err)
		}
		if id2 != id || !bytes.Equal(data2, data) {
			t.Fatalf("decoded record does not re-encode to the same bytes")
		}
	})
}

func sha(b []byte) string { return canonjson.SHA256Hex(b) }

// TestRecordIdentityPinned: a record's id is the hash of its canonical metadata and
// body, so typed fields (WorkspaceState) must encode exactly as the strings they
// replaced; this id was computed before they were typed.
func TestRecordIdentityPinned(t *testing.T) {
	t.Parallel()
	id, data, err := Encode(sampleMeta(), LocalFixtureBody{Fixture: "pass", Stdout: []byte("hello\n")}.Format())
	if err != nil {
		t.Fatal(err)
	}
	if want := "bdfd4c4a1571773538a9837e3bbd7efc7a1dc2001a3f72376eb479b82647b295"; id != want {
		t.Errorf("id = %s, want %s", id, want)
	}
	if !bytes.Contains(data, []byte(`"workspace":"removed"`)) {
		t.Errorf("encoded record lacks \"workspace\":\"removed\": %.200s", data)
	}
}

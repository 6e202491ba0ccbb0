package result

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// mergeSyncState is what a merge target holds when Merge syncs its file system: the
// evidence files and the attempt records (result.json), relative to the target.
type mergeSyncState struct {
	evidence, records []string
}

// observeMergeSyncs replaces syncFilesystem for the test: every sync records what the
// target root holds at that moment, then syncs for real.
func observeMergeSyncs(t *testing.T, root string) *[]mergeSyncState {
	t.Helper()
	var seen []mergeSyncState
	underlying := syncFilesystem
	syncFilesystem = func(dir string) error {
		var st mergeSyncState
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			rel, err := filepath.Rel(root, p)
			if err != nil {
				return err
			}
			if isAttemptRecord(p, d) {
				st.records = append(st.records, filepath.ToSlash(rel))
			} else {
				st.evidence = append(st.evidence, filepath.ToSlash(rel))
			}
			return nil
		})
		if err != nil {
			return err
		}
		slices.Sort(st.evidence)
		slices.Sort(st.records)
		seen = append(seen, st)
		return underlying(dir)
	}
	t.Cleanup(func() { syncFilesystem = underlying })
	return &seen
}

// TestMergeSyncOrder: Merge makes every copied attempt's evidence durable before the
// first result.json appears (the first sync sees all the evidence and no record), and
// makes the records durable with a second sync; with SyncLater it syncs once, before
// the records, and leaves them in place for the caller's sync. The attempts of two
// sources are all merged either way. Not parallel: it replaces syncFilesystem.
func TestMergeSyncOrder(t *testing.T) {
	tmp := t.TempDir()
	var sources []string
	var wantEvidence, wantRecords []string
	for i := range 2 {
		src := filepath.Join(tmp, fmt.Sprintf("shard-%d", i))
		sources = append(sources, src)
		for c := range 3 {
			cs := fmt.Sprintf("c%d%d", i, c)
			dir := filepath.Join(src, "camp", "core", "p", "local", cs, "attempt-1")
			files := map[string]string{
				ResultFile:                  fmt.Sprintf(`{"executionId":"core.p.local.%s","attempt":1,"campaignId":"camp"}`, cs),
				"logs/agent/runs/r/out.log": "log of " + cs + "\n",
				"snapshots/api-state.json":  `{"cell":"` + cs + `"}`,
			}
			for rel, content := range files {
				p := filepath.Join(dir, rel)
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(content), FileMode); err != nil {
					t.Fatal(err)
				}
				rel = "camp/core/p/local/" + cs + "/attempt-1/" + rel
				if filepath.Base(rel) == ResultFile {
					wantRecords = append(wantRecords, rel)
				} else {
					wantEvidence = append(wantEvidence, rel)
				}
			}
		}
	}
	slices.Sort(wantEvidence)
	slices.Sort(wantRecords)
	for _, later := range []bool{false, true} {
		t.Run(fmt.Sprintf("SyncLater=%v", later), func(t *testing.T) {
			out := filepath.Join(tmp, fmt.Sprintf("out-%v", later))
			seen := observeMergeSyncs(t, out)
			m, err := Merge(MergeOptions{Sources: sources, ResultsRoot: out, SyncLater: later})
			if err != nil {
				t.Fatal(err)
			}
			if len(m.Copied) != 6 || len(m.Warnings) != 0 {
				t.Fatalf("merged: %+v", m)
			}
			want := 2
			if later {
				want = 1
			}
			if len(*seen) != want {
				t.Fatalf("%d syncs, want %d", len(*seen), want)
			}
			first := (*seen)[0]
			if !slices.Equal(first.evidence, wantEvidence) || len(first.records) != 0 {
				t.Errorf("first sync saw evidence %q and records %q; want all evidence %q and no record", first.evidence, first.records, wantEvidence)
			}
			if !later && !slices.Equal((*seen)[1].records, wantRecords) {
				t.Errorf("second sync saw records %q, want %q", (*seen)[1].records, wantRecords)
			}
			// Every record is in place when Merge returns, either way.
			final := observeMergeSyncs(t, out)
			if err := syncFilesystem(out); err != nil {
				t.Fatal(err)
			}
			if got := (*final)[0].records; !slices.Equal(got, wantRecords) {
				t.Errorf("after the merge: records %q, want %q", got, wantRecords)
			}
		})
	}
}

// TestMergeSourcesInOrder: the sources are walked several at a time, but what they
// hold is taken in the order they are given: the warnings of skipped records follow
// the sources' order (not their names' order, nor the walks' finishing order), and a
// missing source is an error naming it.
func TestMergeSourcesInOrder(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	var sources []string
	for _, name := range []string{"z", "m", "a"} {
		src := filepath.Join(tmp, name)
		sources = append(sources, src)
		for _, attempt := range []string{"attempt-1", "attempt-2"} {
			dir := filepath.Join(src, "camp", "core", "p", "local", "c-"+name, attempt)
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, ResultFile), []byte("{not json"), FileMode); err != nil {
				t.Fatal(err)
			}
		}
	}
	for range 5 {
		m, err := Merge(MergeOptions{Sources: sources, ResultsRoot: filepath.Join(tmp, "out"), CampaignID: "camp"})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, w := range m.Warnings {
			rel, err := filepath.Rel(tmp, strings.Fields(w)[1])
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, filepath.ToSlash(filepath.Dir(rel)))
		}
		want := []string{
			"z/camp/core/p/local/c-z/attempt-1", "z/camp/core/p/local/c-z/attempt-2",
			"m/camp/core/p/local/c-m/attempt-1", "m/camp/core/p/local/c-m/attempt-2",
			"a/camp/core/p/local/c-a/attempt-1", "a/camp/core/p/local/c-a/attempt-2",
		}
		if !slices.Equal(got, want) {
			t.Fatalf("warnings from %q, want %q", got, want)
		}
	}
	missing := filepath.Join(tmp, "missing")
	_, err := Merge(MergeOptions{Sources: append(sources, missing), ResultsRoot: filepath.Join(tmp, "out"), CampaignID: "camp"})
	if err == nil || !strings.Contains(err.Error(), missing) {
		t.Errorf("a missing source: %v", err)
	}
}

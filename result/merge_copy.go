package result

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/agentproof/agentproof/atomicfile"
)

// copyJob is one attempt directory Merge copies: from src to dst (its place in the
// campaign, rel relative to the campaign directory), its result.json (raw, read with
// status stat) written last, and the warnings the copy gave.
type copyJob struct {
	src, dst string
	raw      []byte
	stat     os.FileInfo
	warnings []string
}

// place decides where attempt a goes in campaignDir: <suite>/<profile>/<environment>/
// <case>/attempt-<n>, or beside it at attempt-<n>-<12 hex digits of its digest> when
// another attempt holds that place. It records a in m as copied, or as skipped when an
// identical one is there already (nil returned: nothing to copy).
func (m *Merged) place(campaignDir string, a sourceAttempt) *copyJob {
	s, p, e, c, _ := ParseExecutionID(a.result.ExecutionID)
	base := filepath.Join(s, p, e, c, "attempt-"+strconv.Itoa(a.result.Attempt))
	held := func(rel string) ([]byte, error) {
		if raw, ok := m.placed[rel]; ok {
			return raw, nil
		}
		return os.ReadFile(filepath.Join(campaignDir, rel, ResultFile))
	}
	rel := base
	existing, err := held(rel)
	if err == nil && !bytes.Equal(existing, a.raw) {
		rel = base + "-" + a.digest[:12]
		existing, err = held(rel)
	}
	if err == nil && bytes.Equal(existing, a.raw) {
		m.Skipped = append(m.Skipped, filepath.ToSlash(rel))
		return nil
	}
	m.Copied = append(m.Copied, filepath.ToSlash(rel))
	m.placed[rel] = a.raw
	return &copyJob{src: a.dir, dst: filepath.Join(campaignDir, rel), raw: a.raw, stat: a.stat}
}

// copyAll copies every job's evidence (copyAttempt), several attempts at a time, and
// adds the warnings to m in the jobs' order. Error: the first failed copy in that
// order (the copies after a failure may be skipped).
func (m *Merged) copyAll(c *evidenceCopier, jobs []*copyJob) error {
	err := parallel(len(jobs), func(i int) error {
		var err error
		jobs[i].warnings, err = c.copyAttempt(jobs[i].src, jobs[i].dst)
		return err
	})
	for _, j := range jobs {
		m.Warnings = append(m.Warnings, j.warnings...)
		j.warnings = nil
	}
	return err
}

// syncFilesystem makes everything written to a file system durable
// (atomicfile.SyncFilesystem); a test replaces it to see what is in place when Merge
// syncs.
var syncFilesystem = atomicfile.SyncFilesystem

// writeResults makes the copied evidence under campaignDir durable (one sync of its
// file system), then puts every job's result.json in place through the evidence guard
// (linked or written atomically, without an fsync each) and, when syncAfter, syncs
// once more: an attempt is never seen complete before its evidence is, and a merge of
// many attempts costs two syncs (one, when the caller syncs later), not two fsyncs per
// file.
func (m *Merged) writeResults(c *evidenceCopier, campaignDir string, jobs []*copyJob, syncAfter bool) error {
	if len(jobs) == 0 {
		return nil
	}
	if err := syncFilesystem(campaignDir); err != nil {
		return err
	}
	err := parallel(len(jobs), func(i int) error {
		j := jobs[i]
		src, dst := filepath.Join(j.src, ResultFile), filepath.Join(j.dst, ResultFile)
		var err error
		j.warnings, err = c.guardCopy(j.raw, j.stat, src, dst, ResultFile)
		if err != nil {
			return fmt.Errorf("copying %s: %w", dst, err)
		}
		return nil
	})
	for _, j := range jobs {
		m.Warnings = append(m.Warnings, j.warnings...)
	}
	if err != nil || !syncAfter {
		return err
	}
	return syncFilesystem(campaignDir)
}

// parallel calls f(0) … f(n-1), up to mergeWorkers at a time, and returns the error
// of the lowest index that failed (once one failed, the indexes not yet started are
// skipped).
func parallel(n int, f func(i int) error) error {
	errs := make([]error, n)
	var next atomic.Int64
	var failed atomic.Bool
	var wg sync.WaitGroup
	for range min(n, mergeWorkers()) {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < n && !failed.Load(); i = int(next.Add(1) - 1) {
				if errs[i] = f(i); errs[i] != nil {
					failed.Store(true)
				}
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// mergeWorkers is how many attempts Merge copies at a time: twice the processors Go
// may use (a copy waits on the file system about as long as it computes), at most 8.
func mergeWorkers() int { return min(2*runtime.GOMAXPROCS(0), 8) }

// evidenceCopier copies attempt directories into one campaign directory. Every file
// passes the evidence guard (Guard with no secret set: the allowlist and secret
// shapes); one the guard leaves byte for byte is hard-linked when the link is safe
// (canLink), else written (atomically, without an fsync: Merge syncs the file system
// once). It remembers the directories it knows to exist. Safe for concurrent use.
type evidenceCopier struct {
	guard Guard
	uid   int
	dev   uint64 // device of the campaign directory's file system
	links bool   // whether the device is known (links are tried only then)
	mu    sync.Mutex
	made  map[string]bool
}

// newEvidenceCopier returns the copier into campaignDir (created with its parents).
// Error: the directory cannot be created or examined.
func newEvidenceCopier(campaignDir string) (*evidenceCopier, error) {
	if err := os.MkdirAll(campaignDir, 0o755); err != nil {
		return nil, fmt.Errorf("creating %s: %w", campaignDir, err)
	}
	st, err := os.Stat(campaignDir)
	if err != nil {
		return nil, fmt.Errorf("creating %s: %w", campaignDir, err)
	}
	c := &evidenceCopier{guard: Guard{Deferred: true}, uid: os.Geteuid(), made: map[string]bool{filepath.Clean(campaignDir): true}}
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		c.dev, c.links = uint64(sys.Dev), true
	}
	return c, nil
}

// copyAttempt copies the regular files and directories of attempt directory src to
// dst (created), except its result.json, skipping symbolic links and special files;
// a file the guard refuses is left out and named in a warning. Error: a directory or
// file cannot be read, created or written.
func (c *evidenceCopier) copyAttempt(src, dst string) ([]string, error) {
	var warnings []string
	if err := c.makeDir(filepath.Dir(dst)); err != nil {
		return nil, fmt.Errorf("copying %s to %s: %w", src, dst, err)
	}
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			// The walk goes parents first: the parent of target exists.
			return mkdir(target)
		case !d.Type().IsRegular(), rel == ResultFile:
			return nil
		}
		b, st, err := readFileStat(p)
		if err != nil {
			return err
		}
		w, err := c.guardCopy(b, st, p, target, rel)
		warnings = append(warnings, w...)
		return err
	})
	if err != nil {
		return warnings, fmt.Errorf("copying %s to %s: %w", src, dst, err)
	}
	return warnings, nil
}

// makeDir creates dir and its missing parents, remembering what exists.
func (c *evidenceCopier) makeDir(dir string) error {
	c.mu.Lock()
	known := c.made[dir]
	c.mu.Unlock()
	if known {
		return nil
	}
	if parent := filepath.Dir(dir); parent != dir {
		if err := c.makeDir(parent); err != nil {
			return err
		}
	}
	if err := mkdir(dir); err != nil {
		return err
	}
	c.mu.Lock()
	c.made[dir] = true
	c.mu.Unlock()
	return nil
}

// mkdir creates directory dir (mode 0755); one already there is fine. Error: it
// cannot be created, or something else than a directory (a symbolic link too) is there.
func mkdir(dir string) error {
	err := os.Mkdir(dir, 0o755)
	if !errors.Is(err, fs.ErrExist) {
		return err
	}
	if st, lerr := os.Lstat(dir); lerr != nil || !st.IsDir() {
		return err
	}
	return nil
}

// guardCopy puts b, read from src (status st), at target through the guard: a leak is
// redacted (and named in a warning about rel), a refused file left out (named in a
// warning); clean bytes are linked from src when canLink allows and the link works,
// else written. Error: a JSON file that does not parse, the write or link failed.
func (c *evidenceCopier) guardCopy(b []byte, st os.FileInfo, src, target, rel string) ([]string, error) {
	var warnings []string
	clean, gf, err := c.guard.guard(target, b, true)
	for _, l := range gf.Leaks {
		warnings = append(warnings, fmt.Sprintf("%s: secret leak (%s): redacted while copying", filepath.ToSlash(rel), l))
	}
	if errors.Is(err, ErrNotAllowed) || gf.Withheld {
		return append(warnings, fmt.Sprintf("%s: not copied: %v", filepath.ToSlash(rel), err)), nil
	}
	if err != nil {
		return warnings, err
	}
	if len(gf.Leaks) == 0 && c.canLink(st) {
		if linked, err := link(src, target, st); linked || err != nil {
			return warnings, err
		}
	}
	return warnings, atomicfile.WriteFile(target, clean, FileMode, atomicfile.MakeDirs(), atomicfile.NoSync())
}

// canLink reports whether the file with status st may be hard-linked into the
// campaign instead of copied: a regular file with mode FileMode (what a copy would
// have), owned by the merging user (no one else can change the merged evidence), on
// the campaign's file system.
func (c *evidenceCopier) canLink(st os.FileInfo) bool {
	sys, ok := st.Sys().(*syscall.Stat_t)
	return ok && c.links && st.Mode().IsRegular() && st.Mode().Perm() == FileMode &&
		int(sys.Uid) == c.uid && uint64(sys.Dev) == c.dev
}

// link puts a hard link to src at dst (replacing a file there, unless that is the file
// already) and checks that dst is the file st describes, the one whose content was read
// and guarded. It returns false,
// with nothing left at dst, when the file system refuses the link (another device, no
// hard links, not permitted) or src was replaced since it was read: the caller writes
// the bytes it read instead. Error: dst cannot be removed or examined.
func link(src, dst string, st os.FileInfo) (bool, error) {
	err := os.Link(src, dst)
	if errors.Is(err, fs.ErrExist) {
		if got, lerr := os.Lstat(dst); lerr == nil && os.SameFile(got, st) {
			return true, nil // linked by an earlier merge that stopped before result.json
		}
		if err = os.Remove(dst); err != nil {
			return false, err
		}
		err = os.Link(src, dst)
	}
	if err != nil {
		return false, nil
	}
	got, err := os.Lstat(dst)
	if err != nil {
		return false, err
	}
	if !os.SameFile(got, st) {
		return false, os.Remove(dst)
	}
	return true, nil
}

// readFileStat reads file p whole and returns its content with the status of the
// open file it was read from. Error: it cannot be opened, examined or read.
func readFileStat(p string) ([]byte, os.FileInfo, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	b := make([]byte, 0, st.Size()+1) // +1: the read that finds the end
	for {
		n, err := f.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if errors.Is(err, io.EOF) {
			return b, st, nil
		}
		if err != nil {
			return nil, nil, err
		}
		if len(b) == cap(b) { // the file grew
			b = append(b, 0)[:len(b)]
		}
	}
}

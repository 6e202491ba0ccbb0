package heartbeat

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/agentproof/agentproof/controlplane"
)

// Agent homes (docs/files.md). Every agent run but a fixture program's gets AGENT_HOME:
// a plain directory, <Config.Home>/agent-homes/<company>/<actor>, that the launcher
// passes to the agent (a sandbox provider binds it). Before the launch the runner
// materialises it from the control plane's managed files of the agent's home (the store
// is the truth: files it does not hold are removed, files whose bytes differ are
// rewritten, files whose SHA-256 matches are left alone) and records the baseline, the
// SHA-256 of every path as materialised, in the run's directory (home-baseline.json).
// After the process ends — and for a run orphaned by a server crash, at recovery — it
// saves the directory (controlplane.HomeSave): each regular file is hashed; a file whose
// SHA-256 is its baseline's is verified unchanged and not copied, a changed or new file
// is copied into the store only when its blob is not stored yet, a baseline path that
// is gone is a deletion. Symbolic links, other non-regular files, files over
// controlplane.MaxFileBytes and invalid paths are never read: the receipt names them
// among its problems and their stored versions are kept.

// HomeDirName is the directory of agent homes inside the instance home.
const HomeDirName = "agent-homes"

// BaselineFile is the name of a run's home baseline inside its record directory.
const BaselineFile = "home-baseline.json"

// homeBaseline is what a run's home was materialised to.
type homeBaseline struct {
	Dir   string            `json:"dir"`
	Actor string            `json:"actor"`
	Files map[string]string `json:"files"` // path → SHA-256
}

// HomeDir returns the AGENT_HOME directory of actor in company.
func (r *Runner) HomeDir(company, actor string) string {
	return filepath.Join(r.cfg.Home, HomeDirName, company, actor)
}

// homeFiles returns actor's home files in the state, by path.
func homeFiles(st controlplane.State, actor string) map[string]*controlplane.ManagedFile {
	out := map[string]*controlplane.ManagedFile{}
	for _, f := range st.Files {
		if f.Scope == controlplane.FileScopeAgentHome && f.OwnerID == actor {
			out[f.Path] = f
		}
	}
	return out
}

// materialise makes the home of actor in dir (r.HomeDir for a local agent; on the lease
// disk for a sandboxed one) hold exactly its managed files and returns the baseline.
// Errors: I/O, store reads, a stored layout a directory cannot hold (a file that is
// also another file's directory).
func (r *Runner) materialise(ctx context.Context, c Company, actor, dir string) (homeBaseline, error) {
	if fi, err := os.Lstat(dir); err == nil && !fi.IsDir() {
		if err := os.Remove(dir); err != nil { // a link or file left where the home belongs
			return homeBaseline{}, fmt.Errorf("replacing %s: %w", dir, err)
		}
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return homeBaseline{}, fmt.Errorf("creating the agent home: %w", err)
	}
	st, err := c.Snapshot(ctx)
	if err != nil {
		return homeBaseline{}, err
	}
	want := homeFiles(st, actor)
	base := homeBaseline{Dir: dir, Actor: actor, Files: map[string]string{}}
	have := map[string]bool{}
	var dirs []string
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == dir {
			return nil
		}
		rel := filepath.ToSlash(strings.TrimPrefix(p, dir+string(filepath.Separator)))
		if d.IsDir() {
			dirs = append(dirs, p)
			return nil
		}
		f := want[rel]
		if f != nil && d.Type().IsRegular() {
			if sum, _, err := hashFile(p); err == nil && sum == f.SHA256 {
				have[rel] = true
				return nil
			}
		}
		return os.Remove(p)
	})
	if err != nil {
		return homeBaseline{}, fmt.Errorf("clearing the agent home: %w", err)
	}
	for _, rel := range slices.Sorted(maps.Keys(want)) {
		f := want[rel]
		base.Files[rel] = f.SHA256
		if have[rel] {
			continue
		}
		data, err := c.Blob(ctx, f.SHA256)
		if err != nil {
			return homeBaseline{}, fmt.Errorf("reading %s of the agent home: %w", rel, err)
		}
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			return homeBaseline{}, fmt.Errorf("materialising %s of the agent home: %w", rel, err)
		}
		if err := r.rec.write(p, data); err != nil {
			return homeBaseline{}, fmt.Errorf("materialising %s of the agent home: %w", rel, err)
		}
	}
	// directories that hold no file any more, deepest first
	slices.SortFunc(dirs, func(a, b string) int { return len(b) - len(a) })
	for _, d := range dirs {
		_ = os.Remove(d) // fails (and stays) when not empty
	}
	return base, nil
}

// hashFile hashes the regular file p without following a symbolic link; it returns the
// lower-case hex SHA-256 and the size in bytes. Errors: not a regular file, larger than
// controlplane.MaxFileBytes, I/O.
func hashFile(p string) (string, int64, error) {
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", 0, err
	}
	if !fi.Mode().IsRegular() {
		return "", 0, errors.New("not a regular file")
	}
	h := sha256.New()
	n, err := io.Copy(h, io.LimitReader(f, controlplane.MaxFileBytes+1))
	if err != nil {
		return "", 0, err
	}
	if n > controlplane.MaxFileBytes {
		return "", 0, fmt.Errorf("larger than %d bytes", controlplane.MaxFileBytes)
	}
	return hex.EncodeToString(h.Sum(nil)), n, nil
}

// readFile reads the regular file p without following a symbolic link and checks that
// its bytes still hash to sum.
func readFile(p, sum string) ([]byte, error) {
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, controlplane.MaxFileBytes+1))
	if err != nil {
		return nil, err
	}
	if controlplane.SHA256Hex(b) != sum {
		return nil, errors.New("changed while it was saved")
	}
	return b, nil
}

// saveHome saves the home of a run against its baseline (see the section comment) and
// returns the receipt.
func (r *Runner) saveHome(ctx context.Context, c Company, runID string, base homeBaseline) (controlplane.HomeReceipt, error) {
	save := controlplane.HomeSave{ActorID: base.Actor, RunID: runID, Changes: []controlplane.HomeChange{}, Deletions: []controlplane.HomeDeletion{},
		Unchanged: []controlplane.HomeEntry{}, Problems: []string{}}
	seen := map[string]bool{}
	fi, err := os.Lstat(base.Dir)
	switch {
	case err != nil:
		save.Problems = append(save.Problems, "the home directory is gone: "+err.Error()+"; nothing was saved")
		return c.SaveHome(ctx, save)
	case !fi.IsDir():
		save.Problems = append(save.Problems, "the home directory was replaced by a "+fi.Mode().Type().String()+"; nothing was saved")
		return c.SaveHome(ctx, save)
	}
	entries := 0
	err = filepath.WalkDir(base.Dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == base.Dir || d.IsDir() {
			return nil
		}
		rel := filepath.ToSlash(strings.TrimPrefix(p, base.Dir+string(filepath.Separator)))
		seen[rel] = true
		problem := func(what string) error {
			save.Problems = append(save.Problems, fmt.Sprintf("%s: %s; not saved", clip(rel, 200), what))
			return nil
		}
		if msg := controlplane.ValidFilePath(rel); msg != "" {
			return problem(msg)
		}
		if !d.Type().IsRegular() {
			return problem("not a regular file (" + d.Type().String() + ")")
		}
		if entries++; entries > controlplane.MaxHomeFiles {
			return problem(fmt.Sprintf("more than %d files", controlplane.MaxHomeFiles))
		}
		sum, size, err := hashFile(p)
		if err != nil {
			return problem(err.Error())
		}
		if base.Files[rel] == sum {
			save.Unchanged = append(save.Unchanged, controlplane.HomeEntry{Path: rel, SHA256: sum, ByteSize: size})
			return nil
		}
		if _, stored, err := c.HasBlob(ctx, sum); err != nil {
			return err
		} else if !stored {
			data, err := readFile(p, sum)
			if err != nil {
				return problem(err.Error())
			}
			if _, err := c.PutBlob(ctx, controlplane.BlobPut{Content: data}); err != nil {
				return fmt.Errorf("copying %s into the store: %w", rel, err)
			}
			save.CopiedBytes += size
		}
		save.Changes = append(save.Changes, controlplane.HomeChange{Path: rel, OldSHA256: base.Files[rel], NewSHA256: sum, ByteSize: size})
		return nil
	})
	if err != nil {
		return controlplane.HomeReceipt{}, fmt.Errorf("saving the agent home: %w", err)
	}
	for _, rel := range slices.Sorted(maps.Keys(base.Files)) {
		if !seen[rel] {
			save.Deletions = append(save.Deletions, controlplane.HomeDeletion{Path: rel, OldSHA256: base.Files[rel]})
		}
	}
	return c.SaveHome(ctx, save)
}

// putBaseline stores a run's baseline in its record directory.
func (s records) putBaseline(runID string, b homeBaseline) error {
	d, err := s.runDir(runID)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(d, 0o700); err != nil {
		return err
	}
	data, err := json.Marshal(b)
	if err != nil {
		return err
	}
	return s.write(filepath.Join(d, BaselineFile), data)
}

// baseline reads a run's baseline; false when the run has none.
func (s records) baseline(runID string) (homeBaseline, bool, error) {
	d, err := s.runDir(runID)
	if err != nil {
		return homeBaseline{}, false, err
	}
	data, err := os.ReadFile(filepath.Join(d, BaselineFile))
	if errors.Is(err, fs.ErrNotExist) {
		return homeBaseline{}, false, nil
	}
	if err != nil {
		return homeBaseline{}, false, err
	}
	var b homeBaseline
	if err := json.Unmarshal(data, &b); err != nil {
		return homeBaseline{}, false, fmt.Errorf("heartbeat: decoding the home baseline of %s: %w", runID, err)
	}
	return b, true, nil
}

package heartbeat

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sync"

	"github.com/agentproof/agentproof/api"
	"github.com/agentproof/agentproof/atomicfile"
)

// Record is the runner's durable record of one run (api.HeartbeatRun).
type Record = api.HeartbeatRun

// RecordFile is the name of a run's record inside its directory.
const RecordFile = "run.json"

// safeName bounds every id used as a file name.
var safeName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_:@+=.-]{0,160}$`) })

// records keeps run records and skipped wakes as files under dir:
//
//	dir/runs/<runId>/run.json, stdout.log, stderr.log
//	dir/skipped/<company>/<wakeId>.json
//
// Every file is written atomically (temporary file, fsync, rename); in an ephemeral
// home without the fsyncs (atomicfile.NoSync).
type records struct {
	dir       string
	ephemeral bool
}

// write writes data to path atomically, durably unless the home is ephemeral.
func (s records) write(path string, data []byte) error {
	if s.ephemeral {
		return atomicfile.WriteFile(path, data, 0o600, atomicfile.NoSync())
	}
	return atomicfile.WriteFile(path, data, 0o600)
}

func (s records) runDir(runID string) (string, error) {
	if !safeName().MatchString(runID) {
		return "", fmt.Errorf("heartbeat: run id %q is not a safe file name", runID)
	}
	return filepath.Join(s.dir, "runs", runID), nil
}

// save writes rec atomically.
func (s records) save(rec *Record) error {
	d, err := s.runDir(rec.RunID)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(d, 0o700); err != nil {
		return fmt.Errorf("heartbeat: creating %s: %w", d, err)
	}
	b, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return fmt.Errorf("heartbeat: encoding the record of %s: %w", rec.RunID, err)
	}
	return s.write(filepath.Join(d, RecordFile), append(b, '\n'))
}

// putEvidence stores body (already redacted) next to the run's record.
func (s records) putEvidence(runID, name, mediaType string, body []byte) (api.EvidenceRef, error) {
	d, err := s.runDir(runID)
	if err != nil {
		return api.EvidenceRef{}, err
	}
	if !safeName().MatchString(name) {
		return api.EvidenceRef{}, fmt.Errorf("heartbeat: evidence name %q is not a safe file name", name)
	}
	if err := os.MkdirAll(d, 0o700); err != nil {
		return api.EvidenceRef{}, err
	}
	if err := s.write(filepath.Join(d, name), body); err != nil {
		return api.EvidenceRef{}, err
	}
	sum := sha256.Sum256(body)
	return api.EvidenceRef{Name: name, MediaType: mediaType, Bytes: int64(len(body)), SHA256: hex.EncodeToString(sum[:])}, nil
}

// loadAll reads every run record. A record that does not decode is an error: the
// runner must not guess about a run it cannot read.
func (s records) loadAll() ([]*Record, error) {
	entries, err := os.ReadDir(filepath.Join(s.dir, "runs"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("heartbeat: listing run records: %w", err)
	}
	var out []*Record
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(s.dir, "runs", e.Name(), RecordFile))
		if errors.Is(err, fs.ErrNotExist) {
			continue // the directory was created, the record never committed
		}
		if err != nil {
			return nil, fmt.Errorf("heartbeat: reading the record of %s: %w", e.Name(), err)
		}
		var rec Record
		if err := json.Unmarshal(b, &rec); err != nil {
			return nil, fmt.Errorf("heartbeat: decoding the record of %s: %w", e.Name(), err)
		}
		out = append(out, &rec)
	}
	return out, nil
}

// skippedWake is the durable note that a wake will never be run, and why.
type skippedWake struct {
	CompanyID string `json:"companyId"`
	WakeID    string `json:"wakeId"`
	Reason    string `json:"reason"`
	At        string `json:"at"`
}

func (s records) skip(w skippedWake) error {
	if !safeName().MatchString(w.CompanyID) || !safeName().MatchString(w.WakeID) {
		return fmt.Errorf("heartbeat: wake %s of %s has an unsafe id", w.WakeID, w.CompanyID)
	}
	d := filepath.Join(s.dir, "skipped", w.CompanyID)
	if err := os.MkdirAll(d, 0o700); err != nil {
		return err
	}
	b, err := json.Marshal(w)
	if err != nil {
		return err
	}
	return s.write(filepath.Join(d, w.WakeID+".json"), append(b, '\n'))
}

// loadSkipped returns company → wake id → reason.
func (s records) loadSkipped() (map[string]map[string]string, error) {
	out := map[string]map[string]string{}
	companies, err := os.ReadDir(filepath.Join(s.dir, "skipped"))
	if errors.Is(err, fs.ErrNotExist) {
		return out, nil
	}
	if err != nil {
		return nil, err
	}
	for _, c := range companies {
		files, err := os.ReadDir(filepath.Join(s.dir, "skipped", c.Name()))
		if err != nil {
			return nil, err
		}
		for _, f := range files {
			b, err := os.ReadFile(filepath.Join(s.dir, "skipped", c.Name(), f.Name()))
			if err != nil {
				return nil, err
			}
			var w skippedWake
			if err := json.Unmarshal(b, &w); err != nil {
				return nil, fmt.Errorf("heartbeat: decoding skipped wake %s: %w", f.Name(), err)
			}
			if out[w.CompanyID] == nil {
				out[w.CompanyID] = map[string]string{}
			}
			out[w.CompanyID][w.WakeID] = w.Reason
		}
	}
	return out, nil
}

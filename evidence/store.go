package evidence

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/agentproof/agentproof/atomicfile"
	"github.com/agentproof/agentproof/canonjson"
)

// Store is an on-disk content-addressed evidence store rooted at one directory. It is
// safe for concurrent use by goroutines and by several processes sharing the directory.
type Store struct {
	dir string
}

// Record is one stored piece of evidence.
type Record struct {
	ID       string
	Metadata Metadata
	Body     []byte
}

// Open returns a Store rooted at dir, creating the directory (mode 0o755) if needed.
// dir must be absolute and free of NUL bytes; otherwise Open returns a *ValidationError.
// Filesystem failures are returned wrapped.
func Open(dir string) (*Store, error) {
	var problems []string
	if !filepath.IsAbs(dir) {
		problems = append(problems, fmt.Sprintf("directory %q must be an absolute path", clip(dir)))
	}
	if strings.ContainsRune(dir, 0) {
		problems = append(problems, "directory must not contain NUL bytes")
	}
	if len(problems) > 0 {
		return nil, &ValidationError{What: "evidence store", Problems: problems}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("evidence: creating store directory: %w", err)
	}
	return &Store{dir: filepath.Clean(dir)}, nil
}

// Dir returns the store's root directory.
func (s *Store) Dir() string { return s.dir }

// Encode returns the stored bytes of a record with the given metadata and body, and its
// id (the lower-case hex SHA-256 of those bytes). It returns an error only when the
// metadata cannot be encoded canonically.
func Encode(meta Metadata, body []byte) (id string, data []byte, err error) {
	if meta.Observation.SignalsSent == nil {
		meta.Observation.SignalsSent = []string{}
	}
	cm, err := canonjson.Sorted(meta)
	if err != nil {
		return "", nil, fmt.Errorf("evidence: encoding metadata: %w", err)
	}
	var buf bytes.Buffer
	buf.Grow(len(RecordHeader) + len(cm) + len(body) + 2)
	buf.WriteString(RecordHeader)
	buf.WriteByte('\n')
	buf.Write(cm)
	buf.WriteByte('\n')
	buf.Write(body)
	data = buf.Bytes()
	return canonjson.SHA256Hex(data), data, nil
}

// Decode parses stored record bytes (as Encode produces them) and checks that they hash
// to id. It returns an error wrapping ErrCorrupt for anything else. The data is
// untrusted: Decode never panics.
func Decode(id string, data []byte) (Record, error) {
	if got := canonjson.SHA256Hex(data); got != id {
		return Record{}, fmt.Errorf("%w: content hashes to %s, not %s", ErrCorrupt, got, id)
	}
	rest, ok := bytes.CutPrefix(data, []byte(RecordHeader+"\n"))
	if !ok {
		return Record{}, fmt.Errorf("%w: missing %q header", ErrCorrupt, RecordHeader)
	}
	i := bytes.IndexByte(rest, '\n')
	if i < 0 {
		return Record{}, fmt.Errorf("%w: no metadata line", ErrCorrupt)
	}
	var meta Metadata
	dec := json.NewDecoder(bytes.NewReader(rest[:i]))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&meta); err != nil {
		return Record{}, fmt.Errorf("%w: metadata: %v", ErrCorrupt, err)
	}
	canon, err := canonjson.Sorted(meta)
	if err != nil || !bytes.Equal(canon, rest[:i]) {
		return Record{}, fmt.Errorf("%w: metadata is not in canonical form", ErrCorrupt)
	}
	return Record{ID: id, Metadata: meta, Body: append([]byte(nil), rest[i+1:]...)}, nil
}

// ValidateMetadata checks the pins and check name of meta and returns every problem
// together as one *ValidationError (What "metadata"), or nil.
func ValidateMetadata(meta Metadata) error {
	var problems []string
	var verr *ValidationError
	if _, err := ParsePins(meta.Pins); errors.As(err, &verr) {
		problems = append(problems, verr.Problems...)
	}
	if _, err := ParseCheckName(meta.Check); errors.As(err, &verr) {
		problems = append(problems, "check "+verr.Problems[0])
	}
	if len(problems) > 0 {
		return &ValidationError{What: "metadata", Problems: problems}
	}
	return nil
}

// Put stores one record and returns its id. Storing a record that already exists is
// not an error and returns the same id (content addressing makes Put idempotent). The
// write is atomic: a temp file in the destination directory is written, fsynced, and
// renamed into place, then the directory is fsynced; readers never see a partial record.
// Metadata pins and check are validated first (a *ValidationError); filesystem failures
// are returned wrapped.
func (s *Store) Put(meta Metadata, body []byte) (string, error) {
	if err := ValidateMetadata(meta); err != nil {
		return "", err
	}
	id, data, err := Encode(meta, body)
	if err != nil {
		return "", err
	}
	sub := filepath.Join(s.dir, id[:2])
	if err := os.MkdirAll(sub, 0o755); err != nil {
		return "", fmt.Errorf("evidence: creating %s: %w", sub, err)
	}
	final := filepath.Join(sub, id)
	if _, err := os.Stat(final); err == nil {
		return id, nil
	}
	// Rename over an identical record written concurrently is harmless: same bytes.
	if err := atomicfile.WriteFile(final, data, 0o600); err != nil {
		return "", fmt.Errorf("evidence: %w", err)
	}
	return id, nil
}

// Get reads and verifies the record with the given id. It returns a *ValidationError
// for a malformed id, an error wrapping ErrNotFound when there is no such record, and
// one wrapping ErrCorrupt when the stored bytes do not hash to id or do not parse.
func (s *Store) Get(id string) (Record, error) {
	if _, err := ParseID(id); err != nil {
		return Record{}, err
	}
	data, err := os.ReadFile(filepath.Join(s.dir, id[:2], id))
	if errors.Is(err, fs.ErrNotExist) {
		return Record{}, fmt.Errorf("evidence: %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return Record{}, fmt.Errorf("evidence: reading %s: %w", id, err)
	}
	rec, err := Decode(id, data)
	if err != nil {
		return Record{}, fmt.Errorf("evidence: %s: %w", id, err)
	}
	return rec, nil
}

// List returns the ids of every record in the store, sorted. Temp files of writes in
// progress and anything that is not named like a record id are ignored.
func (s *Store) List() ([]string, error) {
	var ids []string
	subs, err := os.ReadDir(s.dir)
	if err != nil {
		return nil, fmt.Errorf("evidence: listing %s: %w", s.dir, err)
	}
	for _, sub := range subs {
		if !sub.IsDir() || len(sub.Name()) != 2 {
			continue
		}
		entries, err := os.ReadDir(filepath.Join(s.dir, sub.Name()))
		if err != nil {
			return nil, fmt.Errorf("evidence: listing %s: %w", sub.Name(), err)
		}
		for _, e := range entries {
			if idPattern().MatchString(e.Name()) && strings.HasPrefix(e.Name(), sub.Name()) && e.Type().IsRegular() {
				ids = append(ids, e.Name())
			}
		}
	}
	sort.Strings(ids)
	return ids, nil
}

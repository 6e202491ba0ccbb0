// Package workspace snapshots an attempt's workspace after its runs (docs/processes.md "Workspace
// snapshot"): a manifest of every entry — regular
// files with their size and SHA-256, symbolic links with their target (never
// followed), other files (FIFOs, sockets, devices) by type only, never opened — and the
// bytes of the files the matchers may read.
//
// The workspace is the agent's: it may hold a file of any size, sparse or not, a FIFO
// or a link to anywhere. A snapshot streams every regular file through SHA-256 in
// fixed-size chunks and never holds a whole file it was not asked to load: a file is
// loaded for the matchers only when it is at most Limits.MaxFileBytes long and the
// snapshot's Limits.MaxTotalBytes load budget still has room; every other file is
// hashed and listed, with a note saying why it was not loaded. Hashing is bounded too
// (Limits.MaxHashBytes over the snapshot), as is the number of entries listed.
package workspace

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// ManifestSchema tags the manifest document (workspace-manifest.json).
const ManifestSchema = "agentproof.workspace-manifest/v1"

// Entry types (Entry.Type).
const (
	// TypeFile is a regular file: Bytes and SHA256 describe its content.
	TypeFile = "file"
	// TypeSymlink is a symbolic link: Target is what it points to, as written; it is
	// never followed.
	TypeSymlink = "symlink"
	// TypeOther is anything else but a directory (FIFO, socket, device): listed with
	// its mode, never opened.
	TypeOther = "other"
)

// Default limits (Limits fields left zero).
const (
	// DefaultMaxFileBytes is the largest file loaded for the matchers (4 MiB).
	DefaultMaxFileBytes = 4 << 20
	// DefaultMaxTotalBytes bounds the bytes loaded for the matchers over a snapshot
	// (64 MiB).
	DefaultMaxTotalBytes = 64 << 20
	// DefaultMaxHashBytes bounds the bytes hashed over a snapshot (16 GiB): beyond it
	// files are listed with their size only.
	DefaultMaxHashBytes = 16 << 30
	// DefaultMaxEntries bounds the entries listed (the manifest is then truncated).
	DefaultMaxEntries = 100_000
)

// chunkBytes is the read size of the streaming hash.
const chunkBytes = 64 << 10

// Limits bound a snapshot (bytes unless said otherwise; zero means the default).
type Limits struct {
	MaxFileBytes  int64
	MaxTotalBytes int64
	MaxHashBytes  int64
	MaxEntries    int
}

func (l Limits) withDefaults() Limits {
	if l.MaxFileBytes <= 0 {
		l.MaxFileBytes = DefaultMaxFileBytes
	}
	if l.MaxTotalBytes <= 0 {
		l.MaxTotalBytes = DefaultMaxTotalBytes
	}
	if l.MaxHashBytes <= 0 {
		l.MaxHashBytes = DefaultMaxHashBytes
	}
	if l.MaxEntries <= 0 {
		l.MaxEntries = DefaultMaxEntries
	}
	return l
}

// Entry is one manifest line: Path (slash-separated, relative to the workspace), Type
// (TypeFile, TypeSymlink, TypeOther), Bytes (a file's size as read; a link's target
// length; 0 otherwise), SHA256 (hex, files only; "" when not hashed), Target (links
// only), Mode (TypeOther only, as fs.FileMode prints it), Loaded (the file's bytes are
// in Snapshot.Files) and Note (why a file was not loaded or not hashed).
type Entry struct {
	Path   string `json:"path"`
	Type   string `json:"type"`
	Bytes  int64  `json:"bytes"`
	SHA256 string `json:"sha256,omitempty"`
	Target string `json:"target,omitempty"`
	Mode   string `json:"mode,omitempty"`
	Loaded bool   `json:"loaded,omitempty"`
	Note   string `json:"note,omitempty"`
}

// Snapshot is one look at a workspace: Files holds the loaded files (path → bytes),
// Manifest every entry in lexical path order, Truncated whether the entry limit cut
// the listing short, LoadedBytes and HashedBytes what was loaded and hashed.
type Snapshot struct {
	Files       map[string][]byte
	Manifest    []Entry
	Truncated   bool
	LoadedBytes int64
	HashedBytes int64
}

// Document is the manifest as workspace-manifest.json holds it: {schema, files,
// truncated}.
func (s *Snapshot) Document() any {
	return struct {
		Schema    string  `json:"schema"`
		Files     []Entry `json:"files"`
		Truncated bool    `json:"truncated,omitempty"`
	}{ManifestSchema, s.Manifest, s.Truncated}
}

// Take snapshots the workspace at root within lim. Errors: root or an entry below it
// cannot be listed or read (the snapshot is then incomplete and returned as nil), or
// ctx ended.
func Take(ctx context.Context, root string, lim Limits) (*Snapshot, error) {
	lim = lim.withDefaults()
	s := &Snapshot{Files: map[string][]byte{}, Manifest: []Entry{}}
	buf := make([]byte, chunkBytes)
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		if len(s.Manifest) >= lim.MaxEntries {
			s.Truncated = true
			return filepath.SkipAll
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		e := Entry{Path: filepath.ToSlash(rel)}
		switch t := d.Type(); {
		case t&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			e.Type, e.Target, e.Bytes = TypeSymlink, target, int64(len(target))
		case t.IsRegular():
			e.Type = TypeFile
			if err := s.file(ctx, p, &e, lim, buf); err != nil {
				return err
			}
		default:
			e.Type, e.Mode = TypeOther, t.String()
		}
		s.Manifest = append(s.Manifest, e)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("workspace: %w", err)
	}
	return s, nil
}

// file hashes the regular file p in chunks and loads it when the limits allow.
func (s *Snapshot) file(ctx context.Context, p string, e *Entry, lim Limits, buf []byte) error {
	// O_NOFOLLOW and O_NONBLOCK: a link or FIFO swapped in after the listing is
	// neither followed nor waited on; fstat then says what was opened.
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if !st.Mode().IsRegular() {
		e.Type, e.Mode = TypeOther, st.Mode().Type().String()
		return nil
	}
	size := st.Size()
	load, note := s.loadBuffer(size, lim) // nil: not loading
	if note != "" {
		e.Note = note
	}
	hashing := s.HashedBytes+size <= lim.MaxHashBytes
	if !hashing && load == nil {
		e.Bytes = size
		e.Note = joinNote(e.Note, fmt.Sprintf("not hashed: the snapshot's %d-byte hash budget is spent", lim.MaxHashBytes))
		return nil
	}
	h := sha256.New()
	var n int64
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		k, err := f.Read(buf)
		if k > 0 {
			n += int64(k)
			if hashing && s.HashedBytes+n > lim.MaxHashBytes {
				hashing = false
				e.Note = joinNote(e.Note, fmt.Sprintf("not hashed: the snapshot's %d-byte hash budget is spent", lim.MaxHashBytes))
			}
			if hashing {
				h.Write(buf[:k])
			}
			if load != nil {
				if int64(len(load)+k) > lim.MaxFileBytes || s.LoadedBytes+int64(len(load)+k) > lim.MaxTotalBytes {
					load = nil // it grew while being read
					e.Note = joinNote(e.Note, "not loaded: it grew past the limits while being read")
				} else {
					load = append(load, buf[:k]...)
				}
			}
			if !hashing && load == nil {
				// Neither hashed nor loaded any more: its size is what stat said.
				n = max(n, size)
				break
			}
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
	}
	e.Bytes = n
	if hashing {
		e.SHA256 = hex.EncodeToString(h.Sum(nil))
		s.HashedBytes += n
	}
	if load != nil {
		s.Files[e.Path] = load
		s.LoadedBytes += int64(len(load))
		e.Loaded = true
	}
	return nil
}

// loadBuffer is the buffer a file of size bytes is loaded into (capacity size), or nil
// with the note saying why it is not loaded: over the file cap, or the snapshot's load
// budget spent.
func (s *Snapshot) loadBuffer(size int64, lim Limits) ([]byte, string) {
	switch {
	case size > lim.MaxFileBytes:
		return nil, fmt.Sprintf("not loaded: %d bytes, over the %d-byte file cap", size, lim.MaxFileBytes)
	case s.LoadedBytes+size > lim.MaxTotalBytes:
		return nil, fmt.Sprintf("not loaded: the snapshot's %d-byte load budget is spent", lim.MaxTotalBytes)
	}
	return make([]byte, 0, size), ""
}

func joinNote(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

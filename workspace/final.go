package workspace

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"unicode/utf8"
)

// FinalSchema tags the final workspace document (workspace-final.json).
const FinalSchema = "agentproof.workspace-final/v1"

// FinalFile is the evidence file of the final workspace of an attempt whose case has
// a verifier.
const FinalFile = "workspace-final.json"

// DefaultFinalMaxBytes bounds the bytes of file content a final workspace keeps (16
// MiB) when its taker gives no bound.
const DefaultFinalMaxBytes = 16 << 20

// finalMaxEntries bounds the entries a final workspace lists.
const finalMaxEntries = 20_000

// Final is the workspace as the agent left it, whole, so that a verifier can run again
// against a fresh copy of it (docs/regrade.md): every directory, regular file (its
// permission bits, size, SHA-256 and content: Text when it is valid UTF-8, else
// Base64) and symbolic link (its target, never followed). Other files (FIFOs,
// sockets, devices) cannot be kept: they make it Truncated. MaxBytes is the bound on
// the content kept; a workspace over it (or over finalMaxEntries entries) is
// Truncated, with Note saying which bound, and its entries are then incomplete.
type Final struct {
	Schema    string       `json:"schema"`
	MaxBytes  int64        `json:"maxBytes"`
	Truncated bool         `json:"truncated"`
	Note      string       `json:"note,omitempty"`
	Entries   []FinalEntry `json:"entries"`
}

// FinalEntry is one entry of a Final: Path (slash-separated, relative), Type ("dir",
// TypeFile or TypeSymlink), Mode (the permission bits in octal, "0755"), Bytes and
// SHA256 (files), Text or Base64 (a file's content), Target (links).
type FinalEntry struct {
	Path   string `json:"path"`
	Type   string `json:"type"`
	Mode   string `json:"mode,omitempty"`
	Bytes  int64  `json:"bytes,omitempty"`
	SHA256 string `json:"sha256,omitempty"`
	Text   string `json:"text,omitempty"`
	Base64 string `json:"base64,omitempty"`
	Target string `json:"target,omitempty"`
}

// typeDir is a directory entry of a Final.
const typeDir = "dir"

// TakeFinal reads the workspace at root whole within maxBytes of file content (0 or
// less: DefaultFinalMaxBytes), in lexical path order. It never follows a link. Errors:
// root or an entry below it cannot be read, or ctx ended (a bound reached is no
// error: the Final is Truncated).
func TakeFinal(ctx context.Context, root string, maxBytes int64) (*Final, error) {
	if maxBytes <= 0 {
		maxBytes = DefaultFinalMaxBytes
	}
	f := &Final{Schema: FinalSchema, MaxBytes: maxBytes, Entries: []FinalEntry{}}
	budget := maxBytes
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if p == root {
			return nil
		}
		if len(f.Entries) >= finalMaxEntries {
			f.truncate(fmt.Sprintf("more than %d entries", finalMaxEntries))
			return filepath.SkipAll
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		e, keep, err := finalEntry(p, filepath.ToSlash(rel), d, &budget)
		if err != nil {
			return err
		}
		if !keep {
			f.truncate(e.Path)
			return nil
		}
		f.Entries = append(f.Entries, e)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("workspace: final snapshot: %w", err)
	}
	if budget < 0 {
		f.truncate(fmt.Sprintf("its files hold more than the %d-byte bound", maxBytes))
	}
	return f, nil
}

// truncate marks f truncated, with why (the first reason is kept).
func (f *Final) truncate(why string) {
	if !f.Truncated {
		f.Truncated, f.Note = true, why
	}
}

// finalEntry reads one entry below the root. keep is false for an entry a Final
// cannot hold (e.Path then says why); budget is what is left of the content bound
// (below zero: it was exceeded and the file's content is not kept).
func finalEntry(p, rel string, d fs.DirEntry, budget *int64) (e FinalEntry, keep bool, err error) {
	e = FinalEntry{Path: rel}
	info, err := d.Info()
	if err != nil {
		return e, false, err
	}
	switch t := d.Type(); {
	case t.IsDir():
		e.Type, e.Mode = typeDir, fmt.Sprintf("%04o", info.Mode().Perm())
		return e, true, nil
	case t&fs.ModeSymlink != 0:
		e.Type = TypeSymlink
		e.Target, err = os.Readlink(p)
		return e, err == nil, err
	case !t.IsRegular():
		return FinalEntry{Path: rel + " is a " + t.Type().String() + " (not kept)"}, false, nil
	}
	e.Type, e.Mode, e.Bytes = TypeFile, fmt.Sprintf("%04o", info.Mode().Perm()), info.Size()
	if *budget -= info.Size(); *budget < 0 {
		return FinalEntry{Path: fmt.Sprintf("%s (%d bytes) is over what is left of the bound", rel, info.Size())}, false, nil
	}
	b, err := readRegular(p, info.Size())
	if err != nil {
		return e, false, err
	}
	sum := sha256.Sum256(b)
	e.SHA256, e.Bytes = hex.EncodeToString(sum[:]), int64(len(b))
	if utf8.Valid(b) {
		e.Text = string(b)
	} else {
		e.Base64 = base64.StdEncoding.EncodeToString(b)
	}
	return e, true, nil
}

// readRegular reads at most size bytes of the regular file p, never following a link
// swapped in after the listing, never waiting on a FIFO.
func readRegular(p string, size int64) ([]byte, error) {
	fh, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	if st, err := fh.Stat(); err != nil || !st.Mode().IsRegular() {
		return nil, errors.Join(err, fmt.Errorf("%s is no longer a regular file", p))
	}
	return io.ReadAll(io.LimitReader(fh, size))
}

// Files maps the path of every regular file of f to its content (what a file matcher
// reads).
func (f *Final) Files() (map[string][]byte, error) {
	out := map[string][]byte{}
	for _, e := range f.Entries {
		if e.Type != TypeFile {
			continue
		}
		b, err := e.content()
		if err != nil {
			return nil, err
		}
		out[e.Path] = b
	}
	return out, nil
}

// content is a file entry's content, checked against its SHA-256. Errors: the content
// does not decode or does not match (the evidence guard redacted a secret in it).
func (e FinalEntry) content() ([]byte, error) {
	b := []byte(e.Text)
	if e.Base64 != "" {
		var err error
		if b, err = base64.StdEncoding.DecodeString(e.Base64); err != nil {
			return nil, fmt.Errorf("%s: its content does not decode: %w", e.Path, err)
		}
	}
	sum := sha256.Sum256(b)
	if hex.EncodeToString(sum[:]) != e.SHA256 {
		return nil, fmt.Errorf("%s: its kept content does not match its SHA-256 (it was redacted: it held a secret)", e.Path)
	}
	return b, nil
}

// Restore writes f into dir, which must be empty or absent: directories, files with
// their permission bits and links as recorded. Paths are checked to stay below dir
// (through an os.Root). Errors: a truncated Final, an entry that does not match its
// digest, an unsafe path, a write error.
func (f *Final) Restore(dir string) error {
	if f.Truncated {
		return fmt.Errorf("the final workspace is incomplete: %s", f.Note)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	for _, e := range f.Entries {
		if !fs.ValidPath(e.Path) || strings.Contains(e.Path, "\\") {
			return fmt.Errorf("entry %q: not a clean relative path", e.Path)
		}
		if err := restoreEntry(root, e); err != nil {
			return fmt.Errorf("entry %s: %w", e.Path, err)
		}
	}
	return nil
}

// restoreEntry writes one entry below root.
func restoreEntry(root *os.Root, e FinalEntry) error {
	var mode fs.FileMode = 0o644
	if e.Mode != "" {
		var m uint32
		if _, err := fmt.Sscanf(e.Mode, "%o", &m); err != nil {
			return fmt.Errorf("mode %q: %w", e.Mode, err)
		}
		mode = fs.FileMode(m).Perm()
	}
	name := filepath.FromSlash(e.Path)
	switch e.Type {
	case typeDir:
		if err := root.Mkdir(name, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return err
		}
		return root.Chmod(name, mode)
	case TypeSymlink:
		return root.Symlink(e.Target, name)
	case TypeFile:
		b, err := e.content()
		if err != nil {
			return err
		}
		if err := root.WriteFile(name, b, mode); err != nil {
			return err
		}
		return root.Chmod(name, mode)
	}
	return fmt.Errorf("type %q is not one a final workspace keeps", e.Type)
}

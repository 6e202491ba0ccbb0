package source

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"strconv"
)

// TreeDigest is the digest of the directory tree fsys: "sha256:" and the SHA-256 of
// its canonical listing, every entry but the root in lexical path order (fs.WalkDir's),
// each as NUL-separated fields ending in a newline:
//
//	d NUL <path> NUL LF                                   a directory
//	f NUL <0644|0755> NUL <size> NUL <sha256 hex> NUL <path> NUL LF   a regular file
//	l NUL <target> NUL <path> NUL LF                      a symbolic link (not followed)
//
// A file's mode is 0755 when any execute bit is set, else 0644 (what Materialize
// writes), so that the digest names exactly what a workspace is seeded with. Errors:
// an entry that is neither (a FIFO, a device), more than lim's entries or bytes
// (ErrLimit), a read error.
func TreeDigest(fsys fs.FS, lim Limits) (string, error) {
	lim = lim.withDefaults()
	h := sha256.New()
	var files int
	var bytes int64
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == "." {
			return nil
		}
		if files++; files > lim.MaxFiles {
			return fmt.Errorf("%w: more than %d entries", ErrLimit, lim.MaxFiles)
		}
		switch t := d.Type(); {
		case d.IsDir():
			writeFields(h, "d", p)
		case t&fs.ModeSymlink != 0:
			target, err := fs.ReadLink(fsys, p)
			if err != nil {
				return err
			}
			writeFields(h, "l", target, p)
		case t.IsRegular():
			n, sum, mode, err := fileSum(fsys, p)
			if err != nil {
				return err
			}
			if bytes += n; bytes > lim.MaxBytes {
				return fmt.Errorf("%w: more than %d bytes", ErrLimit, lim.MaxBytes)
			}
			writeFields(h, "f", fmt.Sprintf("%04o", fileMode(mode)), strconv.FormatInt(n, 10), sum, p)
		default:
			return fmt.Errorf("entry %s is %s: a workspace source holds only directories, regular files and symbolic links", p, t.Type())
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
}

func writeFields(h hash.Hash, fields ...string) {
	for _, f := range fields {
		_, _ = io.WriteString(h, f)
		_, _ = h.Write([]byte{0})
	}
	_, _ = h.Write([]byte{'\n'})
}

// fileSum streams p through SHA-256: its size, hex digest and mode.
func fileSum(fsys fs.FS, p string) (int64, string, fs.FileMode, error) {
	f, err := fsys.Open(p)
	if err != nil {
		return 0, "", 0, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return 0, "", 0, err
	}
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return 0, "", 0, fmt.Errorf("reading %s: %w", p, err)
	}
	return n, hex.EncodeToString(h.Sum(nil)), fi.Mode(), nil
}

// FileDigest is the digest of one file of fsys (an archive): "sha256:" and the SHA-256
// of its bytes. Errors: the file cannot be read, it is not a regular file.
func FileDigest(fsys fs.FS, name string) (string, error) {
	fi, err := fs.Stat(fsys, name)
	if err != nil {
		return "", err
	}
	if !fi.Mode().IsRegular() {
		return "", fmt.Errorf("%s is not a regular file", name)
	}
	n, sum, _, err := fileSum(fsys, name)
	if err != nil {
		return "", err
	}
	if n > DefaultMaxBytes {
		return "", fmt.Errorf("%w: %s has more than %d bytes", ErrLimit, name, int64(DefaultMaxBytes))
	}
	return "sha256:" + sum, nil
}

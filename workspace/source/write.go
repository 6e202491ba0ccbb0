package source

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
)

// writer writes a source's entries under root, counting them against lim.
type writer struct {
	root   *os.Root
	lim    Limits
	seeded Seeded
}

// count adds one entry of n content bytes; ErrLimit when over a limit.
func (w *writer) count(n int64) error {
	w.seeded.Files++
	w.seeded.Bytes += n
	if w.seeded.Files > w.lim.MaxFiles {
		return fmt.Errorf("%w: more than %d entries", ErrLimit, w.lim.MaxFiles)
	}
	if w.seeded.Bytes > w.lim.MaxBytes {
		return fmt.Errorf("%w: more than %d bytes", ErrLimit, w.lim.MaxBytes)
	}
	return nil
}

// fileMode is the mode a seeded file gets: 0755 when any execute bit is set, else
// 0644 (the owner, group and others bits of an archive are not kept).
func fileMode(m fs.FileMode) fs.FileMode {
	if m&0o111 != 0 {
		return 0o755
	}
	return 0o644
}

// cleanName checks an entry name of a source (an archive's or a directory walk's) and
// returns it as a clean, relative, slash-separated path: "" for the root itself.
// Absolute names, ".." anywhere, NUL bytes and names longer than 4096 bytes are refused.
func cleanName(name string) (string, error) {
	n := strings.TrimPrefix(name, "./")
	if n == "" || n == "." || n == "./" {
		return "", nil
	}
	if len(name) > 4096 || strings.ContainsRune(name, 0) || strings.HasPrefix(n, "/") {
		return "", fmt.Errorf("entry %q: names must be relative paths of at most 4096 bytes", clip(name))
	}
	c := path.Clean(strings.TrimSuffix(n, "/"))
	if !fs.ValidPath(c) {
		return "", fmt.Errorf("entry %q: a name with \"..\" or an empty element is refused", clip(name))
	}
	return c, nil
}

func clip(s string) string {
	if len(s) > 120 {
		return s[:117] + "..."
	}
	return s
}

// mkdirs creates dir (a clean relative path) and its parents under the root.
func (w *writer) mkdirs(dir string) error {
	if dir == "" || dir == "." {
		return nil
	}
	if err := w.root.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("directory %s: %w", dir, err)
	}
	return nil
}

// writeFile creates name (refusing an existing one) with r's content.
func (w *writer) writeFile(name string, r io.Reader, size int64, mode fs.FileMode) error {
	if err := w.count(size); err != nil {
		return err
	}
	if err := w.mkdirs(path.Dir(name)); err != nil {
		return err
	}
	f, err := w.root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, fileMode(mode))
	if err != nil {
		return fmt.Errorf("file %s: %w", name, err)
	}
	n, err := io.Copy(f, io.LimitReader(r, size+1))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil && n != size {
		err = fmt.Errorf("%d bytes read, %d announced", n, size)
	}
	if err != nil {
		return fmt.Errorf("file %s: %w", name, err)
	}
	return nil
}

// symlink creates name as a symbolic link to target (kept as written: the root keeps
// every later write from following it out).
func (w *writer) symlink(name, target string) error {
	if err := w.count(0); err != nil {
		return err
	}
	if target == "" || len(target) > 4096 || strings.ContainsRune(target, 0) {
		return fmt.Errorf("link %s: its target must be 1 to 4096 bytes", name)
	}
	if err := w.mkdirs(path.Dir(name)); err != nil {
		return err
	}
	if err := w.root.Symlink(target, name); err != nil {
		return fmt.Errorf("link %s: %w", name, err)
	}
	return nil
}

// copyTree copies every entry of fsys (directories, regular files, symbolic links as
// links) under the root.
func (w *writer) copyTree(ctx context.Context, fsys fs.FS) error {
	return fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if p == "." {
			return nil
		}
		switch t := d.Type(); {
		case d.IsDir():
			if err := w.count(0); err != nil {
				return err
			}
			return w.mkdirs(p)
		case t&fs.ModeSymlink != 0:
			target, err := fs.ReadLink(fsys, p)
			if err != nil {
				return err
			}
			return w.symlink(p, target)
		case t.IsRegular():
			return w.copyFile(fsys, p)
		default:
			return fmt.Errorf("entry %s is %s: only directories, regular files and symbolic links are copied", p, t.Type())
		}
	})
}

func (w *writer) copyFile(fsys fs.FS, p string) error {
	f, err := fsys.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("entry %s is no longer a regular file", p)
	}
	return w.writeFile(p, f, fi.Size(), fi.Mode())
}

// extractFile extracts the archive name of fsys (gzip-compressed when its name ends
// in .gz or .tgz) and returns the digest of the archive's bytes, read to their end.
func (w *writer) extractFile(ctx context.Context, fsys fs.FS, name string) (string, error) {
	f, err := fsys.Open(name)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	r := io.TeeReader(f, h)
	if gzipped(name) {
		zr, err := gzip.NewReader(r)
		if err != nil {
			return "", fmt.Errorf("archive %s: %w", name, err)
		}
		defer zr.Close()
		r = zr
	}
	if err := w.extract(ctx, r); err != nil {
		return "", err
	}
	// The tar reader stops at the end-of-archive marker: the padding after it is
	// still part of the bytes the digest names.
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("archive %s: %w", name, err)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
}

func gzipped(name string) bool {
	return strings.HasSuffix(name, ".gz") || strings.HasSuffix(name, ".tgz")
}

// extract writes every entry of the tar stream r under the root: directories, regular
// files and symbolic links; pax global headers are skipped; anything else (hard links,
// devices, FIFOs) and any unsafe name is refused, naming the entry.
func (w *writer) extract(ctx context.Context, r io.Reader) error {
	tr := tar.NewReader(r)
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("archive: %w", err)
		}
		if h.Typeflag == tar.TypeXGlobalHeader {
			continue
		}
		name, err := cleanName(h.Name)
		if err != nil {
			return err
		}
		if err := w.entry(tr, h, name); err != nil {
			return err
		}
	}
}

// entry writes one archive entry.
func (w *writer) entry(tr *tar.Reader, h *tar.Header, name string) error {
	switch h.Typeflag {
	case tar.TypeDir:
		if err := w.count(0); err != nil {
			return err
		}
		return w.mkdirs(name)
	case tar.TypeReg:
		if name == "" || h.Size < 0 {
			return fmt.Errorf("entry %q: a file needs a name and a size", clip(h.Name))
		}
		return w.writeFile(name, tr, h.Size, fs.FileMode(h.Mode))
	case tar.TypeSymlink:
		if name == "" {
			return fmt.Errorf("entry %q: a link needs a name", clip(h.Name))
		}
		return w.symlink(name, h.Linkname)
	default:
		return fmt.Errorf("entry %q has type %q: only directories, regular files and symbolic links are extracted", clip(h.Name), string(h.Typeflag))
	}
}

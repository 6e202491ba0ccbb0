package redact

import (
	"archive/zip"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// chunkSize is the read size of streaming scans, in bytes.
const chunkSize = 64 << 10

// ScanReader scans a stream chunk by chunk for the first leak (exact values, and shapes
// when shapes is true), keeping Overlap() bytes between chunks so that a secret split
// across two reads is found. Memory is bounded by chunkSize + Overlap(). Where is the
// byte offset in the stream. It returns the reader's error, if any.
func (s *Set) ScanReader(r io.Reader, shapes bool) (Leak, bool, error) {
	return s.scanReader(r, shapes, &scanBufs{})
}

// scanBufs are ScanReader's two buffers, kept across the files of one ScanTree (a
// tree of small files would otherwise allocate 128 KiB for each).
type scanBufs struct{ buf, chunk []byte }

// scanReader is ScanReader with its buffers in b (allocated on first use).
func (s *Set) scanReader(r io.Reader, shapes bool, b *scanBufs) (Leak, bool, error) {
	overlap := s.Overlap()
	if cap(b.buf) < chunkSize+overlap {
		b.buf = make([]byte, 0, chunkSize+overlap)
	}
	if len(b.chunk) < chunkSize {
		b.chunk = make([]byte, chunkSize)
	}
	buf, chunk := b.buf[:0], b.chunk[:chunkSize]
	var base int64 // stream offset of buf[0]
	for {
		n, err := r.Read(chunk)
		if n > 0 {
			buf = append(buf, chunk[:n]...)
			if l, off, ok := s.find(buf, shapes); ok {
				l.Where = fmt.Sprintf("byte %d", base+int64(off))
				return l, true, nil
			}
			if len(buf) > overlap {
				drop := len(buf) - overlap
				base += int64(drop)
				buf = append(buf[:0], buf[drop:]...)
			}
		}
		if errors.Is(err, io.EOF) {
			return Leak{}, false, nil
		}
		if err != nil {
			return Leak{}, false, err
		}
	}
}

// SafePath returns a path fit to name a file in a report: p itself, or, when a file or
// directory name in it holds a secret (exact or shaped), p with every secret redacted
// (RedactText), so that naming the file never reveals the value.
func (s *Set) SafePath(p string) string {
	if _, ok := s.FindLeak([]byte(p), true); ok {
		return s.RedactText(p)
	}
	return p
}

// FileLeak is a leak found in a file of a scanned tree; Path is relative to the root
// (slash-separated), with "!member" for an archive member.
type FileLeak struct {
	Path string `json:"path"`
	Leak Leak   `json:"leak"`
}

// ScanTree scans every regular file under root (symbolic links are not followed and are
// reported by path only if their target text leaks) for exact secrets and, when shapes is
// true, secret shapes. Zip archives are scanned member by member and gzip files through
// decompression; an archive that cannot be read is reported as ReasonUninspectable. It
// returns all leaks (at most one per file or member) in walk order, and an error if the
// tree could not be walked.
func (s *Set) ScanTree(root string, shapes bool) ([]FileLeak, error) {
	var out []FileLeak
	bufs := &scanBufs{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("scanning %s: %w", path, err)
		}
		raw, _ := filepath.Rel(root, path)
		raw = filepath.ToSlash(raw)
		rel := s.SafePath(raw)
		if rel != raw && d.Name() != "" {
			if l, ok := s.FindLeak([]byte(d.Name()), shapes); ok {
				l.Where = "file name"
				out = append(out, FileLeak{Path: rel, Leak: l})
			}
		}
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(path)
			if err == nil {
				if l, ok := s.FindLeak([]byte(target), shapes); ok {
					l.Where = "symlink target"
					out = append(out, FileLeak{Path: rel, Leak: l})
				}
			}
			return nil
		case !d.Type().IsRegular():
			return nil
		}
		leaks, err := s.scanFile(path, rel, shapes, bufs)
		if err != nil {
			return err
		}
		out = append(out, leaks...)
		return nil
	})
	return out, err
}

func (s *Set) scanFile(path, rel string, shapes bool, bufs *scanBufs) ([]FileLeak, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("scanning %s: %w", rel, err)
	}
	defer f.Close()
	var out []FileLeak
	if l, ok, err := s.scanReader(f, shapes, bufs); err != nil {
		return nil, fmt.Errorf("scanning %s: %w", rel, err)
	} else if ok {
		out = append(out, FileLeak{Path: rel, Leak: l})
	}
	lower := strings.ToLower(rel)
	switch {
	case strings.HasSuffix(lower, ".zip"):
		out = append(out, s.scanZip(path, rel, shapes)...)
	case strings.HasSuffix(lower, ".gz") || strings.HasSuffix(lower, ".tgz"):
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return nil, fmt.Errorf("scanning %s: %w", rel, err)
		}
		out = append(out, s.scanGzip(f, rel, shapes)...)
	}
	return out, nil
}

func (s *Set) scanZip(path, rel string, shapes bool) []FileLeak {
	zr, err := zip.OpenReader(path)
	if err != nil {
		return []FileLeak{{Path: rel, Leak: Leak{Reason: ReasonUninspectable, Where: "zip archive"}}}
	}
	defer zr.Close()
	var out []FileLeak
	for _, m := range zr.File {
		name := rel + "!" + s.SafePath(m.Name)
		if l, ok := s.FindLeak([]byte(m.Name), shapes); ok {
			l.Where = "member name"
			out = append(out, FileLeak{Path: rel, Leak: l})
			name = rel + "!<member>"
		}
		rc, err := m.Open()
		if err != nil {
			out = append(out, FileLeak{Path: name, Leak: Leak{Reason: ReasonUninspectable, Where: "zip member"}})
			continue
		}
		l, ok, err := s.ScanReader(rc, shapes)
		rc.Close()
		switch {
		case err != nil:
			out = append(out, FileLeak{Path: name, Leak: Leak{Reason: ReasonUninspectable, Where: "zip member"}})
		case ok:
			out = append(out, FileLeak{Path: name, Leak: l})
		}
	}
	return out
}

func (s *Set) scanGzip(r io.Reader, rel string, shapes bool) []FileLeak {
	zr, err := gzip.NewReader(r)
	if err != nil {
		return []FileLeak{{Path: rel, Leak: Leak{Reason: ReasonUninspectable, Where: "gzip stream"}}}
	}
	defer zr.Close()
	l, ok, err := s.ScanReader(zr, shapes)
	switch {
	case err != nil:
		return []FileLeak{{Path: rel, Leak: Leak{Reason: ReasonUninspectable, Where: "gzip stream"}}}
	case ok:
		return []FileLeak{{Path: rel + "!gunzip", Leak: l}}
	}
	return nil
}

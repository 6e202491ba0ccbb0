package container

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"
)

// NodeSource is the imageFrom value naming NodeImage: an image built on this machine
// from the host's Node.js binary, the shared libraries it loads, and Debian's
// busybox-static.
const NodeSource = "nodejs"

// ImageSources are the imageFrom values the harness builds on this machine.
var ImageSources = []string{BusyboxSource, NodeSource}

// imageFile is one host file copied into a built image: its path inside (absolute)
// and the host file its bytes are read from (symbolic links resolved).
type imageFile struct {
	At, From string
}

// NodeImage returns the image that runs the Node.js agent CLIs: the busybox image's
// root file system (BusyboxImage) plus node — the host's Node.js binary at node (an
// absolute path, the one the launches run: clis.Node) — and every shared library its
// ELF dynamic section needs, transitively, with the program interpreter, each at the
// path the dynamic loader looks for it. A path under /usr/bin is stored under /bin
// (the image links /usr/bin to /bin). The archive has fixed owners, modes and times, so
// it is byte-for-byte reproducible from the same host files; the image is tagged with
// its digest, imported once and reused, never pulled. The pinned CLIs themselves are
// not in it: a launch mounts the CLI's node_modules read-only.
// Errors: busybox missing or dynamic, node or a library missing or not ELF, the
// engine's import failing, node changing while the image is built.
func (e Engine) NodeImage(ctx context.Context, node string) (Image, error) {
	if msg := staticProblem(BusyboxBinary); msg != "" {
		return Image{}, fmt.Errorf("the Node.js image needs Debian's busybox-static (apt-get install busybox-static): %s", msg)
	}
	files, err := nodeImageFiles(node)
	if err != nil {
		return Image{}, fmt.Errorf("the Node.js image: %w", err)
	}
	h := sha256.New()
	if err := writeNodeRootfs(h, files); err != nil {
		return Image{}, fmt.Errorf("the Node.js image: %w", err)
	}
	sum := h.Sum(nil)
	name := "localhost/agentproof-nodejs:" + hex.EncodeToString(sum[:8])
	if img, err := e.Inspect(ctx, name); err == nil {
		img.Ref = "localhost/agentproof-nodejs" + img.Ref[strings.Index(img.Ref, "@"):]
		return img, nil
	}
	f, err := os.CreateTemp("", "agentproof-nodejs-*.tar")
	if err != nil {
		return Image{}, err
	}
	defer os.Remove(f.Name())
	h.Reset()
	err = writeNodeRootfs(io.MultiWriter(f, h), files)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return Image{}, fmt.Errorf("the Node.js image: %w", err)
	}
	if !bytes.Equal(h.Sum(nil), sum) {
		return Image{}, errors.New("the Node.js image: its files changed while it was built (a package upgrade?); run again")
	}
	return e.Import(ctx, f.Name(), name)
}

// writeNodeRootfs writes the Node.js image's root file system to w as a tar archive:
// the busybox image's entries, then the directories files need (sorted), then files
// (sorted by their path inside, mode 0755).
func writeNodeRootfs(w io.Writer, files []imageFile) error {
	tw := tar.NewWriter(w)
	if err := writeBusybox(tw); err != nil {
		return err
	}
	epoch := time.Unix(0, 0)
	have := map[string]bool{"bin": true, "etc": true, "tmp": true, "home": true, "usr": true}
	var dirs []string
	for _, f := range files {
		for d := path.Dir(strings.TrimPrefix(f.At, "/")); d != "." && !have[d]; d = path.Dir(d) {
			have[d] = true
			dirs = append(dirs, d)
		}
	}
	slices.Sort(dirs)
	for _, d := range dirs {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d + "/", Mode: 0o755, ModTime: epoch}); err != nil {
			return err
		}
	}
	for _, f := range files {
		if err := writeHostFile(tw, f, epoch); err != nil {
			return err
		}
	}
	return tw.Close()
}

// writeHostFile writes the host file f.From as f.At (mode 0755, time epoch).
func writeHostFile(tw *tar.Writer, f imageFile, epoch time.Time) error {
	src, err := os.Open(f.From)
	if err != nil {
		return err
	}
	defer src.Close()
	st, err := src.Stat()
	if err != nil {
		return err
	}
	hdr := &tar.Header{Typeflag: tar.TypeReg, Name: strings.TrimPrefix(f.At, "/"), Mode: 0o755, Size: st.Size(), ModTime: epoch}
	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}
	n, err := io.Copy(tw, src)
	if err == nil && n != st.Size() {
		err = fmt.Errorf("%s changed size while it was read", f.From)
	}
	return err
}

// nodeImageFiles are the host files of the Node.js image: node (its path inside with
// /usr/bin stored as /bin) and its shared libraries with the program interpreter
// (libraryClosure), sorted by their path inside, each once.
func nodeImageFiles(node string) ([]imageFile, error) {
	if !filepath.IsAbs(node) {
		return nil, fmt.Errorf("node %q is not an absolute path", node)
	}
	real, err := filepath.EvalSymlinks(node)
	if err != nil {
		return nil, err
	}
	at := node
	if rest, ok := strings.CutPrefix(node, "/usr/bin/"); ok {
		at = "/bin/" + rest
	}
	libs, err := libraryClosure(real)
	if err != nil {
		return nil, err
	}
	files := append([]imageFile{{At: at, From: real}}, libs...)
	slices.SortFunc(files, func(a, b imageFile) int { return strings.Compare(a.At, b.At) })
	return slices.CompactFunc(files, func(a, b imageFile) bool { return a.At == b.At }), nil
}

// libraryDirs are the directories the dynamic loader searches by default on this
// architecture (Debian's multiarch directory first), where a needed library is looked
// up.
func libraryDirs() []string {
	triple := map[string]string{"amd64": "x86_64-linux-gnu", "arm64": "aarch64-linux-gnu", "386": "i386-linux-gnu"}[runtime.GOARCH]
	var dirs []string
	if triple != "" {
		dirs = append(dirs, "/lib/"+triple, "/usr/lib/"+triple)
	}
	return append(dirs, "/lib64", "/usr/lib64", "/lib", "/usr/lib")
}

// libraryClosure is every shared library program needs (its DT_NEEDED entries and
// theirs, transitively), each at the path of the first library directory holding it,
// and its program interpreter at the path the program names. A static program needs
// none. Errors: a file that is not ELF, a library found in no library directory.
func libraryClosure(program string) ([]imageFile, error) {
	var out []imageFile
	seen := map[string]bool{}
	queue := []string{program}
	for len(queue) > 0 {
		file := queue[0]
		queue = queue[1:]
		needed, interp, err := elfNeeds(file)
		if err != nil {
			return nil, err
		}
		if interp != "" && !seen[interp] {
			seen[interp] = true
			real, err := filepath.EvalSymlinks(interp)
			if err != nil {
				return nil, fmt.Errorf("%s's interpreter: %w", file, err)
			}
			out = append(out, imageFile{At: interp, From: real})
		}
		for _, lib := range needed {
			if seen[lib] {
				continue
			}
			seen[lib] = true
			at, real, err := findLibrary(lib)
			if err != nil {
				return nil, fmt.Errorf("%s needs %s: %w", file, lib, err)
			}
			out = append(out, imageFile{At: at, From: real})
			queue = append(queue, real)
		}
	}
	return out, nil
}

// elfNeeds reads file's DT_NEEDED libraries and its program interpreter ("" when it
// has none).
func elfNeeds(file string) (needed []string, interp string, err error) {
	f, err := elf.Open(file)
	if err != nil {
		return nil, "", fmt.Errorf("%s: %w", file, err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			b, err := io.ReadAll(p.Open())
			if err != nil {
				return nil, "", fmt.Errorf("%s: reading its interpreter: %w", file, err)
			}
			interp = strings.TrimRight(string(b), "\x00")
		}
	}
	needed, err = f.ImportedLibraries()
	if err != nil {
		return nil, "", fmt.Errorf("%s: %w", file, err)
	}
	return needed, interp, nil
}

// findLibrary looks lib up in libraryDirs: its path there and the file it resolves to.
func findLibrary(lib string) (at, real string, err error) {
	if strings.Contains(lib, "/") {
		return "", "", fmt.Errorf("a library named by a path is not supported")
	}
	for _, d := range libraryDirs() {
		p := filepath.Join(d, lib)
		if r, err := filepath.EvalSymlinks(p); err == nil {
			if st, err := os.Stat(r); err == nil && st.Mode().IsRegular() {
				return p, r, nil
			}
		}
	}
	return "", "", fmt.Errorf("not found in %s", strings.Join(libraryDirs(), ", "))
}

package container

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// BusyboxSource is the imageFrom value naming BusyboxImage: an image built on this
// machine from Debian's busybox-static.
const BusyboxSource = "busybox-static"

// BusyboxBinary is where Debian's busybox-static installs its static busybox.
const BusyboxBinary = "/bin/busybox"

// busyboxApplets are the commands the image links to busybox.
var busyboxApplets = []string{"sh", "cat", "cp", "echo", "env", "grep", "head", "id", "ls", "mkdir", "mv", "nc",
	"printf", "rm", "sed", "sleep", "tail", "test", "touch", "true", "false", "wc", "wget", "ip", "ps", "stat"}

// BusyboxImage returns the image of a root file system holding only busybox (from
// BusyboxBinary, which must be static) and its applet links under /bin, /tmp, /etc with
// passwd and group, /usr/bin linked to /bin: built once per busybox binary and reused (its tag is the digest of
// the root file system's archive, which is byte-for-byte reproducible), never pulled.
// Errors: busybox missing or dynamic, the engine's import failing.
func (e Engine) BusyboxImage(ctx context.Context) (Image, error) {
	if msg := staticProblem(BusyboxBinary); msg != "" {
		return Image{}, fmt.Errorf("the busybox image needs Debian's busybox-static (apt-get install busybox-static): %s", msg)
	}
	archive, err := busyboxRootfs()
	if err != nil {
		return Image{}, err
	}
	sum := sha256.Sum256(archive)
	name := "localhost/agentproof-busybox:" + hex.EncodeToString(sum[:8])
	if img, err := e.Inspect(ctx, name); err == nil {
		img.Ref = "localhost/agentproof-busybox" + img.Ref[len(img.Ref)-len("@sha256:")-64:]
		return img, nil
	}
	f, err := os.CreateTemp("", "agentproof-busybox-*.tar")
	if err != nil {
		return Image{}, err
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(archive); err != nil {
		_ = f.Close()
		return Image{}, err
	}
	if err := f.Close(); err != nil {
		return Image{}, err
	}
	return e.Import(ctx, f.Name(), name)
}

// busyboxRootfs is the busybox image's root file system as a tar archive with fixed
// owners and times.
func busyboxRootfs() ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	if err := writeBusybox(tw); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// writeBusybox writes the busybox image's entries (busyboxRootfs) to tw, which the
// caller closes (the Node.js image adds its own entries after them).
func writeBusybox(tw *tar.Writer) error {
	bin, err := os.ReadFile(BusyboxBinary)
	if err != nil {
		return err
	}
	epoch := time.Unix(0, 0)
	dir := func(name string, mode int64) error {
		return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: name + "/", Mode: mode, ModTime: epoch})
	}
	file := func(name string, mode int64, data []byte) error {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: mode, Size: int64(len(data)), ModTime: epoch}); err != nil {
			return err
		}
		_, err := tw.Write(data)
		return err
	}
	steps := []func() error{
		func() error { return dir("bin", 0o755) }, func() error { return dir("etc", 0o755) },
		func() error { return dir("tmp", 0o1777) }, func() error { return dir("home", 0o755) },
		func() error { return dir("usr", 0o755) },
		func() error { // /usr/bin/env, /usr/bin/sleep, … as on a merged-/usr system
			return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeSymlink, Name: "usr/bin", Linkname: "../bin", Mode: 0o777, ModTime: epoch})
		},
		func() error { return file("bin/busybox", 0o755, bin) },
		func() error {
			return file("etc/passwd", 0o644, []byte("root:x:0:0:root:/root:/bin/sh\nagent:x:65534:65534:agent:/home/agent:/bin/sh\n"))
		},
		func() error { return file("etc/group", 0o644, []byte("root:x:0:\nagent:x:65534:\n")) },
	}
	for _, a := range busyboxApplets {
		steps = append(steps, func() error {
			return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeSymlink, Name: filepath.Join("bin", a), Linkname: "busybox", Mode: 0o777, ModTime: epoch})
		})
	}
	for _, s := range steps {
		if err := s(); err != nil {
			return err
		}
	}
	return nil
}

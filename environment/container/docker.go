package container

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/agentproof/agentproof/environment"
	"github.com/agentproof/agentproof/environment/hostlease"
	"github.com/agentproof/agentproof/environment/sandbox"
)

// What docker needs that podman does not: docker's CLI passes no descriptor into a
// container (podman's --preserve-fds), names a local image by its id only (an image
// built or imported here has no manifest digest until it is pushed), and mounts no
// image on the host.

// InitDir is where a docker launch's status directory is mounted, read-only: it holds
// the unix socket init reports the agent's exit on (--status-socket).
const InitDir = "/run/agentproof-init"

// statusSocketName is the status socket's name in its directory.
const statusSocketName = "status.sock"

// statusAccept bounds how long Settle waits for init's connection to be accepted once
// the engine process ended (init connects before the agent starts, so it is queued
// already when init ran at all).
const statusAccept = 200 * time.Millisecond

// statusSocket is the host side of a docker launch's exit report: a fresh short
// directory (/run/apf-<16 hex>, mounted at InitDir) holding a socket the container
// user may connect to. Exactly one connection is accepted — init's, made before the
// agent exists — and the socket is then closed and unlinked, so the agent can neither
// connect nor forge a report; init's connection is not reachable through /proc (init
// is not dumpable).
type statusSocket struct {
	dir string
	ln  *net.UnixListener
	got chan *net.UnixConn // init's connection, then closed; closed empty when none came
}

// listenStatus makes a launch's status directory and socket and starts accepting.
// Errors: the directory or the socket cannot be made.
func listenStatus() (*statusSocket, error) {
	dir, err := hostlease.MakeSocketDir()
	if err != nil {
		return nil, fmt.Errorf("status socket: %w", err)
	}
	path := filepath.Join(dir, statusSocketName)
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err == nil {
		ln.SetUnlinkOnClose(true)
		err = os.Chmod(path, 0o666) // the container user connects; nobody else reaches the 0711 directory's name
		if err != nil {
			_ = ln.Close()
		}
	}
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("status socket: %w", err)
	}
	s := &statusSocket{dir: dir, ln: ln, got: make(chan *net.UnixConn, 1)}
	go func() {
		c, err := ln.AcceptUnix()
		if err == nil {
			s.got <- c
		}
		close(s.got)
		_ = ln.Close() // unlinks the socket: nothing else can connect
	}()
	return s, nil
}

// read takes init's connection (waiting statusAccept for it to be accepted) and reads
// its report. Errors: init never connected; the report is missing or malformed.
func (s *statusSocket) read() (sandbox.InitStatus, error) {
	_ = s.ln.SetDeadline(time.Now().Add(statusAccept))
	c, ok := <-s.got
	if !ok {
		return sandbox.InitStatus{}, errors.New("init never connected to the status socket")
	}
	defer c.Close()
	return sandbox.ReadInitStatus(c)
}

// close stops accepting and removes the directory.
func (s *statusSocket) close() {
	_ = s.ln.Close()
	for c := range s.got {
		_ = c.Close()
	}
	_ = os.RemoveAll(s.dir)
}

// dockerInspect resolves ref in docker's local store. ref is <name>@sha256:<hex>: an
// image whose id (the digest of its configuration, which names every layer's content
// digest) is sha256:<hex> and which carries the name as a tag, or whose pulled
// manifest digest ref is (RepoDigests). The returned Ref is ref itself, or
// <name>@<id> when ref is a tag or an id.
func (e Engine) dockerInspect(ctx context.Context, ref string) (Image, error) {
	name, digest, byDigest := strings.Cut(ref, "@")
	q := ref
	if byDigest {
		q = digest // docker finds a local image by its id, not by name@id
	}
	const format = `{"id":{{json .Id}},"tags":{{json .RepoTags}},"digests":{{json .RepoDigests}}}`
	out, err := e.run(ctx, "image", "inspect", "--format", format, q)
	if err != nil && byDigest {
		out, err = e.run(ctx, "image", "inspect", "--format", format, ref)
	}
	if err != nil {
		return Image{}, fmt.Errorf("image %s is not in the engine's local store (it is never pulled): %w", ref, err)
	}
	var got struct {
		ID      string   `json:"id"`
		Tags    []string `json:"tags"`
		Digests []string `json:"digests"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil || !strings.HasPrefix(got.ID, "sha256:") {
		return Image{}, fmt.Errorf("image %s: the engine reported %q, not an id, tags and digests", ref, clip(out))
	}
	id, tags, digests := got.ID, got.Tags, got.Digests
	if !byDigest {
		if i := strings.LastIndex(name, ":"); i > strings.LastIndex(name, "/") {
			name = name[:i]
		}
		if strings.HasPrefix(ref, "sha256:") && len(tags) > 0 {
			name = repository(tags[0])
		}
		return Image{Ref: name + "@" + id, ID: id}, nil
	}
	tagged := slices.ContainsFunc(tags, func(t string) bool { return repository(t) == name })
	if (digest == id && tagged) || slices.Contains(digests, ref) {
		return Image{Ref: ref, ID: id}, nil
	}
	return Image{}, fmt.Errorf("image %s: docker's local image %s does not carry the name %s (tags %s)", ref, id, name, strings.Join(tags, ", "))
}

// repository is a tag's repository ("localhost/x" of "localhost/x:1").
func repository(tag string) string {
	if i := strings.LastIndex(tag, ":"); i > strings.LastIndex(tag, "/") {
		return tag[:i]
	}
	return tag
}

// dockerSeedWorkdir copies image's files at dir into dest through a created (never
// started) container: docker mounts no image on the host. The container is removed.
func (e Engine) dockerSeedWorkdir(ctx context.Context, image, dir, dest string) error {
	id, err := e.run(ctx, "create", "--pull", "never", "--network", "none", "--label", labelProvider+"="+string(environment.ProviderContainer),
		"--entrypoint", "/nonexistent", image)
	if err != nil {
		return fmt.Errorf("a container to seed the workspace from %s: %w", dir, err)
	}
	defer func() { _ = e.remove(context.WithoutCancel(ctx), id) }()
	tmp, err := os.MkdirTemp("", "agentproof-seed-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if !e.hasPath(ctx, id, dir) {
		return nil // the image has no such directory: the workspace starts as it is
	}
	if _, err := e.run(ctx, "cp", id+":"+dir+"/.", tmp+"/"); err != nil {
		return fmt.Errorf("seeding the workspace from the image's %s: %w", dir, err)
	}
	cmd := exec.CommandContext(ctx, "cp", "-a", "--no-preserve=ownership", tmp+"/.", dest+"/")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("seeding the workspace from the image's %s: %v: %s", dir, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// hasPath reports whether the created container id holds path: docker's CLI has no
// stat of a container's file, so the archive of path is asked for (`cp id:path -`)
// and discarded.
func (e Engine) hasPath(ctx context.Context, id, path string) bool {
	cmd := exec.CommandContext(ctx, e.Path, "cp", id+":"+path, "-")
	cmd.Env = engineEnv()
	return cmd.Run() == nil
}

// emptyImageName names the docker trial's image: an empty root file system.
const emptyImageName = "localhost/agentproof-probe:empty"

// emptyImage returns docker's trial image, importing it when the store lacks it: one
// layer of an empty /tmp directory (docker imports no archive without an entry).
func (e Engine) emptyImage(ctx context.Context) (Image, error) {
	if img, err := e.Inspect(ctx, emptyImageName); err == nil {
		return img, nil
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: "tmp/", Mode: 0o1777, ModTime: time.Unix(0, 0)}); err != nil {
		return Image{}, err
	}
	if err := tw.Close(); err != nil {
		return Image{}, err
	}
	f, err := os.CreateTemp("", "agentproof-probe-*.tar")
	if err != nil {
		return Image{}, err
	}
	defer os.Remove(f.Name())
	_, err = f.Write(buf.Bytes())
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return Image{}, err
	}
	return e.Import(ctx, f.Name(), emptyImageName)
}

package environment

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/agentproof/agentproof/atomicfile"
)

// LeaseSpec is what Setup needs to create a lease.
//
//   - EnvironmentID, ConfigurationKey: the catalog environment (and variant) it serves.
//   - Shape: the pinned resource shape (the caller converts its catalog entry's
//     resources); the sandbox provider requires a pinned one or the zero Shape (no
//     declared limit), local ignores it.
//   - Reuse: the catalog's reuseLease. true: one lease for the whole cell, every launch
//     shares its HOME and /tmp; false: every launch gets fresh ones, only the workspace
//     persists (bind-mounted from the host).
//   - Root: absolute directory holding the lease directory <Root>/<lease id>; it must
//     exist and must not be inside a server home. Required by the sandbox provider;
//     local writes no lease file without it.
//   - Workspace: absolute host directory the agent works in, bound read-write at the
//     same path. "" lets the sandbox provider make one on the lease's disk (under the
//     disk cap) and report it as Lease.Workspace.
//   - Endpoints: the network allowlist (see Endpoint); nothing else is reachable.
//   - Live: provider endpoints (a live model API) are allowed.
//   - Image: the OCI image the container provider runs, named by digest
//     (<name>@sha256:<64 hex>); "" for the other providers.
//   - Workdir: the container provider's working directory inside ("/app"): the
//     workspace is also mounted there, seeded at Setup from the image's files at that
//     path, and a launch whose directory is the workspace starts there; "" for none.
//   - Owner: who set the lease up ("campaign <id>"), for the container provider's
//     labels; informative.
//   - WorkspaceMounts: container provider only: absolute paths inside the container
//     (e.g. /app) at which a directory of the workspace (relative, "." for the whole
//     workspace) is also mounted read-write, for images whose tasks name their files
//     by such paths; the workspace stays mounted at its own path as well.
//   - Tmpfs: container provider only: absolute paths inside the container that every
//     launch gets as a fresh, empty, writable tmpfs (e.g. /logs); nothing in it
//     outlives the launch.
type LeaseSpec struct {
	EnvironmentID    string
	ConfigurationKey string
	Shape            Shape
	Reuse            bool
	Root             string
	Workspace        string
	Endpoints        []Endpoint
	Live             bool
	Image            string
	Workdir          string
	Owner            string
	WorkspaceMounts  map[string]string
	Tmpfs            []string
}

// LeaseSchema is the schema tag of lease.json.
const LeaseSchema = "agentproof.lease.v1"

// LeaseFileName is the name of a lease's description file in its directory.
const LeaseFileName = "lease.json"

// Lease describes one lease: everything another process needs to launch into it or
// clean it up. It is written as Dir/lease.json by Setup (WriteLeaseFile) and read
// with ReadLeaseFile; State is the provider's own part (for the sandbox: cgroup
// directories, the disk mount, the sandbox user).
//
//   - ID: "lease-" + 16 lower-case hex digits.
//   - StartedAt: when Setup began (UTC).
//   - Dir: the lease directory (absolute), "" for a local lease without a Root.
//   - Workspace: the host workspace bound read-write at the same path ("" for local).
//   - SocketDir: the host directory of the endpoints' bridge sockets when the provider
//     keeps them outside Dir (a socket path holds at most 107 bytes, so the sandbox
//     puts them in a short per-lease directory such as /run/apf-<random>, whatever the
//     depth of Dir); "" when they live in Dir.
//   - Endpoints: the allowlist with each endpoint's Socket filled in (inside Dir or
//     SocketDir).
type Lease struct {
	Schema           string            `json:"schema"`
	ID               string            `json:"id"`
	Provider         ProviderName      `json:"provider"`
	EnvironmentID    string            `json:"environmentId"`
	ConfigurationKey string            `json:"configurationKey,omitempty"`
	Shape            Shape             `json:"shape"`
	Reuse            bool              `json:"reuse"`
	StartedAt        time.Time         `json:"startedAt"`
	Dir              string            `json:"dir,omitempty"`
	Workspace        string            `json:"workspace,omitempty"`
	SocketDir        string            `json:"socketDir,omitempty"`
	Endpoints        []Endpoint        `json:"endpoints,omitempty"`
	Live             bool              `json:"live,omitempty"`
	Image            string            `json:"image,omitempty"`
	Workdir          string            `json:"workdir,omitempty"`
	WorkspaceMounts  map[string]string `json:"workspaceMounts,omitempty"`
	Tmpfs            []string          `json:"tmpfs,omitempty"`
	State            json.RawMessage   `json:"state,omitempty"`
}

var leaseIDPattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^lease-[0-9a-f]{16}$`) })

// NewLeaseID returns a fresh random lease id ("lease-" + 16 hex digits).
func NewLeaseID() (string, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("lease id: %w", err)
	}
	return "lease-" + hex.EncodeToString(b[:]), nil
}

// ValidLeaseID reports whether id has the lease id grammar.
func ValidLeaseID(id string) bool { return leaseIDPattern().MatchString(id) }

// Problems lists what is wrong with spec for a provider that needs (needRoot) a lease
// root; it returns nil for a valid spec.
func (s LeaseSpec) Problems(needRoot bool) []string {
	var p []string
	if s.EnvironmentID == "" {
		p = append(p, "environmentId is required")
	}
	if needRoot || s.Root != "" {
		if !cleanAbs(s.Root) {
			p = append(p, fmt.Sprintf("root %q must be an absolute, clean path", s.Root))
		} else if fi, err := os.Stat(s.Root); err != nil || !fi.IsDir() {
			p = append(p, fmt.Sprintf("root %s must be an existing directory", s.Root))
		}
	}
	if s.Workspace != "" && !cleanAbs(s.Workspace) {
		p = append(p, fmt.Sprintf("workspace %q must be an absolute, clean path", s.Workspace))
	}
	p = append(p, Allowlist(s.Endpoints).Problems(s.Live)...)
	return p
}

func cleanAbs(p string) bool {
	return p != "" && filepath.IsAbs(p) && filepath.Clean(p) == p && !strings.ContainsRune(p, 0)
}

// LeaseFile returns the path of l's description file, "" when l has no directory.
func (l *Lease) LeaseFile() string {
	if l.Dir == "" {
		return ""
	}
	return filepath.Join(l.Dir, LeaseFileName)
}

// Problems lists what is wrong with a lease description (as read from a file).
func (l *Lease) Problems() []string {
	var p []string
	if l.Schema != LeaseSchema {
		p = append(p, fmt.Sprintf("schema %q is not %q", l.Schema, LeaseSchema))
	}
	if !ValidLeaseID(l.ID) {
		p = append(p, fmt.Sprintf("id %q is not a lease id (lease-<16 hex>)", clip(l.ID)))
	}
	if l.Provider != ProviderLocal && !l.Provider.Leased() {
		p = append(p, fmt.Sprintf("provider %q is not local, sandbox or container", clip(string(l.Provider))))
	}
	if l.EnvironmentID == "" {
		p = append(p, "environmentId is required")
	}
	if l.StartedAt.IsZero() {
		p = append(p, "startedAt is required")
	}
	if l.Dir != "" && (!cleanAbs(l.Dir) || filepath.Base(l.Dir) != l.ID) {
		p = append(p, fmt.Sprintf("dir %q must be an absolute, clean path ending in the lease id", clip(l.Dir)))
	}
	if l.Workspace != "" && !cleanAbs(l.Workspace) {
		p = append(p, fmt.Sprintf("workspace %q must be an absolute, clean path", clip(l.Workspace)))
	}
	if l.Provider.Leased() && !l.Shape.IsZero() { // zero: the environment declares no limit
		p = append(p, prefix("shape: ", l.Shape.Problems())...)
		if l.Dir == "" {
			p = append(p, "a "+string(l.Provider)+" lease needs its directory")
		}
	}
	if l.SocketDir != "" && (!cleanAbs(l.SocketDir) || l.SocketDir == "/") {
		p = append(p, fmt.Sprintf("socketDir %q must be an absolute, clean path", clip(l.SocketDir)))
	}
	p = append(p, Allowlist(l.Endpoints).Problems(l.Live)...)
	for i, e := range l.Endpoints {
		inside := l.Dir == "" || Within(l.Dir, e.Socket) || (l.SocketDir != "" && Within(l.SocketDir, e.Socket))
		if e.Socket != "" && (!cleanAbs(e.Socket) || !inside) {
			p = append(p, fmt.Sprintf("endpoints[%d].socket %q must be an absolute path inside the lease directory or its socket directory", i, clip(e.Socket)))
		}
	}
	return p
}

func prefix(pre string, ps []string) []string {
	out := make([]string, len(ps))
	for i, s := range ps {
		out[i] = pre + s
	}
	return out
}

func clip(s string) string {
	if r := []rune(s); len(r) > 64 {
		return string(r[:63]) + "…"
	}
	return s
}

// Within reports whether path is dir or lies under it (both absolute and clean; no
// symbolic link is resolved).
func Within(dir, path string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../") && !filepath.IsAbs(rel)
}

// maxLeaseFileBytes bounds what ReadLeaseFile reads.
const maxLeaseFileBytes = 1 << 20

// WriteLeaseFile writes l as Dir/lease.json (mode 0600) atomically: a temporary file
// in the same directory, fsynced, renamed over the old one, and the directory fsynced.
// Errors: l has no Dir, or a wrapped filesystem error.
func WriteLeaseFile(l *Lease) error {
	if l.Dir == "" {
		return errors.New("lease file: the lease has no directory")
	}
	data, err := json.MarshalIndent(l, "", "  ")
	if err != nil {
		return fmt.Errorf("lease file: %w", err)
	}
	if err := atomicfile.WriteFile(l.LeaseFile(), append(data, '\n'), 0o600); err != nil {
		return fmt.Errorf("lease file: %w", err)
	}
	return nil
}

// ReadLeaseFile reads and validates the lease description at path (a lease.json
// written by WriteLeaseFile). Unknown fields are refused. Errors: a *SpecError listing
// every problem of the content, or a wrapped filesystem error.
func ReadLeaseFile(path string) (*Lease, error) {
	if !cleanAbs(path) || filepath.Base(path) != LeaseFileName {
		return nil, &SpecError{What: "lease file", Problems: []string{fmt.Sprintf("path %q must be an absolute path to a %s", clip(path), LeaseFileName)}}
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return nil, fmt.Errorf("lease file: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxLeaseFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("lease file: %w", err)
	}
	l, err := ParseLease(data)
	if err != nil {
		return nil, err
	}
	if l.Dir != filepath.Dir(path) {
		return nil, &SpecError{What: "lease file " + path, Problems: []string{fmt.Sprintf("dir %q is not the file's directory", clip(l.Dir))}}
	}
	return l, nil
}

// ParseLease decodes and validates a lease description. Errors: a *SpecError.
func ParseLease(data []byte) (*Lease, error) {
	if len(data) > maxLeaseFileBytes {
		return nil, &SpecError{What: "lease file", Problems: []string{fmt.Sprintf("larger than %d bytes", maxLeaseFileBytes)}}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var l Lease
	if err := dec.Decode(&l); err != nil {
		return nil, &SpecError{What: "lease file", Problems: []string{err.Error()}}
	}
	if dec.More() {
		return nil, &SpecError{What: "lease file", Problems: []string{"trailing data after the lease"}}
	}
	if p := l.Problems(); len(p) > 0 {
		return nil, &SpecError{What: "lease file", Problems: p}
	}
	return &l, nil
}

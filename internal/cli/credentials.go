package cli

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/agentproof/agentproof/campaign"
	"github.com/agentproof/agentproof/campaign/attempt"
	"github.com/agentproof/agentproof/catalog"
	"github.com/agentproof/agentproof/redact"
)

// envCredentialsFD names the file descriptor over which `run` hands the credential
// values it took from its environment to itself, re-executed without them
// (takeCredentials). Only agentproof sets it.
const envCredentialsFD = "AGENTPROOF_CREDENTIALS_FD"

// credentials are the values of the catalog's declared credentials that `run` was
// started with, held in memory only: never in the process's environment once the
// campaign is planned (docs/secrets.md "Threat model"). The zero value holds none.
type credentials struct {
	values map[string]string
}

// lookup returns the value of the credential name and whether it is set (not empty).
func (c credentials) lookup(name string) (string, bool) {
	v, ok := c.values[name]
	return v, ok && v != ""
}

// markNonDumpable makes this process non-dumpable (prctl PR_SET_DUMPABLE 0): its
// /proc/<pid> files (environ, mem, fd, maps) belong to root and another process of the
// same user, an agent among them, can neither read them nor ptrace it; it writes no
// core file. A process with CAP_SYS_PTRACE (root's agents) still can: only the sandbox
// contains those. An exec resets it, so every agentproof process that holds keys or
// credentials (run, serve) calls it first.
func markNonDumpable() error {
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fmt.Errorf("prctl(PR_SET_DUMPABLE, 0): %w", err)
	}
	return nil
}

// declaredCredentials returns the names of every credential c declares, and of every
// live provider's credential variable, sorted: the environment variables `run` takes
// out of its environment.
func declaredCredentials(c *catalog.Catalog) []string {
	var names []string
	for _, cr := range c.Credentials {
		names = append(names, cr.ID)
	}
	for _, cell := range c.Cells {
		if n := attempt.LiveCredential(cell); n != "" {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// readHandedCredentials reads the credentials the re-executing `run` handed over
// (envCredentialsFD), when it did: it removes the variable, reads the descriptor to
// its end, empties and closes it. ok is false when the variable is not set. Error: a
// descriptor that is not agentproof's (exit 2).
func readHandedCredentials() (c credentials, ok bool, err error) {
	v, set := os.LookupEnv(envCredentialsFD)
	if !set {
		return credentials{}, false, nil
	}
	_ = os.Unsetenv(envCredentialsFD)
	fd, err := strconv.Atoi(v)
	if err != nil || fd < 3 {
		return credentials{}, false, usageErrorf("%s=%q: only agentproof sets this variable, for itself; unset it", envCredentialsFD, v)
	}
	f := os.NewFile(uintptr(fd), "credentials")
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		return credentials{}, false, usageErrorf("%s=%d: %v (only agentproof sets this variable, for itself; unset it)", envCredentialsFD, fd, err)
	}
	_ = f.Truncate(0)
	c, err = decodeCredentials(b)
	if err != nil {
		return credentials{}, false, usageErrorf("%s=%d: %v (only agentproof sets this variable, for itself; unset it)", envCredentialsFD, fd, err)
	}
	return c, true, nil
}

// encodeCredentials is the wire form of values: name NUL value NUL, names sorted (an
// environment value never holds a NUL).
func encodeCredentials(values map[string]string) []byte {
	var b bytes.Buffer
	for _, k := range slices.Sorted(maps.Keys(values)) {
		b.WriteString(k)
		b.WriteByte(0)
		b.WriteString(values[k])
		b.WriteByte(0)
	}
	return b.Bytes()
}

// decodeCredentials reads encodeCredentials' form. Error: an odd number of fields.
func decodeCredentials(b []byte) (credentials, error) {
	c := credentials{values: map[string]string{}}
	if len(b) == 0 {
		return c, nil
	}
	if b[len(b)-1] != 0 {
		return c, errors.New("credentials not NUL-terminated")
	}
	f := strings.Split(string(b[:len(b)-1]), "\x00")
	if len(f)%2 != 0 {
		return c, errors.New("an odd number of credential fields")
	}
	for i := 0; i < len(f); i += 2 {
		c.values[f[i]] = f[i+1]
	}
	return c, nil
}

// takeCredentials takes the values of names out of this process's environment. When
// one is set and this process is the command line's own (a.entry), it re-executes
// itself (same pid, same arguments, same descriptors) with an environment without
// them, handing their values over a memory file descriptor (envCredentialsFD) that the
// new image reads and closes at once: /proc/<pid>/environ then holds none of them. It
// returns only when nothing was set (the values from the environment: none), or when
// a re-execution is not possible (a test calling Main in-process): the variables are
// then unset, which /proc/<pid>/environ does not show, and a warning says so. quiesce
// is called just before the re-execution (to wait for a child this process started).
// Error: the re-execution failed (exit 70; nothing started).
func (a *app) takeCredentials(names []string, quiesce func()) (credentials, error) {
	c := credentials{values: map[string]string{}}
	for _, n := range names {
		if v, ok := os.LookupEnv(n); ok {
			c.values[n] = v
		}
	}
	if len(c.values) == 0 {
		return c, nil
	}
	if !a.entry {
		for n := range c.values {
			_ = os.Unsetenv(n)
		}
		fmt.Fprintf(a.stderr, "agentproof: warning: run is not this process's command line, so the credentials it was started with stay in /proc/%d/environ\n", os.Getpid())
		return c, nil
	}
	quiesce()
	return credentials{}, reexecWithout(c)
}

// reexecWithout re-executes this process's own command line without c's variables in
// its environment, handing their values over a memory file (envCredentialsFD). It
// returns only on failure.
func reexecWithout(c credentials) error {
	fd, err := unix.MemfdCreate("agentproof-credentials", 0) // no close-on-exec: the new image reads it
	if err != nil {
		return fmt.Errorf("handing the credentials to run without its environment: memfd_create: %w", err)
	}
	f := os.NewFile(uintptr(fd), "credentials")
	if _, err := f.Write(encodeCredentials(c.values)); err != nil {
		f.Close()
		return fmt.Errorf("handing the credentials to run without its environment: %w", err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		f.Close()
		return fmt.Errorf("handing the credentials to run without its environment: %w", err)
	}
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if _, taken := c.values[k]; !taken && k != envCredentialsFD {
			env = append(env, kv)
		}
	}
	env = append(env, envCredentialsFD+"="+strconv.Itoa(fd))
	err = syscall.Exec("/proc/self/exe", os.Args, env)
	f.Close()
	return fmt.Errorf("re-executing run without the credentials in its environment: %w", err)
}

// campaignSecrets is every secret the campaign holds before its first attempt: the
// value of every declared credential `run` took out of its environment, whichever
// cell loads it (a login file's texts that must stay secret too: attempt.LoginSecrets),
// and the campaign's canaries. Every attempt's scans and its evidence, and the
// campaign's report, are guarded with it.
func campaignSecrets(c *catalog.Catalog, creds credentials, canaries []campaign.Canary) *redact.Set {
	set := redact.NewSet()
	login := map[string]bool{}
	for _, cr := range c.Credentials {
		login[cr.ID] = cr.Kind == catalog.CredentialKindLoginFile
	}
	for _, name := range slices.Sorted(maps.Keys(creds.values)) {
		v, ok := creds.lookup(name)
		switch {
		case !ok:
		case login[name]:
			set = attempt.LoginSecrets(set, v)
		default:
			set = set.WithCredentials(v)
		}
	}
	for _, cn := range canaries {
		set = set.WithCredentials(cn.Value)
	}
	return set
}

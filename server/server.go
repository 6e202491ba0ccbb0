// Package server is the control-plane HTTP API: board routes (companies,
// secrets, environments, agents, projects, issues, comments, interactions, approvals,
// runs, wakes, decisions, state) behind the instance board token, and agent routes
// (run context, events, commands with idempotency keys, completion, session
// checkpoints, replay) behind per-run agent tokens. Each company is a durable control-plane
// state machine (package controlplane/store). Errors are JSON {code, message,
// retryable}. The OpenAPI 3.1 document is served at /openapi.json.
//
// Managed files (files.go, docs/files.md): blob upload (raw body, at most
// api.MaxFileBytes) and Range downloads of blobs, managed files and artifacts, home
// receipts and conflicts. Every board write takes an Idempotency-Key header
// (api.IdempotencyKeyHeader; routes that take none, and agent tokens, refuse it), and
// Retry (POST /runs/{run}/retry) asks for a new run of a failed or interrupted one.
//
// The instance home holds instance.db (SQLite, unless a PostgreSQL URL is given),
// board.token and master.key (both 0600). Secrets are sealed with AES-256-GCM under
// the master key; no route, log or snapshot returns a value. In-process code (the
// heartbeat runner) uses DueWakes, OpenRun, MintAgentToken and ResolveSecret.
//
// Every request is bounded before a handler sees it: headers within ReadHeaderTimeout,
// the body within ReadBodyTimeout (408 request_timeout, connection closed) and
// api.MaxBodyBytes (413); every string of a JSON body must be valid UTF-8 without NUL
// and nesting is at most api.MaxBodyDepth (400 naming the field's JSONPath);
// idempotency and deduplication keys are at most api.MaxIdempotencyKeyBytes and dueBy
// must be RFC 3339 (400 naming the field). Walks of request bodies are linear in their
// size. An agent token is accepted only while its run runs: once the run ended (or for
// a run that does not exist) it is 401, except for an identical retry of the run's
// completion, which the state machine answers as a duplicate (so that a lost
// acknowledgement can be retried). The heartbeat runner completes runs in process and
// needs no token. A request to no route is authenticated first: 401 without a valid
// token, 404 with one; /openapi.json is public.
package server

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/agentproof/agentproof/api"
	"github.com/agentproof/agentproof/controlplane"
	"github.com/agentproof/agentproof/controlplane/store"
)

// Options configure Open. Home is required; Postgres, when set, is the database URL
// (the instance then keeps only its token and key files in Home). ReadHeaderTimeout
// and ReadBodyTimeout bound reading a request's headers and its body (0 means
// DefaultReadHeaderTimeout and DefaultReadBodyTimeout).
type Options struct {
	Home     string
	Postgres string
	// Template, when set, is a pre-migrated SQLite template (store.Template) copied
	// into place as the database of a home that has none yet, instead of migrating a
	// new file; a template of another schema or whose bytes do not match its digest is
	// not used (the new file is migrated as without one).
	Template          *store.Template
	ReadHeaderTimeout time.Duration
	ReadBodyTimeout   time.Duration
	// ErrorLog, when set, receives the HTTP server's error log (a handler's panic,
	// a failed accept) instead of the process's standard logger (its stderr): an
	// instance inside another process keeps its own log.
	ErrorLog io.Writer
	// Ephemeral says the home is thrown away with the instance (an attempt's home:
	// `serve --ephemeral`, and every in-process instance of `run`): nothing in it is
	// fsynced — its key files, the SQLite database (store.SQLiteOptions.Ephemeral)
	// and the heartbeat runner's records and logs are written as durably as a killed
	// process needs (atomically, through the page cache) but not as an
	// operating-system crash would, after which the home is never reopened
	// (docs/processes.md "Ephemeral homes"). With Postgres only the home's files are
	// concerned: the database is not in the home.
	Ephemeral bool
}

// Server is an open control-plane instance with its HTTP handler. Close it to commit
// and close the store.
type Server struct {
	lock       *homeLock // the home's lock while open
	inst       *store.Instance
	boardToken string
	master     []byte // 32 bytes, AES-256-GCM key of secrets
	tokenKey   []byte // HMAC-SHA256 key of agent tokens, derived from master
	handler    http.Handler
	// headerTimeout and bodyTimeout bound reading a request's headers and body.
	headerTimeout, bodyTimeout time.Duration
	// feed is the change sequence of GET /api/changes.
	feed *changeFeed
	// templateErr is why Options.Template was not copied into place (nil: copied, or
	// none was given or needed).
	templateErr error
	// calls is the agent-call ledger (calls.go).
	calls callLedger
	// errorLog is Options.ErrorLog.
	errorLog io.Writer
}

// TemplateProblem reports why Options.Template was not used for a new database (the
// database was then migrated), or nil.
func (s *Server) TemplateProblem() error { return s.templateErr }

// File names in the instance home.
const (
	DatabaseFile   = "instance.db"
	BoardTokenFile = api.BoardTokenFile
	MasterKeyFile  = api.MasterKeyFile
	LockFile       = "instance.lock"
)

// homeLock is a server's hold on its home: a POSIX record lock (fcntl F_SETLK) on the
// home's lock file, and the file's entry in heldHomes.
type homeLock struct {
	f   *os.File
	key fileKey
}

// fileKey names a file by its device and inode (a home reached by two paths is one).
type fileKey struct{ dev, ino uint64 }

// heldHomes are the lock files of the homes the servers of this process hold: POSIX
// record locks never exclude each other within one process, so a second server of
// this process on a held home is refused here.
var heldHomes = struct {
	sync.Mutex
	m map[fileKey]bool
}{m: map[fileKey]bool{}}

// lockHome locks home for one server, so that two servers never serve one home.
// Between processes it is a POSIX record lock on the home's lock file: the kernel
// releases it when the process dies (even by SIGKILL) or closes the file, and a child
// process never holds it — unlike an flock, whose every descriptor copy (one in each
// child forked by any goroutine, until its exec closes it) keeps it, so that a server
// closed and opened again on the same home would find it held by a child still
// starting. Within the process heldHomes excludes. Error: the home is in use.
func lockHome(home string) (*homeLock, error) {
	heldHomes.Lock()
	defer heldHomes.Unlock()
	path := filepath.Join(home, LockFile)
	// Looked up before the file is opened: closing a descriptor of it would end the
	// record lock another server of this process holds (a process's POSIX locks on a
	// file end with any of its descriptors).
	if fi, err := os.Stat(path); err == nil && heldHomes.m[keyOf(fi)] {
		return nil, fmt.Errorf("server: instance home %s is in use by another server of this process", home)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("server: opening the lock file: %w", err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("server: the lock file: %w", err)
	}
	lk := syscall.Flock_t{Type: syscall.F_WRLCK, Whence: io.SeekStart}
	if err := syscall.FcntlFlock(f.Fd(), syscall.F_SETLK, &lk); err != nil {
		f.Close()
		return nil, fmt.Errorf("server: instance home %s is in use by another process: %w", home, err)
	}
	key := keyOf(fi)
	heldHomes.m[key] = true
	return &homeLock{f: f, key: key}, nil
}

// keyOf is fi's device and inode.
func keyOf(fi os.FileInfo) fileKey {
	st, _ := fi.Sys().(*syscall.Stat_t)
	if st == nil {
		return fileKey{}
	}
	return fileKey{dev: uint64(st.Dev), ino: st.Ino}
}

// Close releases the lock (closing the file ends the record lock).
func (l *homeLock) Close() error {
	heldHomes.Lock()
	defer heldHomes.Unlock()
	delete(heldHomes.m, l.key)
	return l.f.Close()
}

// Open opens (creating when needed) the instance in opts.Home. Errors: Home missing or
// not a directory, a key file with permissions wider than 0600, store errors.
func Open(ctx context.Context, opts Options) (*Server, error) {
	if opts.Home == "" {
		return nil, errors.New("server: an instance home is required")
	}
	if err := os.MkdirAll(opts.Home, 0o700); err != nil {
		return nil, fmt.Errorf("server: creating home: %w", err)
	}
	lock, err := lockHome(opts.Home)
	if err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		if !ok {
			lock.Close()
		}
	}()
	durable := !opts.Ephemeral
	token, err := secretFile(filepath.Join(opts.Home, BoardTokenFile), durable, func(b []byte) []byte {
		return []byte(hex.EncodeToString(b))
	})
	if err != nil {
		return nil, err
	}
	master, err := secretFile(filepath.Join(opts.Home, MasterKeyFile), durable, func(b []byte) []byte { return b })
	if err != nil {
		return nil, err
	}
	if len(master) != 32 {
		return nil, fmt.Errorf("server: %s must hold 32 bytes, has %d", MasterKeyFile, len(master))
	}
	var inst *store.Instance
	var templateErr error
	if opts.Postgres != "" {
		inst, err = store.OpenPostgres(ctx, opts.Postgres)
	} else {
		db := filepath.Join(opts.Home, DatabaseFile)
		fresh := false // the database is the template's copy placed just now
		if opts.Template != nil {
			if _, err := os.Lstat(db); errors.Is(err, fs.ErrNotExist) {
				// A failed copy leaves no file: the new one is migrated below. The home
				// lock keeps any other server away meanwhile.
				if opts.Ephemeral {
					templateErr = store.CopySQLiteTemplateEphemeral(*opts.Template, db)
				} else {
					templateErr = store.CopySQLiteTemplate(*opts.Template, db)
				}
				fresh = templateErr == nil
			}
		}
		// the database holds sealed secrets and the journal: 0600 (SQLite gives its
		// -wal and -shm files the database file's mode)
		if f, cerr := os.OpenFile(db, os.O_RDWR|os.O_CREATE, 0o600); cerr != nil {
			return nil, fmt.Errorf("server: creating %s: %w", DatabaseFile, cerr)
		} else {
			f.Close()
		}
		inst, err = store.OpenSQLiteWith(ctx, db, store.SQLiteOptions{Ephemeral: opts.Ephemeral, Fresh: fresh})
	}
	if err != nil {
		return nil, err
	}
	ok = true
	s := &Server{lock: lock, inst: inst, boardToken: strings.TrimSpace(string(token)), master: master, tokenKey: api.RunTokenKey(master),
		headerTimeout: cmp.Or(opts.ReadHeaderTimeout, DefaultReadHeaderTimeout), bodyTimeout: cmp.Or(opts.ReadBodyTimeout, DefaultReadBodyTimeout), feed: newChangeFeed(), templateErr: templateErr, errorLog: opts.ErrorLog}
	s.handler = s.routes()
	return s, nil
}

// secretFile reads path, or creates it 0600 from 32 random bytes passed through
// encode (fsynced when durable). It refuses a file readable by group or others.
func secretFile(path string, durable bool, encode func([]byte) []byte) ([]byte, error) {
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		b := make([]byte, 32)
		if _, err := rand.Read(b); err != nil {
			return nil, fmt.Errorf("server: random bytes: %w", err)
		}
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return nil, fmt.Errorf("server: creating %s: %w", filepath.Base(path), err)
		}
		data := encode(b)
		if _, err := f.Write(data); err != nil {
			f.Close()
			return nil, fmt.Errorf("server: writing %s: %w", filepath.Base(path), err)
		}
		if durable {
			if err := f.Sync(); err != nil {
				f.Close()
				return nil, fmt.Errorf("server: syncing %s: %w", filepath.Base(path), err)
			}
		}
		if err := f.Close(); err != nil {
			return nil, err
		}
		return data, nil
	}
	if err != nil {
		return nil, fmt.Errorf("server: %s: %w", filepath.Base(path), err)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("server: %s has mode %o; it must be 0600", filepath.Base(path), fi.Mode().Perm())
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("server: reading %s: %w", filepath.Base(path), err)
	}
	return b, nil
}

// Handler returns the HTTP handler of every route.
func (s *Server) Handler() http.Handler { return s.handler }

// BoardToken returns the instance board token (for in-process callers and tests; it is
// never logged).
func (s *Server) BoardToken() string { return s.boardToken }

// Store returns the underlying store instance.
func (s *Server) Store() *store.Instance { return s.inst }

// Close commits queued writes and closes the store (ending every GET /api/changes
// wait first).
func (s *Server) Close() error {
	s.feed.close()
	err := s.inst.Close()
	s.lock.Close()
	return err
}

// company returns the company or a company_missing *Error.
func (s *Server) company(id string) (*store.Company, error) {
	c := s.inst.Company(id)
	if c == nil {
		return nil, &controlplane.Error{Code: controlplane.CodeCompanyMissing, Message: fmt.Sprintf("company %s does not exist", id)}
	}
	return c, nil
}

// DueWakes returns company's scheduled wakes due at or before dueBy (the state's
// ISO-8601 ms form; "" for all), oldest first: what the heartbeat runner takes.
// Errors: company_missing.
func (s *Server) DueWakes(ctx context.Context, company, dueBy string) ([]controlplane.ScheduledWake, error) {
	c, err := s.company(company)
	if err != nil {
		return nil, err
	}
	return c.ListWakes(ctx, dueBy)
}

// OpenRun opens (atomically checks out, journaled) a run in company and returns its
// context: the runner's checkout of a due wake. Errors: company_missing and the
// state machine's open_run codes.
func (s *Server) OpenRun(ctx context.Context, company string, in controlplane.OpenInput) (controlplane.RunContext, error) {
	c, err := s.company(company)
	if err != nil {
		return controlplane.RunContext{}, err
	}
	return c.OpenFixtureRun(ctx, in)
}

// Companies returns the instance ids of every company in creation order (the heartbeat
// runner iterates them for due wakes).
func (s *Server) Companies() []string { return s.inst.Companies() }

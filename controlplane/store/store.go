// Package store makes the control plane durable. An Instance hosts companies;
// each company is its own state machine (a controlplane.Memory) whose every
// state-changing operation — port operations and board operations, accepted or denied,
// since a denial records a decision — is appended to a journal and committed before it
// is acknowledged. Restart restores the newest snapshot and replays the journal after
// it, which reproduces byte-identical Serialize output because the state machine is
// deterministic (fixture clock, fixture ids, no wall clock, no randomness).
//
// Backends: SQLite (modernc.org/sqlite, one file, WAL, synchronous=FULL, write
// transactions BEGIN IMMEDIATE so that writers queue on the lock instead of failing
// busy when the board and an agent write at once; an ephemeral home's database skips the fsyncs and keeps
// its file locked, SQLiteOptions) and PostgreSQL (pgx), both migrated by goose. Commits are
// grouped: one goroutine writes every queued journal entry of every company in one
// transaction and acknowledges them all after the commit: no acknowledged entry exists
// only in memory.
//
// Blob bytes (docs/files.md) are kept in table blobs, written in the transaction of the
// journal entry that records them; the state machine holds their metadata only, so
// snapshots and the journal never carry them (an inline deliverable's base64 travels in
// its command), and every read is checked against its SHA-256.
package store

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/database"

	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx"
	_ "modernc.org/sqlite"             // database/sql driver "sqlite"

	"github.com/agentproof/agentproof/controlplane"
)

//go:embed migrations
var migrations embed.FS

// SnapshotEvery is the least number of journal entries of a company between two
// snapshots. The interval grows with the state (one entry per SnapshotBytesPerEntry
// bytes of the last snapshot), so that snapshot cost per operation stays bounded while
// a restart replays at most max(SnapshotEvery, size/SnapshotBytesPerEntry) entries.
const (
	SnapshotEvery         = 256
	SnapshotBytesPerEntry = 1024
)

// Dialect names a backend: "sqlite" or "postgres".
type Dialect string

// Backends.
const (
	SQLite   Dialect = "sqlite"
	Postgres Dialect = "postgres"
)

// Instance is an open store: a database and the companies it hosts, each loaded into
// memory. It is safe for concurrent use. Close it to stop the committer.
type Instance struct {
	db      *sql.DB
	dialect Dialect

	mu        sync.Mutex
	companies map[string]*Company
	order     []string

	queue    chan pending
	done     chan struct{}
	gate     sync.RWMutex // enqueue holds it shared, Close exclusively
	isClosed bool
	closed   chan struct{}
}

// pending is one queued write: a journal entry, a snapshot, a company or a secret,
// acknowledged on ack after its transaction commits. blobs are blob bytes written in
// the same transaction, before the journal entry or company that refers to them.
type pending struct {
	kind    string // "journal", "snapshot", "company", "secret"
	company string
	seq     int64
	op      string
	data    []byte
	blobs   map[string][]byte // SHA-256 → bytes
	secret  *SealedSecret
	ack     chan error
}

// OpenSQLite opens (creating and migrating when needed) the SQLite store in file path.
// It returns an error wrapping the driver's when the file cannot be opened or a
// company's journal cannot be replayed.
func OpenSQLite(ctx context.Context, path string) (*Instance, error) {
	return OpenSQLiteWith(ctx, path, SQLiteOptions{})
}

// SQLiteOptions configure OpenSQLiteWith.
type SQLiteOptions struct {
	// Ephemeral says the database is thrown away with its instance home (an attempt's
	// instance, server.Options.Ephemeral): commits are not fsynced (synchronous=OFF)
	// and the store's one connection holds the file locked for its whole life
	// (locking_mode=EXCLUSIVE: the WAL index lives in the process, so there is no -shm
	// file and no file lock per transaction). A killed process still loses nothing it
	// acknowledged (its writes are in the page cache, and the WAL is replayed on the
	// next open); an operating-system crash may lose recent commits,
	// which a thrown-away home, never reopened after one, does not need. No other
	// process can open the file while the store is open.
	Ephemeral bool
	// Fresh says the file was placed a moment ago by CopySQLiteTemplate (or
	// CopySQLiteTemplateEphemeral) from a template of this build's schema, and has no
	// WAL: its bytes are the template's (checked against the template's digest while
	// copied), which WriteSQLiteTemplate migrated and checkpointed. The integrity check
	// after recovery (there is nothing to recover) and the migrations (there is nothing
	// to migrate) are skipped. Never set it for a file that may have been written since.
	Fresh bool
}

// OpenSQLiteWith is OpenSQLite with options.
func OpenSQLiteWith(ctx context.Context, path string, o SQLiteOptions) (*Instance, error) {
	if strings.ContainsAny(path, "?#") {
		return nil, fmt.Errorf("store: sqlite path %q must not contain ? or #", path)
	}
	dsn := "file:" + path + "?_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)&_pragma=busy_timeout(10000)&_pragma=foreign_keys(ON)&_txlock=immediate"
	if o.Ephemeral {
		// locking_mode must precede the first WAL access: the driver applies the
		// _pragma list (sorted by name) before the _journal_mode key.
		dsn = "file:" + path + "?_pragma=locking_mode(EXCLUSIVE)&_journal_mode=WAL&_pragma=synchronous(OFF)&_pragma=busy_timeout(10000)&_pragma=foreign_keys(ON)&_txlock=immediate"
	}
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("store: opening sqlite %s: %w", path, err)
	}
	// One connection: every statement of the instance is serialised through it, so
	// there is never a second writer to be busy against.
	db.SetMaxOpenConns(1)
	// The WAL left by a killed process is SQLite's to replay; never move it
	// aside. Check the file after recovery and stop loudly when it is damaged.
	if !o.Fresh {
		var check string
		if err := db.QueryRowContext(ctx, "PRAGMA quick_check").Scan(&check); err != nil {
			db.Close()
			return nil, fmt.Errorf("store: sqlite quick_check of %s: %w", path, err)
		}
		if check != "ok" {
			db.Close()
			return nil, fmt.Errorf("store: sqlite quick_check of %s failed: %s", path, check)
		}
	}
	return open(ctx, db, SQLite, o)
}

// OpenPostgres opens (migrating when needed) the PostgreSQL store at url
// (postgres://…). It returns an error wrapping the driver's when the database is
// unreachable or a company's journal cannot be replayed.
func OpenPostgres(ctx context.Context, url string) (*Instance, error) {
	db, err := sql.Open("pgx", url)
	if err != nil {
		return nil, fmt.Errorf("store: opening postgres: %w", err)
	}
	db.SetMaxOpenConns(4)
	return open(ctx, db, Postgres, SQLiteOptions{})
}

// open migrates db (unless o.Fresh) and loads its companies; o.Ephemeral keeps an
// SQLite database at synchronous=OFF (SQLiteOptions.Ephemeral) instead of FULL.
func open(ctx context.Context, db *sql.DB, d Dialect, o SQLiteOptions) (*Instance, error) {
	ephemeral := o.Ephemeral
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("store: connecting to %s: %w", d, err)
	}
	if !o.Fresh {
		if err := migrate(ctx, db, d, ephemeral); err != nil {
			db.Close()
			return nil, err
		}
	}
	if d == SQLite {
		want, name := 2, "FULL"
		if ephemeral {
			want, name = 0, "OFF"
		}
		var level int
		_, err := db.ExecContext(ctx, "PRAGMA synchronous="+name)
		if err == nil {
			err = db.QueryRowContext(ctx, "PRAGMA synchronous").Scan(&level)
		}
		if err != nil || level != want {
			db.Close()
			return nil, fmt.Errorf("store: sqlite synchronous is %d, want %d (%s): %v", level, want, name, err)
		}
	}
	in := &Instance{db: db, dialect: d, companies: map[string]*Company{}, queue: make(chan pending, 1024),
		done: make(chan struct{}), closed: make(chan struct{})}
	if err := in.load(ctx); err != nil {
		db.Close()
		return nil, err
	}
	go in.committer()
	return in, nil
}

// migrate runs the migrations of dialect d that db lacks (goose); an SQLite database
// that is not ephemeral runs them at synchronous=NORMAL (open sets its level after).
func migrate(ctx context.Context, db *sql.DB, d Dialect, ephemeral bool) error {
	sub, err := fs.Sub(migrations, "migrations/"+string(d))
	if err != nil {
		return fmt.Errorf("store: migrations: %w", err)
	}
	gd := database.DialectSQLite3
	if d == Postgres {
		gd = database.DialectPostgres
	}
	prov, err := goose.NewProvider(gd, db, sub)
	if err != nil {
		return fmt.Errorf("store: migrations: %w", err)
	}
	if d == SQLite && !ephemeral {
		// Migrations need not be durable on their own (each is one transaction and
		// goose re-runs what is missing); the first acknowledged write fsyncs the WAL
		// with them. Saves several fsyncs on a fresh instance's start.
		if _, err := db.ExecContext(ctx, "PRAGMA synchronous=NORMAL"); err != nil {
			return fmt.Errorf("store: %w", err)
		}
	}
	if _, err := prov.Up(ctx); err != nil {
		return fmt.Errorf("store: migrating %s: %w", d, err)
	}
	return nil
}

// q rewrites ? placeholders as $n for PostgreSQL.
func (in *Instance) q(query string) string {
	if in.dialect != Postgres {
		return query
	}
	var b strings.Builder
	n := 0
	for _, r := range query {
		if r == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// Dialect returns the backend of the instance.
func (in *Instance) Dialect() Dialect { return in.dialect }

// load restores every company: newest snapshot, then the journal after it.
func (in *Instance) load(ctx context.Context) error {
	rows, err := in.db.QueryContext(ctx, "SELECT id FROM companies ORDER BY ordinal")
	if err != nil {
		return fmt.Errorf("store: listing companies: %w", err)
	}
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return fmt.Errorf("store: listing companies: %w", err)
		}
		ids = append(ids, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("store: listing companies: %w", err)
	}
	for _, id := range ids {
		m, seq, snap, err := in.replay(ctx, id, false)
		if err != nil {
			return err
		}
		in.companies[id] = &Company{inst: in, id: id, mem: m, seq: seq, lastSnapshot: snap.seq, lastSnapshotSize: snap.size}
		in.order = append(in.order, id)
	}
	return nil
}

// replay rebuilds company id from its newest snapshot (or, with fromStart, its first
// one) and the journal after it, returning the Memory and the last journal seq.
// snapshotInfo is the sequence number and size (bytes) of the snapshot a replay began at.
type snapshotInfo struct {
	seq  int64
	size int
}

func (in *Instance) replay(ctx context.Context, id string, fromStart bool) (*controlplane.Memory, int64, snapshotInfo, error) {
	order := "DESC"
	if fromStart {
		order = "ASC"
	}
	var snapSeq int64
	var state []byte
	err := in.db.QueryRowContext(ctx, in.q("SELECT seq, state FROM snapshots WHERE company_id = ? ORDER BY seq "+order+" LIMIT 1"), id).Scan(&snapSeq, &state)
	if err != nil {
		return nil, 0, snapshotInfo{}, fmt.Errorf("store: company %s: reading snapshot: %w", id, err)
	}
	m, err := controlplane.Restore(state)
	if err != nil {
		return nil, 0, snapshotInfo{}, fmt.Errorf("store: company %s: restoring snapshot %d: %w", id, snapSeq, err)
	}
	m.TakeContents() // bytes live in the blobs table
	rows, err := in.db.QueryContext(ctx, in.q("SELECT seq, op, input FROM journal WHERE company_id = ? AND seq > ? ORDER BY seq"), id, snapSeq)
	if err != nil {
		return nil, 0, snapshotInfo{}, fmt.Errorf("store: company %s: reading journal: %w", id, err)
	}
	defer rows.Close()
	last := snapSeq
	for rows.Next() {
		var seq int64
		var op string
		var input []byte
		if err := rows.Scan(&seq, &op, &input); err != nil {
			return nil, 0, snapshotInfo{}, fmt.Errorf("store: company %s: reading journal: %w", id, err)
		}
		if seq != last+1 {
			return nil, 0, snapshotInfo{}, fmt.Errorf("store: company %s: journal gap after entry %d (next is %d)", id, last, seq)
		}
		if err := applyEntry(ctx, m, op, input); err != nil {
			return nil, 0, snapshotInfo{}, fmt.Errorf("store: company %s: replaying entry %d (%s): %w", id, seq, op, err)
		}
		m.TakeContents() // inline deliverable bytes were written to the blobs table with the entry
		last = seq
	}
	if err := rows.Err(); err != nil {
		return nil, 0, snapshotInfo{}, fmt.Errorf("store: company %s: reading journal: %w", id, err)
	}
	return m, last, snapshotInfo{seq: snapSeq, size: len(state)}, nil
}

// ReplayFromStart rebuilds company id from its first snapshot and its whole journal,
// ignoring later snapshots, and returns its Serialize output: a durable company's
// Serialize equals it (the journal is the truth). Errors: unknown company, I/O.
func (in *Instance) ReplayFromStart(ctx context.Context, id string) ([]byte, error) {
	m, _, _, err := in.replay(ctx, id, true)
	if err != nil {
		return nil, err
	}
	return m.Serialize(ctx)
}

// CreateCompany adds a fixture company whose state machine starts from initial (a
// state as Serialize writes it; the state keeps its own company id, such as the default
// company-1, scoped by the instance id) and returns its instance id "company-NNNN".
// Errors: the controlplane.Restore errors of initial, ErrClosed, I/O.
func (in *Instance) CreateCompany(ctx context.Context, initial []byte) (string, error) {
	m, err := controlplane.Restore(initial)
	if err != nil {
		return "", err
	}
	return in.addCompany(ctx, func(string) (*controlplane.Memory, error) { return m, nil })
}

// CreateBoardCompany adds a company built from a bare seed (no default actor or task;
// a company budget) with the given name and issue prefix; its state company id is its
// instance id. Errors: fixture_state_invalid, ErrClosed, I/O.
func (in *Instance) CreateBoardCompany(ctx context.Context, name, issuePrefix string) (string, error) {
	return in.addCompany(ctx, func(id string) (*controlplane.Memory, error) {
		return controlplane.NewMemory(controlplane.Seed{Bare: true, Company: &controlplane.Company{
			ID: id, Name: name, IssuePrefix: issuePrefix, Status: "active", BudgetID: "budget-" + id}})
	})
}

func companyID(n int) string { return fmt.Sprintf("company-%04d", n) }

func (in *Instance) addCompany(ctx context.Context, build func(id string) (*controlplane.Memory, error)) (string, error) {
	in.mu.Lock()
	id := companyID(len(in.order) + 1)
	m, err := build(id)
	if err != nil {
		in.mu.Unlock()
		return "", err
	}
	// the initial state's blob bytes go to the blobs table (in the company's
	// transaction), never into its snapshot
	contents := m.TakeContents()
	state, err := m.Serialize(ctx)
	if err != nil {
		in.mu.Unlock()
		return "", err
	}
	ack := make(chan error, 1)
	if err := in.enqueue(pending{kind: "company", company: id, seq: int64(len(in.order) + 1), data: state, blobs: contents, ack: ack}); err != nil {
		in.mu.Unlock()
		return "", err
	}
	c := &Company{inst: in, id: id, mem: m, lastSnapshotSize: len(state)}
	in.companies[id] = c
	in.order = append(in.order, id)
	in.mu.Unlock()
	if err := <-ack; err != nil {
		c.fail(err)
		return "", err
	}
	return id, nil
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// Company returns the company with instance id id, or nil.
func (in *Instance) Company(id string) *Company {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.companies[id]
}

// Companies returns the instance ids of every company in creation order.
func (in *Instance) Companies() []string {
	in.mu.Lock()
	defer in.mu.Unlock()
	return append([]string(nil), in.order...)
}

// ErrClosed is returned for writes after Close.
var ErrClosed = errors.New("store: instance is closed")

func (in *Instance) enqueue(p pending) error {
	in.gate.RLock()
	defer in.gate.RUnlock()
	if in.isClosed {
		return ErrClosed
	}
	in.queue <- p
	return nil
}

// committer writes queued entries in group transactions until Close.
func (in *Instance) committer() {
	defer close(in.done)
	for {
		var batch []pending
		select {
		case p := <-in.queue:
			batch = append(batch, p)
		case <-in.closed:
			// drain what is queued, then stop
		drain:
			for {
				select {
				case p := <-in.queue:
					batch = append(batch, p)
				default:
					break drain
				}
			}
			if len(batch) > 0 {
				in.commit(batch)
			}
			return
		}
	more:
		for len(batch) < 512 {
			select {
			case p := <-in.queue:
				batch = append(batch, p)
			default:
				break more
			}
		}
		in.commit(batch)
	}
}

func (in *Instance) commit(batch []pending) {
	err := in.writeBatch(batch)
	for _, p := range batch {
		p.ack <- err
	}
}

func (in *Instance) writeBatch(batch []pending) error {
	ctx := context.Background()
	tx, err := in.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store: begin: %w", err)
	}
	for _, p := range batch {
		var err error
		for _, sha := range sortedKeys(p.blobs) {
			data := p.blobs[sha]
			if _, err = tx.ExecContext(ctx, in.q("INSERT INTO blobs (company_id, sha256, byte_size, content) VALUES (?, ?, ?, ?) ON CONFLICT (company_id, sha256) DO NOTHING"),
				p.company, sha, int64(len(data)), data); err != nil {
				tx.Rollback()
				return fmt.Errorf("store: writing blob %s of %s: %w", sha, p.company, err)
			}
		}
		switch p.kind {
		case "journal":
			_, err = tx.ExecContext(ctx, in.q("INSERT INTO journal (company_id, seq, op, input) VALUES (?, ?, ?, ?)"), p.company, p.seq, p.op, p.data)
		case "snapshot":
			_, err = tx.ExecContext(ctx, in.q("INSERT INTO snapshots (company_id, seq, state) VALUES (?, ?, ?)"), p.company, p.seq, p.data)
		case "company":
			if _, err = tx.ExecContext(ctx, in.q("INSERT INTO companies (id, ordinal) VALUES (?, ?)"), p.company, p.seq); err == nil {
				_, err = tx.ExecContext(ctx, in.q("INSERT INTO snapshots (company_id, seq, state) VALUES (?, 0, ?)"), p.company, p.data)
			}
		case "secret":
			s := p.secret
			kind := s.Kind
			if kind == "" {
				kind = "env"
			}
			_, err = tx.ExecContext(ctx, in.q("INSERT INTO secrets (company_id, id, name, key, kind, version, nonce, ciphertext) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"),
				s.CompanyID, s.ID, s.Name, s.Key, kind, s.Version, s.Nonce, s.Ciphertext)
		}
		if err != nil {
			tx.Rollback()
			return fmt.Errorf("store: writing %s of %s: %w", p.kind, p.company, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("store: commit: %w", err)
	}
	return nil
}

// Close stops accepting writes, commits what is queued and closes the database.
func (in *Instance) Close() error {
	in.gate.Lock()
	if in.isClosed {
		in.gate.Unlock()
		<-in.done
		return nil
	}
	in.isClosed = true
	close(in.closed)
	in.gate.Unlock()
	<-in.done
	return in.db.Close()
}

// SealedSecret is an encrypted secret as stored (package server seals and opens it;
// the store never sees the value). Version starts at 1. Kind is "env" or "login_file"
// (api.SecretKind; "" is stored as env).
type SealedSecret struct {
	CompanyID  string
	ID         string
	Name       string
	Key        string
	Kind       string
	Version    int64
	Nonce      []byte
	Ciphertext []byte
}

// PutSecret stores s durably (committed before it returns). Errors: ErrClosed, I/O
// (a duplicate (company, id, version) fails).
func (in *Instance) PutSecret(ctx context.Context, s SealedSecret) error {
	ack := make(chan error, 1)
	if err := in.enqueue(pending{kind: "secret", company: s.CompanyID, secret: &s, ack: ack}); err != nil {
		return err
	}
	select {
	case err := <-ack:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Secret returns the newest version of secret id of company, and false when there is
// none.
func (in *Instance) Secret(ctx context.Context, company, id string) (SealedSecret, bool, error) {
	s := SealedSecret{CompanyID: company, ID: id}
	err := in.db.QueryRowContext(ctx, in.q("SELECT name, key, kind, version, nonce, ciphertext FROM secrets WHERE company_id = ? AND id = ? ORDER BY version DESC LIMIT 1"), company, id).
		Scan(&s.Name, &s.Key, &s.Kind, &s.Version, &s.Nonce, &s.Ciphertext)
	if errors.Is(err, sql.ErrNoRows) {
		return SealedSecret{}, false, nil
	}
	if err != nil {
		return SealedSecret{}, false, fmt.Errorf("store: reading secret %s: %w", id, err)
	}
	return s, true, nil
}

// SecretCount returns how many secrets (all versions) company has.
func (in *Instance) SecretCount(ctx context.Context, company string) (int, error) {
	var n int
	err := in.db.QueryRowContext(ctx, in.q("SELECT COUNT(*) FROM secrets WHERE company_id = ?"), company).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("store: counting secrets: %w", err)
	}
	return n, nil
}

// SnapshotSeqs returns the journal sequence numbers at which company id has snapshots,
// ascending (0 is the initial state). Errors: I/O.
func (in *Instance) SnapshotSeqs(ctx context.Context, id string) ([]int64, error) {
	rows, err := in.db.QueryContext(ctx, in.q("SELECT seq FROM snapshots WHERE company_id = ? ORDER BY seq"), id)
	if err != nil {
		return nil, fmt.Errorf("store: listing snapshots of %s: %w", id, err)
	}
	defer rows.Close()
	var out []int64
	for rows.Next() {
		var n int64
		if err := rows.Scan(&n); err != nil {
			return nil, fmt.Errorf("store: listing snapshots of %s: %w", id, err)
		}
		out = append(out, n)
	}
	return out, rows.Err()
}

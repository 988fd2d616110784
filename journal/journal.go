package journal

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" database/sql driver
)

// applicationID marks a SQLite file as a proxmox-mcp journal ("PMCJ").
const applicationID = 0x504d434a

// fileMode is the mode of the database and its -wal and -shm files.
const fileMode fs.FileMode = 0o600

// Options configure Open. Zero values take the defaults shown.
type Options struct {
	// ReadOnly opens an existing journal for reading only (the CLI): no
	// file is created, no migration runs, and the write methods fail.
	ReadOnly bool
	// Logger receives warnings (a journal file with loose permissions
	// that was tightened, migrations). Default: slog.Default().
	Logger *slog.Logger
	// BusyTimeout is how long a statement waits for another process's
	// lock (5s).
	BusyTimeout time.Duration
	// PollInterval is how often Follow looks for rows written by another
	// process (250ms); rows written through this Journal wake it at once.
	PollInterval time.Duration
	// MaxBatch bounds how many writes share one transaction and one fsync
	// (256).
	MaxBatch int
	// Now returns the current time (time.Now).
	Now func() time.Time
	// ObserveCommit, when set, is told of every committed transaction:
	// how many rows it held and how long it took from begin to the
	// durable commit (the metrics' journal commit latency). It runs on
	// the writer goroutine and must not block.
	ObserveCommit func(rows int, d time.Duration)
	// RelaxCalls writes a commit that holds only call rows (reads,
	// refusals, calls that sent nothing to PVE) to the WAL without an
	// fsync (synchronous=NORMAL): it survives a crash of the process, and
	// the next fsynced commit (any intent, receipt, observation, job or
	// resolution, or a checkpoint) makes it durable against a power cut
	// too. A commit holding any other row is always fsynced, and without
	// RelaxCalls every commit is (docs/journal.md, "Durability").
	RelaxCalls bool
}

// Errors of the write methods.
var (
	// ErrClosed: the journal was closed.
	ErrClosed = errors.New("journal: closed")
	// ErrReadOnly: the journal was opened read-only.
	ErrReadOnly = errors.New("journal: opened read-only")
	// ErrNoIntent: a receipt names a call that has no intent.
	ErrNoIntent = errors.New("journal: no intent with this call id")
	// ErrReceiptExists: the intent already has its receipt.
	ErrReceiptExists = errors.New("journal: the call already has a receipt")
	// ErrDuplicateCall: the call id is already in the journal.
	ErrDuplicateCall = errors.New("journal: call id already used")
	// ErrInvalid marks a call or result that breaks a rule; the message
	// names the field and the rule.
	ErrInvalid = errors.New("journal: invalid")
)

// Journal is an open journal. Its methods are safe for concurrent use.
type Journal struct {
	path     string
	w        *sql.DB // one connection: every write goes through the writer goroutine
	r        *sql.DB // a pool of read-only connections
	log      *slog.Logger
	now      func() time.Time
	red      *Redactor
	poll     time.Duration
	busy     time.Duration
	maxBatch int
	readOnly bool
	stmts    *writeStmts
	observe  func(rows int, d time.Duration)
	// relaxCalls is Options.RelaxCalls. relaxed is the writer
	// connection's setting: synchronous=NORMAL after a commit of call rows
	// only (read and written by the writer goroutine alone).
	relaxCalls bool
	relaxed    bool
	// verifyChunk is how many ids one query of Verify covers
	// (defaultVerifyChunk; tests make it small to cross many chunks).
	verifyChunk int64

	mu      sync.RWMutex // guards closed and sending on reqs
	closed  bool
	reqs    chan *writeReq
	stopped chan struct{} // closed when the writer goroutine returns

	changedMu sync.Mutex
	changed   chan struct{} // closed and replaced after each commit

	stats struct {
		rows, commits, synced, failures atomic.Int64
	}
}

// Open opens the journal at path, creating it (mode 0600, whatever the
// umask) and bringing its schema up to date unless opts.ReadOnly. The
// directory must exist. A file that is not a proxmox-mcp journal, or whose
// schema is newer than this binary knows, is refused.
func Open(ctx context.Context, path string, opts Options) (*Journal, error) {
	if path == "" {
		return nil, errors.New("journal: open: no path given")
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("journal: open %s: %w", path, err)
	}
	j := &Journal{
		path: abs, log: opts.Logger, now: opts.Now, poll: opts.PollInterval, relaxCalls: opts.RelaxCalls,
		maxBatch: opts.MaxBatch, readOnly: opts.ReadOnly, changed: make(chan struct{}), observe: opts.ObserveCommit,
		verifyChunk: defaultVerifyChunk,
	}
	if j.log == nil {
		j.log = slog.Default()
	}
	if j.now == nil {
		j.now = time.Now
	}
	if j.poll <= 0 {
		j.poll = 250 * time.Millisecond
	}
	if j.maxBatch <= 0 {
		j.maxBatch = 256
	}
	busy := opts.BusyTimeout
	if busy <= 0 {
		busy = 5 * time.Second
	}
	if opts.BusyTimeout < 0 || opts.PollInterval < 0 || opts.MaxBatch < 0 {
		return nil, fmt.Errorf("journal: open %s: negative option (busy timeout %v, poll interval %v, max batch %d)",
			path, opts.BusyTimeout, opts.PollInterval, opts.MaxBatch)
	}
	j.busy = busy
	if err := j.prepareFile(); err != nil {
		return nil, err
	}
	if !j.readOnly {
		j.w, err = sql.Open("sqlite", dsn(abs, "rw", busy))
		if err != nil {
			return nil, fmt.Errorf("journal: open %s: %w", path, err)
		}
		j.w.SetMaxOpenConns(1)
		j.w.SetConnMaxIdleTime(0)
		j.w.SetConnMaxLifetime(0)
		if err := j.migrate(ctx); err != nil {
			j.w.Close()
			return nil, err
		}
		if err := j.tightenSidecars(); err != nil {
			j.w.Close()
			return nil, err
		}
		if j.stmts, err = j.prepareWrites(ctx); err != nil {
			j.w.Close()
			return nil, err
		}
	}
	j.r, err = sql.Open("sqlite", dsn(abs, "ro", busy))
	if err != nil {
		j.closeDBs()
		return nil, fmt.Errorf("journal: open %s: %w", path, err)
	}
	j.r.SetMaxOpenConns(4)
	if err := j.checkVersion(ctx); err != nil {
		j.closeDBs()
		return nil, err
	}
	salt, err := j.meta(ctx, "redaction_salt")
	if err != nil {
		j.closeDBs()
		return nil, err
	}
	saltBytes, err := hex.DecodeString(salt)
	if err == nil {
		j.red, err = NewRedactor(saltBytes)
	}
	if err != nil {
		j.closeDBs()
		return nil, fmt.Errorf("journal: open %s: redaction salt: %w", path, err)
	}
	if !j.readOnly {
		j.reqs = make(chan *writeReq, 1024)
		j.stopped = make(chan struct{})
		go j.writer()
	}
	return j, nil
}

// dsn is the driver's name for the database at path. Every connection
// gets the busy timeout; the writer's transactions take the write lock at
// BEGIN (so a batch never fails half-way on a lock upgrade), and its
// commits are fsynced (synchronous=FULL) in WAL mode.
//
// mode is rw (the writer), ro (the readers: also query_only) or backup (a
// read-only connection for VACUUM INTO, which query_only forbids).
func dsn(path, mode string, busy time.Duration) string {
	q := url.Values{}
	q.Set("mode", mode)
	if mode == "backup" {
		q.Set("mode", "ro")
	}
	q.Set("_busy_timeout", fmt.Sprint(busy.Milliseconds()))
	switch mode {
	case "rw":
		q.Set("_journal_mode", "WAL")
		q.Set("_synchronous", "FULL")
		q.Set("_txlock", "immediate")
		q.Add("_pragma", "journal_size_limit(67108864)")
	case "ro":
		q.Set("_query_only", "1")
	}
	u := url.URL{Scheme: "file", OmitHost: true, Path: path, RawQuery: q.Encode()}
	return u.String()
}

// prepareFile creates the database file with mode 0600 (a writable open of
// a missing file), or checks the existing one: a regular file, not a
// symbolic link, tightened to 0600 if it was looser.
func (j *Journal) prepareFile() error {
	dir := filepath.Dir(j.path)
	if st, err := os.Stat(dir); err != nil {
		return fmt.Errorf("journal: open %s: directory: %w", j.path, err)
	} else if !st.IsDir() {
		return fmt.Errorf("journal: open %s: %s is not a directory", j.path, dir)
	}
	st, err := os.Lstat(j.path)
	switch {
	case errors.Is(err, fs.ErrNotExist) && j.readOnly:
		return fmt.Errorf("journal: open %s: no journal there (the daemon creates it when it first starts): %w", j.path, err)
	case errors.Is(err, fs.ErrNotExist):
		f, err := os.OpenFile(j.path, os.O_RDWR|os.O_CREATE|os.O_EXCL, fileMode)
		if errors.Is(err, fs.ErrExist) {
			// Another process created it a moment ago: open it as it is.
			return j.prepareFile()
		}
		if err != nil {
			return fmt.Errorf("journal: create %s: %w", j.path, err)
		}
		defer f.Close()
		// The umask may have narrowed the mode; set it exactly.
		if err := f.Chmod(fileMode); err != nil {
			return fmt.Errorf("journal: create %s: %w", j.path, err)
		}
		if err := f.Sync(); err != nil {
			return fmt.Errorf("journal: create %s: %w", j.path, err)
		}
		return syncDir(dir)
	case err != nil:
		return fmt.Errorf("journal: open %s: %w", j.path, err)
	case !st.Mode().IsRegular():
		return fmt.Errorf("journal: open %s: not a regular file (%s)", j.path, st.Mode().Type())
	}
	if !j.readOnly && st.Mode().Perm() != fileMode {
		j.log.Warn("journal: tightening the journal file's mode", "path", j.path, "was", st.Mode().Perm().String(), "now", fileMode.String())
		if err := os.Chmod(j.path, fileMode); err != nil {
			return fmt.Errorf("journal: open %s: %w", j.path, err)
		}
	}
	return nil
}

// tightenSidecars sets the mode of the -wal and -shm files, which SQLite
// creates beside the database, to 0600.
func (j *Journal) tightenSidecars() error {
	for _, suffix := range []string{"-wal", "-shm"} {
		p := j.path + suffix
		st, err := os.Lstat(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("journal: open %s: %w", j.path, err)
		}
		if !st.Mode().IsRegular() {
			return fmt.Errorf("journal: open %s: %s is not a regular file", j.path, p)
		}
		if st.Mode().Perm() != fileMode {
			if err := os.Chmod(p, fileMode); err != nil {
				return fmt.Errorf("journal: open %s: %w", j.path, err)
			}
		}
	}
	return nil
}

// Path returns the journal's file.
func (j *Journal) Path() string { return j.path }

// Redactor returns the journal's redactor, so that other records (logs)
// can redact the same way, with the same markers.
func (j *Journal) Redactor() *Redactor { return j.red }

// Stats are counters of the writes since Open.
type Stats struct {
	// Rows appended.
	Rows int64
	// Commits: transactions; Rows/Commits is the mean batch.
	Commits int64
	// Synced: the commits that were fsynced before they returned (all but
	// those of call rows alone with Options.RelaxCalls).
	Synced int64
	// Failures: writes that returned an error.
	Failures int64
}

// Stats returns the counters of the writes since Open.
func (j *Journal) Stats() Stats {
	return Stats{Rows: j.stats.rows.Load(), Commits: j.stats.commits.Load(), Synced: j.stats.synced.Load(), Failures: j.stats.failures.Load()}
}

// Close waits for the writes already accepted, then closes the database.
// Writes after Close fail with ErrClosed; Follow streams end.
func (j *Journal) Close() error {
	j.mu.Lock()
	if j.closed {
		j.mu.Unlock()
		return nil
	}
	j.closed = true
	if j.reqs != nil {
		close(j.reqs)
	}
	j.mu.Unlock()
	if j.stopped != nil {
		<-j.stopped
	}
	j.notify()
	return j.closeDBs()
}

func (j *Journal) closeDBs() error {
	var errs []error
	if j.r != nil {
		errs = append(errs, j.r.Close())
	}
	if j.w != nil {
		errs = append(errs, j.w.Close())
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("journal: close %s: %w", j.path, err)
	}
	return nil
}

// isClosed reports whether Close was called.
func (j *Journal) isClosed() bool {
	j.mu.RLock()
	defer j.mu.RUnlock()
	return j.closed
}

// notify wakes every Follow waiting for new rows.
func (j *Journal) notify() {
	j.changedMu.Lock()
	close(j.changed)
	j.changed = make(chan struct{})
	j.changedMu.Unlock()
}

// changedChan returns a channel closed at the next commit.
func (j *Journal) changedChan() <-chan struct{} {
	j.changedMu.Lock()
	defer j.changedMu.Unlock()
	return j.changed
}

// newCallID returns 128 random bits in hex.
func newCallID() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("journal: call id: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

// syncDir makes a new directory entry durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("fsync directory %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("fsync directory %s: %w", dir, err)
	}
	return nil
}

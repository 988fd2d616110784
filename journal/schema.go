package journal

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"
)

// migration brings the schema from version n to n+1 inside a transaction.
type migration struct {
	summary string
	apply   func(ctx context.Context, tx *sql.Tx) error
}

// migrations are applied in order; the schema version (PRAGMA
// user_version) is the number applied. A released migration is never
// changed: a change is a new migration.
var migrations = [...]migration{
	{"events with a SHA-256 chain, open intents, meta", migrate1},
	{"the change contract: a detail column, observation, resolution and plan rows, the operation-key index", migrate2},
	{"jobs: job rows (a task's state as the daemon learnt it) and the index of each key's tasks", migrate3},
}

// SchemaVersion is the schema version this package writes.
const SchemaVersion = len(migrations)

func migrate1(ctx context.Context, tx *sql.Tx) error {
	stmts := []string{
		`CREATE TABLE meta (
			name  TEXT PRIMARY KEY,
			value TEXT NOT NULL
		) STRICT`,
		// events: one row per call, intent or receipt. Columns are
		// described in docs/journal.md; every column but hash is covered
		// by hash, in this order.
		`CREATE TABLE events (
			id              INTEGER PRIMARY KEY AUTOINCREMENT,
			format          INTEGER NOT NULL,
			time            TEXT NOT NULL,
			kind            TEXT NOT NULL CHECK (kind IN ('call', 'intent', 'receipt')),
			call_id         TEXT NOT NULL,
			key_id          TEXT NOT NULL,
			key_name        TEXT NOT NULL,
			profile         TEXT NOT NULL,
			policy          TEXT NOT NULL,
			transport       TEXT NOT NULL,
			source          TEXT NOT NULL,
			tailnet_user    TEXT NOT NULL,
			tailnet_node    TEXT NOT NULL,
			tool            TEXT NOT NULL,
			endpoint        TEXT NOT NULL,
			method          TEXT NOT NULL,
			path_template   TEXT NOT NULL,
			path            TEXT NOT NULL,
			risk            TEXT NOT NULL,
			args            TEXT NOT NULL,
			effect          TEXT NOT NULL,
			reasons         TEXT NOT NULL,
			decision_policy TEXT NOT NULL,
			policy_digest   TEXT NOT NULL,
			prior_digest    TEXT NOT NULL,
			prior_config    TEXT NOT NULL,
			outcome         TEXT NOT NULL,
			error           TEXT NOT NULL,
			status          INTEGER NOT NULL,
			duration_us     INTEGER NOT NULL,
			upid            TEXT NOT NULL,
			job_id          TEXT NOT NULL,
			prev_hash       TEXT NOT NULL,
			hash            TEXT NOT NULL
		) STRICT`,
		// A call id has at most one row of each kind.
		`CREATE UNIQUE INDEX events_call ON events (call_id, kind)`,
		`CREATE INDEX events_upid ON events (upid) WHERE upid <> ''`,
		// Rows are never changed or removed through SQL. (Someone with
		// write access to the file can drop these triggers; the hash chain
		// is what shows that.)
		`CREATE TRIGGER events_append_only_update BEFORE UPDATE ON events
			BEGIN SELECT RAISE(ABORT, 'journal events are append-only'); END`,
		`CREATE TRIGGER events_append_only_delete BEFORE DELETE ON events
			BEGIN SELECT RAISE(ABORT, 'journal events are append-only'); END`,
		// open_intents is derived from events (intents without a receipt),
		// kept in the same transactions so that finding them costs
		// O(open) rather than a scan; Verify checks it against the rows.
		`CREATE TABLE open_intents (
			call_id  TEXT PRIMARY KEY,
			event_id INTEGER NOT NULL
		) STRICT`,
		fmt.Sprintf(`PRAGMA application_id = %d`, applicationID),
	}
	for _, s := range stmts {
		if _, err := tx.ExecContext(ctx, s); err != nil {
			return err
		}
	}
	var salt [32]byte
	if _, err := rand.Read(salt[:]); err != nil {
		return err
	}
	_, err := tx.ExecContext(ctx, `INSERT INTO meta (name, value) VALUES ('redaction_salt', ?), ('created', ?)`,
		hex.EncodeToString(salt[:]), time.Now().UTC().Format(timeLayout))
	return err
}

// migrate2 rebuilds events with a detail column (hashed in format 2 rows,
// absent from the hash of the format 1 rows copied over unchanged) and the
// change contract's kinds, and adds the operation-key index. SQLite cannot
// change a CHECK in place, so the table is copied: ids, hashes and the
// AUTOINCREMENT counter are kept, and Verify still checks every old row.
func migrate2(ctx context.Context, tx *sql.Tx) error {
	stmts := []string{
		`CREATE TABLE events_v2 (
			id              INTEGER PRIMARY KEY AUTOINCREMENT,
			format          INTEGER NOT NULL,
			time            TEXT NOT NULL,
			kind            TEXT NOT NULL CHECK (kind IN ('call', 'intent', 'receipt', 'observation', 'resolution', 'plan')),
			call_id         TEXT NOT NULL,
			key_id          TEXT NOT NULL,
			key_name        TEXT NOT NULL,
			profile         TEXT NOT NULL,
			policy          TEXT NOT NULL,
			transport       TEXT NOT NULL,
			source          TEXT NOT NULL,
			tailnet_user    TEXT NOT NULL,
			tailnet_node    TEXT NOT NULL,
			tool            TEXT NOT NULL,
			endpoint        TEXT NOT NULL,
			method          TEXT NOT NULL,
			path_template   TEXT NOT NULL,
			path            TEXT NOT NULL,
			risk            TEXT NOT NULL,
			args            TEXT NOT NULL,
			effect          TEXT NOT NULL,
			reasons         TEXT NOT NULL,
			decision_policy TEXT NOT NULL,
			policy_digest   TEXT NOT NULL,
			prior_digest    TEXT NOT NULL,
			prior_config    TEXT NOT NULL,
			outcome         TEXT NOT NULL,
			error           TEXT NOT NULL,
			status          INTEGER NOT NULL,
			duration_us     INTEGER NOT NULL,
			upid            TEXT NOT NULL,
			job_id          TEXT NOT NULL,
			detail          TEXT NOT NULL DEFAULT '',
			prev_hash       TEXT NOT NULL,
			hash            TEXT NOT NULL
		) STRICT`,
		`INSERT INTO events_v2 (id, format, time, kind, call_id, key_id, key_name, profile, policy, transport, source,
			tailnet_user, tailnet_node, tool, endpoint, method, path_template, path, risk, args, effect, reasons,
			decision_policy, policy_digest, prior_digest, prior_config, outcome, error, status, duration_us,
			upid, job_id, prev_hash, hash)
		SELECT id, format, time, kind, call_id, key_id, key_name, profile, policy, transport, source,
			tailnet_user, tailnet_node, tool, endpoint, method, path_template, path, risk, args, effect, reasons,
			decision_policy, policy_digest, prior_digest, prior_config, outcome, error, status, duration_us,
			upid, job_id, prev_hash, hash FROM events ORDER BY id`,
		`DROP TABLE events`,
		`ALTER TABLE events_v2 RENAME TO events`,
		// A call id has at most one call, intent and receipt row;
		// observations, resolutions and plans of a call may be many.
		`CREATE UNIQUE INDEX events_call ON events (call_id, kind) WHERE kind IN ('call', 'intent', 'receipt')`,
		`CREATE INDEX events_call_all ON events (call_id, id)`,
		`CREATE INDEX events_upid ON events (upid) WHERE upid <> ''`,
		// The reads, observations and writes of one path, in order: undo's
		// evidence of what changed since.
		`CREATE INDEX events_path ON events (path, id)`,
		// The operations of one change (a group a key named), for undo.
		`CREATE INDEX events_change ON events (key_id, json_extract(detail, '$.change'), id) WHERE detail <> '' AND kind = 'intent'`,
		`CREATE TRIGGER events_append_only_update BEFORE UPDATE ON events
			BEGIN SELECT RAISE(ABORT, 'journal events are append-only'); END`,
		`CREATE TRIGGER events_append_only_delete BEFORE DELETE ON events
			BEGIN SELECT RAISE(ABORT, 'journal events are append-only'); END`,
		// operations is derived from the intents that carry an operation
		// key, in the same transactions: the (key, operation key) claim
		// that makes a retried write safe. Verify checks it.
		`CREATE TABLE operations (
			key_id         TEXT NOT NULL,
			operation_key  TEXT NOT NULL,
			call_id        TEXT NOT NULL,
			request_digest TEXT NOT NULL,
			PRIMARY KEY (key_id, operation_key)
		) STRICT`,
	}
	// The AUTOINCREMENT counter remembers the highest id ever given out
	// (Verify compares it with the last row); the copy keeps it.
	var seq sql.NullInt64
	if err := tx.QueryRowContext(ctx, `SELECT seq FROM sqlite_sequence WHERE name = 'events'`).Scan(&seq); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return err
	}
	for _, s := range stmts {
		if _, err := tx.ExecContext(ctx, s); err != nil {
			return err
		}
	}
	if seq.Valid {
		if _, err := tx.ExecContext(ctx, `DELETE FROM sqlite_sequence WHERE name = 'events'`); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO sqlite_sequence (name, seq) VALUES ('events', ?)`, seq.Int64); err != nil {
			return err
		}
	}
	return nil
}

// migrate3 rebuilds events with the job kind in its CHECK (SQLite cannot
// change one in place) and adds the index of the receipts that name a
// task, per key: the jobs a key lists. The table is copied as migrate2
// copies it (ids, hashes, formats and the AUTOINCREMENT counter kept);
// its indexes and triggers are those version 2 made, read back from the
// file and made again on the copy.
func migrate3(ctx context.Context, tx *sql.Tx) error {
	var create string
	if err := tx.QueryRowContext(ctx, `SELECT sql FROM sqlite_schema WHERE type = 'table' AND name = 'events'`).Scan(&create); err != nil {
		return fmt.Errorf("events table: %w", err)
	}
	const kinds = `'observation', 'resolution', 'plan')`
	open := strings.Index(create, "(")
	if open < 0 || strings.Count(create, kinds) != 1 {
		return errors.New("events table: not the table schema version 2 made (its kind check)")
	}
	create = "CREATE TABLE events_v3 " + strings.Replace(create[open:], kinds, `'observation', 'resolution', 'plan', 'job')`, 1)
	rows, err := tx.QueryContext(ctx, `SELECT sql FROM sqlite_schema WHERE tbl_name = 'events' AND type IN ('index', 'trigger') AND sql IS NOT NULL ORDER BY type, name`)
	if err != nil {
		return err
	}
	var again []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			rows.Close()
			return err
		}
		again = append(again, s)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	var seq sql.NullInt64
	if err := tx.QueryRowContext(ctx, `SELECT seq FROM sqlite_sequence WHERE name = 'events'`).Scan(&seq); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return err
	}
	stmts := []string{create,
		`INSERT INTO events_v3 (` + columns + `) SELECT ` + columns + ` FROM events ORDER BY id`,
		`DROP TABLE events`,
		`ALTER TABLE events_v3 RENAME TO events`,
	}
	stmts = append(stmts, again...)
	// The receipts and job rows that name a task, per key: a key's jobs.
	stmts = append(stmts, `CREATE INDEX events_jobs ON events (key_id, id) WHERE kind IN ('receipt', 'job') AND upid <> ''`)
	for _, s := range stmts {
		if _, err := tx.ExecContext(ctx, s); err != nil {
			return err
		}
	}
	if seq.Valid {
		if _, err := tx.ExecContext(ctx, `DELETE FROM sqlite_sequence WHERE name = 'events'`); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO sqlite_sequence (name, seq) VALUES ('events', ?)`, seq.Int64); err != nil {
			return err
		}
	}
	return nil
}

// identify reads the file's application id and schema version, and
// whether it has tables at all.
func identify(ctx context.Context, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}) (appID, version int, tables int, err error) {
	if err = q.QueryRowContext(ctx, `PRAGMA application_id`).Scan(&appID); err != nil {
		return
	}
	if err = q.QueryRowContext(ctx, `PRAGMA user_version`).Scan(&version); err != nil {
		return
	}
	err = q.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_schema`).Scan(&tables)
	return
}

// checkIdentity refuses files that are not journals or are too new.
func (j *Journal) checkIdentity(appID, version, tables int) error {
	switch {
	case appID == 0 && version == 0 && tables == 0:
		return nil // empty: a new journal
	case appID != applicationID:
		return fmt.Errorf("journal: open %s: not a proxmox-mcp journal (SQLite application id %#x)", j.path, appID)
	case version > SchemaVersion:
		return fmt.Errorf("journal: open %s: schema version %d is newer than this binary knows (%d); use a newer proxmox-mcp", j.path, version, SchemaVersion)
	}
	return nil
}

// migrate applies the migrations the file lacks, each in its own
// transaction. The writer's transactions take the write lock at BEGIN, and
// the version is read inside it: processes opening a new journal at the
// same moment (several `proxmox-mcp stdio` sessions, `serve` and an `audit`
// command) migrate it once, in turn, instead of racing to create it.
func (j *Journal) migrate(ctx context.Context) error {
	deadline := time.Now().Add(j.busy)
	for {
		tx, err := j.w.BeginTx(ctx, nil)
		var appID, version, tables int
		if err == nil {
			if appID, version, tables, err = identify(ctx, tx); err != nil {
				tx.Rollback()
			}
		}
		if err != nil {
			// A new file's first connections race to switch it to WAL,
			// and SQLite answers some of them "busy" at once, without
			// waiting: try again until the busy timeout has passed.
			if isBusy(err) && time.Now().Before(deadline) {
				select {
				case <-ctx.Done():
					return fmt.Errorf("journal: open %s: %w", j.path, ctx.Err())
				case <-time.After(10 * time.Millisecond):
				}
				continue
			}
			return fmt.Errorf("journal: open %s: %w", j.path, err)
		}
		if err := j.checkIdentity(appID, version, tables); err != nil || version >= SchemaVersion {
			tx.Rollback()
			return err
		}
		m := migrations[version]
		if err := m.apply(ctx, tx); err != nil {
			tx.Rollback()
			return fmt.Errorf("journal: migrate %s to version %d (%s): %w", j.path, version+1, m.summary, err)
		}
		if _, err := tx.ExecContext(ctx, fmt.Sprintf(`PRAGMA user_version = %d`, version+1)); err != nil {
			tx.Rollback()
			return fmt.Errorf("journal: migrate %s to version %d: %w", j.path, version+1, err)
		}
		if err := tx.Commit(); err != nil {
			return fmt.Errorf("journal: migrate %s to version %d: %w", j.path, version+1, err)
		}
		j.log.Info("journal: schema migrated", "path", j.path, "version", version+1, "migration", m.summary)
	}
}

// checkVersion checks, through the read pool, that the file is a journal of
// exactly this schema version (a read-only open cannot migrate).
func (j *Journal) checkVersion(ctx context.Context) error {
	appID, version, tables, err := identify(ctx, j.r)
	if err != nil {
		return fmt.Errorf("journal: open %s: %w", j.path, err)
	}
	if appID == 0 && version == 0 && tables == 0 {
		return fmt.Errorf("journal: open %s: the file is empty, not yet a journal (the daemon creates it when it first starts)", j.path)
	}
	if err := j.checkIdentity(appID, version, tables); err != nil {
		return err
	}
	if version < SchemaVersion {
		return fmt.Errorf("journal: open %s: schema version %d is older than this binary's %d; the daemon upgrades it when it next starts", j.path, version, SchemaVersion)
	}
	return nil
}

// meta reads one value of the meta table.
func (j *Journal) meta(ctx context.Context, name string) (string, error) {
	var v string
	err := j.r.QueryRowContext(ctx, `SELECT value FROM meta WHERE name = ?`, name).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return "", fmt.Errorf("journal: open %s: meta %q is missing", j.path, name)
	}
	if err != nil {
		return "", fmt.Errorf("journal: open %s: meta %q: %w", j.path, name, err)
	}
	return v, nil
}

// isBusy reports whether SQLite refused because another connection holds a
// lock (SQLITE_BUSY or SQLITE_LOCKED, with any extended code).
func isBusy(err error) bool {
	var coded interface{ Code() int }
	if !errors.As(err, &coded) {
		return false
	}
	switch coded.Code() & 0xff {
	case 5, 6: // SQLITE_BUSY, SQLITE_LOCKED
		return true
	}
	return false
}

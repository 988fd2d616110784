package journal

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// seed writes 10 rows: calls 1–4, intent 5 with receipt 6, calls 7–9 and an
// open intent 10.
func seed(t *testing.T, j *Journal) {
	t.Helper()
	ctx := context.Background()
	for i := 0; i < 4; i++ {
		if _, err := j.Record(ctx, readCall(), Result{Outcome: OutcomeOK}); err != nil {
			t.Fatal(err)
		}
	}
	in, err := j.Intent(ctx, writeCall())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := j.Receipt(ctx, in.CallID, Result{Outcome: OutcomeOK}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if _, err := j.Record(ctx, readCall(), Result{Outcome: OutcomeOK}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := j.Intent(ctx, writeCall()); err != nil {
		t.Fatal(err)
	}
}

// seeded opens a journal in a directory of its own, seeded, and returns
// it with its file's path.
func seeded(t *testing.T) (*Journal, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "journal.db")
	j, err := Open(context.Background(), path, Options{Logger: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() })
	seed(t, j)
	return j, path
}

// tamperer is a second connection to the journal's file, as someone with
// write access to it would have: the append-only triggers are dropped
// first, as such a person would.
func tamperer(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	for _, s := range []string{`DROP TRIGGER events_append_only_update`, `DROP TRIGGER events_append_only_delete`} {
		if _, err := db.Exec(s); err != nil {
			t.Fatal(err)
		}
	}
	return db
}

// rehash recomputes the hash of row id from its stored columns, as someone
// who knows the encoding would after changing it.
func rehash(t *testing.T, db *sql.DB, id int64) {
	t.Helper()
	var r row
	if err := db.QueryRow(`SELECT `+columns+` FROM events WHERE id = ?`, id).Scan(r.fields()...); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`UPDATE events SET hash = ? WHERE id = ?`, r.computeHash(), id); err != nil {
		t.Fatal(err)
	}
}

func TestVerifyDetectsTampering(t *testing.T) {
	cases := []struct {
		name   string
		tamper func(t *testing.T, db *sql.DB)
		id     int64
		reason string
	}{
		{"a changed argument", func(t *testing.T, db *sql.DB) {
			mustExec(t, db, `UPDATE events SET args = '{"path":"/nodes/pve1/qemu/999"}' WHERE id = 4`)
		}, 4, "does not match its contents"},
		{"a changed outcome", func(t *testing.T, db *sql.DB) {
			mustExec(t, db, `UPDATE events SET outcome = 'error' WHERE id = 6`)
		}, 6, "does not match its contents"},
		{"a changed key name, rehashed", func(t *testing.T, db *sql.DB) {
			mustExec(t, db, `UPDATE events SET key_name = 'bob' WHERE id = 2`)
			rehash(t, db, 2)
		}, 3, "prev_hash"},
		{"a changed hash", func(t *testing.T, db *sql.DB) {
			mustExec(t, db, `UPDATE events SET hash = '`+strings.Repeat("a", 64)+`' WHERE id = 8`)
		}, 8, "does not match its contents"},
		{"a deleted row", func(t *testing.T, db *sql.DB) {
			mustExec(t, db, `DELETE FROM events WHERE id = 7`)
		}, 7, "missing (the next row is 8)"},
		{"the first row deleted", func(t *testing.T, db *sql.DB) {
			mustExec(t, db, `DELETE FROM events WHERE id = 1`)
		}, 1, "missing"},
		{"the last row deleted", func(t *testing.T, db *sql.DB) {
			mustExec(t, db, `DELETE FROM events WHERE id = 10`)
			mustExec(t, db, `DELETE FROM open_intents`)
		}, 10, "ids up to 10 were given out"},
		{"a row renumbered", func(t *testing.T, db *sql.DB) {
			mustExec(t, db, `UPDATE events SET id = 99 WHERE id = 3`)
		}, 3, "missing"},
		{"a forged row appended", func(t *testing.T, db *sql.DB) {
			mustExec(t, db, `INSERT INTO events SELECT 11, format, time, kind, 'forged', key_id, key_name, profile, policy,
				transport, source, tailnet_user, tailnet_node, tool, endpoint, method, path_template, path, risk, args,
				effect, reasons, decision_policy, policy_digest, prior_digest, prior_config, outcome, error, status,
				duration_us, upid, job_id, detail, '`+strings.Repeat("0", 64)+`', hash FROM events WHERE id = 9`)
		}, 11, "prev_hash"},
		{"a receipt removed from the open intents", func(t *testing.T, db *sql.DB) {
			mustExec(t, db, `DELETE FROM open_intents`)
		}, 10, "is not listed as open"},
		{"a closed intent listed as open", func(t *testing.T, db *sql.DB) {
			mustExec(t, db, `INSERT INTO open_intents SELECT call_id, id FROM events WHERE id = 5`)
		}, 5, "listed as an open intent"},
		{"an unknown row format", func(t *testing.T, db *sql.DB) {
			mustExec(t, db, `UPDATE events SET format = 3 WHERE id = 5`)
			rehash(t, db, 5)
		}, 5, "unknown row format 3"},
		{"a detail slipped into a format 1 row", func(t *testing.T, db *sql.DB) {
			mustExec(t, db, `UPDATE events SET format = 1, detail = '{"undo_of":"x"}' WHERE id = 5`)
			rehash(t, db, 5)
		}, 5, "format 1 row has a detail"},
		{"a detail changed", func(t *testing.T, db *sql.DB) {
			mustExec(t, db, `UPDATE events SET detail = '{"operation_key":"forged"}' WHERE id = 5`)
		}, 5, "does not match its contents"},
		// Around the chunk boundaries of the walks below (after rows 3, 4,
		// 6, 8, 9): a row's change shows in the next chunk's first row.
		{"the last row of a chunk changed, rehashed", func(t *testing.T, db *sql.DB) {
			mustExec(t, db, `UPDATE events SET key_name = 'bob' WHERE id = 4`)
			rehash(t, db, 4)
		}, 5, "prev_hash"},
		{"the first row of a chunk changed", func(t *testing.T, db *sql.DB) {
			mustExec(t, db, `UPDATE events SET path = '/' WHERE id = 9`)
		}, 9, "does not match its contents"},
		{"a whole chunk deleted", func(t *testing.T, db *sql.DB) {
			mustExec(t, db, `DELETE FROM events WHERE id BETWEEN 5 AND 8`)
		}, 5, "missing (the next row is 9)"},
		{"the last row renumbered far ahead", func(t *testing.T, db *sql.DB) {
			mustExec(t, db, `UPDATE events SET id = 1000000000000000 WHERE id = 10`)
		}, 10, "missing (the next row is 1000000000000000)"},
		{"the receipt removed", func(t *testing.T, db *sql.DB) {
			mustExec(t, db, `DELETE FROM events WHERE id = 6`)
		}, 6, "missing (the next row is 7)"},
		{"a second intent for an open call, rechained", func(t *testing.T, db *sql.DB) {
			mustExec(t, db, `DROP INDEX events_call`)
			mustExec(t, db, `UPDATE events SET kind = 'intent', call_id = (SELECT call_id FROM events WHERE id = 10) WHERE id = 7`)
			rechain(t, db, 7)
		}, 10, "already has an open intent"},
		{"an intent made a call, rechained", func(t *testing.T, db *sql.DB) {
			mustExec(t, db, `UPDATE events SET kind = 'call', detail = '' WHERE id = 5`)
			rechain(t, db, 5)
		}, 6, "follows no open intent"},
		{"a value holding the fast walk's separator", func(t *testing.T, db *sql.DB) {
			mustExec(t, db, "UPDATE events SET error = 'a\x1fb' WHERE id = 3")
		}, 3, "does not match its contents"},
	}
	for _, tc := range cases {
		// Verify reads chunks of ids in parallel; the first break is the
		// same whichever rows share a chunk.
		for _, chunk := range []int64{defaultVerifyChunk, 4, 3, 1} {
			t.Run(fmt.Sprintf("%s/chunk %d", tc.name, chunk), func(t *testing.T) {
				t.Parallel()
				verifyTampered(t, chunk, tc.tamper, tc.id, tc.reason)
			})
		}
	}
}

// verifyTampered seeds a journal, tampers with it, and checks that Verify,
// walking chunks of the given size, breaks at row id for reason.
func verifyTampered(t *testing.T, chunk int64, tamper func(*testing.T, *sql.DB), id int64, reason string) {
	t.Helper()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "journal.db")
	j, err := Open(ctx, path, Options{Logger: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	j.verifyChunk = chunk
	seed(t, j)
	if rep, err := j.Verify(ctx); err != nil || rep.Rows != 10 || rep.OpenIntents != 1 {
		t.Fatalf("before tampering: %+v, %v", rep, err)
	}
	tamper(t, tamperer(t, path))
	rep, err := j.Verify(ctx)
	var ce *ChainError
	if !errors.Is(err, ErrTampered) || !errors.As(err, &ce) {
		t.Fatalf("verify after tampering = %+v, %v", rep, err)
	}
	if ce.ID != id || !strings.Contains(ce.Reason, reason) {
		t.Errorf("break at row %d (%s), want row %d (%s)", ce.ID, ce.Reason, id, reason)
	}
	// A break in a row stops the walk before it; a disagreement of the
	// open intents is found after the walk, a row out of order after the
	// row it repeats, an id that is not an integer before any row.
	if afterwards := strings.Contains(reason, "open") || strings.Contains(reason, "out of order") || id == 0; !afterwards && rep.Rows >= id {
		t.Errorf("report counts %d verified rows, the break is at %d", rep.Rows, id)
	}
}

// rechain rehashes the rows from id on, each linked to the one before, as
// someone who knows the encoding would to hide a change.
func rechain(t *testing.T, db *sql.DB, id int64) {
	t.Helper()
	var last int64
	if err := db.QueryRow(`SELECT max(id) FROM events`).Scan(&last); err != nil {
		t.Fatal(err)
	}
	for ; id <= last; id++ {
		mustExec(t, db, `UPDATE events SET prev_hash = (SELECT hash FROM events WHERE id = ?) WHERE id = ?`, id-1, id)
		rehash(t, db, id)
	}
}

// Rows cannot be changed or removed through SQL while the triggers stand.
func TestAppendOnlyTriggers(t *testing.T) {
	ctx := context.Background()
	j, path := seeded(t)
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, s := range []string{`UPDATE events SET outcome = 'ok' WHERE id = 1`, `DELETE FROM events WHERE id = 10`} {
		if _, err := db.Exec(s); err == nil || !strings.Contains(err.Error(), "append-only") {
			t.Errorf("%s: %v", s, err)
		}
	}
	if _, err := j.Verify(ctx); err != nil {
		t.Error(err)
	}
}

// Truncating the newest rows and the sequence counter leaves a chain that
// holds; only a head kept elsewhere shows it. This pins down that limit,
// which docs/journal.md states.
func TestTruncationNeedsAKeptHead(t *testing.T) {
	ctx := context.Background()
	j, path := seeded(t)
	kept, err := j.Verify(ctx)
	if err != nil {
		t.Fatal(err)
	}
	db := tamperer(t, path)
	mustExec(t, db, `DELETE FROM events WHERE id >= 9`)
	mustExec(t, db, `DELETE FROM open_intents`)
	mustExec(t, db, `UPDATE sqlite_sequence SET seq = 8 WHERE name = 'events'`)
	rep, err := j.Verify(ctx)
	if err != nil {
		t.Fatalf("verify: %v", err)
	}
	if rep.HeadID == kept.HeadID || rep.Head == kept.Head {
		t.Errorf("the truncated journal reports the kept head")
	}
}

func mustExec(t *testing.T, db *sql.DB, s string, args ...any) {
	t.Helper()
	if _, err := db.Exec(s, args...); err != nil {
		t.Fatalf("%s: %v", s, err)
	}
}

// The canonical encoding is pinned: a change to it must be a new row
// format, never a silent change that breaks every existing chain.
func TestCanonicalEncodingIsPinned(t *testing.T) {
	r := row{
		id: 1, format: 1, time: "2026-11-30T10:04:05.123456Z", kind: "call", callID: "c1",
		keyID: "abcdefghijklmnop", keyName: "alice", profile: "operator", transport: "loopback",
		source: "127.0.0.1:1", tool: "proxmox_api_call", method: "GET", pathTemplate: "/version",
		path: "/version", risk: "read", args: `{"a":1}`, effect: "allow", reasons: `[]`,
		priorConfig: "null", outcome: "ok", status: 200, durationUS: 1500, prevHash: genesis,
	}
	c := r.canonical()
	if !strings.HasPrefix(string(c), "proxmox-mcp journal row\x00\x00\x00\x00\x011\x00\x00\x00\x011\x00\x00\x00\x1b2026-11-30T10:04:05.123456Z") {
		t.Errorf("canonical encoding starts %q", c[:64])
	}
	// Computed by the independent Python verifier in docs/journal.md.
	const want = "a8fdd769053f5f8b38be434f6498c8826282f30a7eec39778b75d0bba09fc4c5"
	got := r.computeHash()
	if got != want {
		t.Errorf("hash = %s, want %s", got, want)
	}
	// Every column takes part: changing any one changes the hash (but
	// detail, which format 1 rows do not have).
	f := r.fields()
	for i := range f[:len(f)-1] {
		if i == len(f)-3 {
			continue
		}
		m := r
		switch p := m.fields()[i].(type) {
		case *int64:
			*p++
		case *string:
			*p += "x"
		}
		if m.computeHash() == got {
			t.Errorf("column %d is not covered by the hash", i)
		}
	}
}

// A format 2 row is hashed with its detail, inserted before prev_hash;
// every column takes part.
func TestCanonicalEncodingFormat2(t *testing.T) {
	r := row{
		id: 2, format: 2, time: "2026-12-01T10:04:05.123456Z", kind: "intent", callID: "c2",
		keyID: "abcdefghijklmnop", keyName: "alice", profile: "admin", transport: "loopback",
		source: "127.0.0.1", tool: "proxmox_api_call", method: "PUT", pathTemplate: "/nodes/{node}/qemu/{vmid}/config",
		path: "/nodes/pve1/qemu/100/config", risk: "write", args: `{"memory":"2048"}`, effect: "allow", reasons: `[]`,
		priorConfig: "null", outcome: "pending", detail: `{"operation_key":"k1","request_digest":"ab"}`, prevHash: genesis,
	}
	c := string(r.canonical())
	if !strings.Contains(c, "\x00\x00\x00\x2c{\"operation_key\"") || !strings.HasSuffix(c, "\x00\x00\x00\x40"+genesis) {
		t.Errorf("canonical encoding of a format 2 row does not hold detail before prev_hash: %q", c[len(c)-140:])
	}
	// Computed by the independent Python verifier in docs/journal.md.
	const want = "868d273b825a8bad18076dfec50c966931f71a408baf40e200ec2ed67804cb9a"
	if got := r.computeHash(); got != want {
		t.Errorf("hash = %s, want %s", got, want)
	}
	got := r.computeHash()
	f := r.fields()
	for i := range f[:len(f)-1] {
		m := r
		switch p := m.fields()[i].(type) {
		case *int64:
			*p++
		case *string:
			*p += "x"
		}
		if m.computeHash() == got {
			t.Errorf("column %d is not covered by the hash", i)
		}
	}
}

// The chain of a large journal verifies, and the walk crosses the chunk
// boundaries of Verify.
func TestVerifyAcrossChunks(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 10k rows")
	}
	ctx := context.Background()
	j := openTest(t, Options{})
	fill(t, j, 2*defaultVerifyChunk+17)
	rep, err := j.Verify(ctx)
	if err != nil || rep.Rows != 2*defaultVerifyChunk+17 {
		t.Fatalf("verify = %+v, %v", rep, err)
	}
}

// fill writes n call rows through 256 concurrent writers (so that they
// share commits).
func fill(t testing.TB, j *Journal, n int) {
	t.Helper()
	ctx := context.Background()
	const writers = 256
	errs := make(chan error, writers)
	base := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	for w := 0; w < writers; w++ {
		go func() {
			for i := w; i < n; i += writers {
				c := readCall()
				c.Time = base.Add(time.Duration(i) * time.Millisecond)
				c.Args = map[string]any{"i": i, "path": fmt.Sprintf("/nodes/pve1/qemu/%d/status/current", 100+i%50)}
				if _, err := j.Record(ctx, c, Result{Outcome: OutcomeOK, Duration: time.Millisecond}); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for w := 0; w < writers; w++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

package journal

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
)

// A caller's text that holds the fast walk's separator (or a NUL) is
// stored escaped, as every control character is (text.go), so the
// journal's own rows never hold it and always take the fast walk; they
// verify whatever chunks the walk reads.
func TestVerifyRowsHoldingTheSeparator(t *testing.T) {
	ctx := context.Background()
	j := openTest(t, Options{})
	odd := []string{"unit\x1fseparator", "\x1f", "nul\x00byte", "two\x1f\x1fseparators\x1f"}
	for _, e := range odd {
		c := readCall()
		c.Path = "/nodes/pve1/qemu/" + e
		if _, err := j.Record(ctx, c, Result{Outcome: OutcomeError, Error: e}); err != nil {
			t.Fatal(err)
		}
		if _, err := j.Record(ctx, readCall(), Result{Outcome: OutcomeOK}); err != nil {
			t.Fatal(err)
		}
	}
	for _, chunk := range []int64{defaultVerifyChunk, 3, 1} {
		j.verifyChunk = chunk
		if rep, err := j.Verify(ctx); err != nil || rep.Rows != int64(2*len(odd)) {
			t.Fatalf("chunk %d: verify = %+v, %v", chunk, rep, err)
		}
	}
	evs, err := j.Tail(ctx, 2*len(odd))
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range odd {
		ev := evs[2*i]
		if want := escapeText(e, true); ev.Error != want || strings.ContainsRune(ev.Error, fieldSep) {
			t.Errorf("row %d: error %q, want %q", ev.ID, ev.Error, want)
		}
		if want := escapeText("/nodes/pve1/qemu/"+e, false); ev.Path != want {
			t.Errorf("row %d: path %q, want %q", ev.ID, ev.Path, want)
		}
	}
}

// A NULL column is a row no reader can read, and it is reported so. The
// fast walk joins the columns with concat_ws, which leaves NULLs out: a
// NULL and a separator inside the next value would split into a
// plausible row, shifted by one column, that an intruder can hash. That
// row must not verify.
func TestVerifyRefusesANullColumn(t *testing.T) {
	ctx := context.Background()
	j, path := seeded(t)
	db := tamperer(t, path)
	loosen(t, db) // the table as it is declared refuses a NULL
	mustExec(t, db, "UPDATE events SET key_name = NULL, profile = 'bob\x1fadmin' WHERE id = 3")
	// The hash of the row as a split of the joined value reads it:
	// key_name "bob", profile "admin".
	var joined string
	if err := db.QueryRow(`SELECT concat_ws(x'1f', ` + strings.Join(columnNames(), ", ") + `) FROM events WHERE id = 3`).Scan(&joined); err != nil {
		t.Fatal(err)
	}
	var r row
	if !splitRow(joined, r.fields()) || r.keyName != "bob" || r.profile != "admin" {
		t.Fatalf("the shifted split of %q did not come out as the intruder planned: %+v", joined, r)
	}
	mustExec(t, db, `UPDATE events SET hash = ? WHERE id = 3`, r.computeHash())
	rechain(t, db, 4)

	for _, chunk := range []int64{defaultVerifyChunk, 2} {
		j.verifyChunk = chunk
		rep, err := j.Verify(ctx)
		var ce *ChainError
		if !errors.As(err, &ce) || ce.ID != 3 || !strings.Contains(ce.Reason, "unreadable row") {
			t.Fatalf("chunk %d: verify = %+v, %v; want row 3 unreadable", chunk, rep, err)
		}
		if rep.Rows != 2 {
			t.Errorf("chunk %d: %d rows verified, want 2", chunk, rep.Rows)
		}
	}
}

// columnNames lists the events columns in order.
func columnNames() []string {
	cols := strings.Split(columns, ",")
	for i := range cols {
		cols[i] = strings.TrimSpace(cols[i])
	}
	return cols
}

// Verify while the journal is written: the walk covers the rows up to
// the head of its snapshot, and the open intents of that snapshot agree
// with them, though its chunks are read in later transactions that see
// newer rows (intents among them).
func TestVerifyWhileWriting(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	j := openTest(t, Options{})
	j.verifyChunk = 5
	seed(t, j)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	wg.Go(func() {
		for ctx.Err() == nil {
			in, err := j.Intent(ctx, writeCall())
			if err != nil {
				return
			}
			if _, err := j.Receipt(context.Background(), in.CallID, Result{Outcome: OutcomeOK}); err != nil {
				t.Error(err)
				return
			}
		}
	})
	var last int64
	for i := 0; i < 20; i++ {
		rep, err := j.Verify(ctx)
		if err != nil {
			t.Fatalf("verify %d while writing: %+v, %v", i, rep, err)
		}
		if rep.Rows < last {
			t.Fatalf("verify %d: %d rows, fewer than the %d before", i, rep.Rows, last)
		}
		last = rep.Rows
	}
}

// FuzzSplitRow: a joined row that splits is exactly the join of its
// fields: no other value joins to the same text, so no row can verify as
// another.
func FuzzSplitRow(f *testing.F) {
	var seedRow row
	seedRow.id, seedRow.format, seedRow.kind, seedRow.hash = 7, 2, "call", strings.Repeat("a", 64)
	f.Add(join(seedRow.fields()))
	f.Add(strings.Repeat("\x1f", 34))
	f.Add("1\x1f02" + strings.Repeat("\x1f", 33))
	f.Add("-0" + strings.Repeat("\x1fx", 34))
	f.Fuzz(func(t *testing.T, s string) {
		var r row
		if !splitRow(s, r.fields()) {
			return
		}
		if got := join(r.fields()); got != s {
			t.Fatalf("%q split into fields that join to %q", s, got)
		}
	})
}

// join is what SQLite's concat_ws(x'1f', …) makes of the fields.
func join(fields []any) string {
	parts := make([]string, len(fields))
	for i, p := range fields {
		switch x := p.(type) {
		case *string:
			parts[i] = *x
		case *int64:
			parts[i] = fmt.Sprint(*x)
		}
	}
	return strings.Join(parts, "\x1f")
}

// The joined value is the fast query's, on a real journal: every column
// in order, and rows split back into what a column-by-column read gives.
func TestFastQuerySplitsAsColumnsRead(t *testing.T) {
	ctx := context.Background()
	j := openTest(t, Options{})
	seed(t, j)
	tx, err := j.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	var joined string
	var fast, slow row
	for id := int64(1); id <= 10; id++ {
		if err := tx.QueryRowContext(ctx, `SELECT `+fastColumns()+` FROM events WHERE id = ?`, id).Scan(&joined); err != nil {
			t.Fatal(err)
		}
		if !splitRow(joined, fast.fields()) {
			t.Fatalf("row %d: %q does not split", id, joined)
		}
		if err := tx.QueryRowContext(ctx, `SELECT `+columns+` FROM events WHERE id = ?`, id).Scan(slow.fields()...); err != nil {
			t.Fatal(err)
		}
		if fast != slow {
			t.Errorf("row %d: joined and split\n%+v\ncolumn by column\n%+v", id, fast, slow)
		}
	}
}

// loosen rebuilds the events table without its constraints (no primary
// key, no NOT NULL, no STRICT), as an intruder who wants to store what
// the journal's table refuses would.
func loosen(t *testing.T, db *sql.DB) {
	t.Helper()
	mustExec(t, db, `CREATE TABLE loose AS SELECT * FROM events`)
	mustExec(t, db, `DROP TABLE events`)
	mustExec(t, db, `ALTER TABLE loose RENAME TO events`)
}

// Rows a loosened table can hold and the journal's cannot: ids shared by
// two rows, many copies of one row, an id that is not an integer.
func TestVerifyLoosenedTable(t *testing.T) {
	cases := []struct {
		name   string
		tamper func(t *testing.T, db *sql.DB)
		id     int64
		reason string
	}{
		{"a row copied", func(t *testing.T, db *sql.DB) {
			mustExec(t, db, `INSERT INTO events SELECT * FROM events WHERE id = 5`)
		}, 5, "out of order after row 5"},
		{"a row copied ten thousand times", func(t *testing.T, db *sql.DB) {
			mustExec(t, db, `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 10000)
				INSERT INTO events SELECT events.* FROM events, n WHERE id = 2`)
		}, 2, "out of order after row 2"},
		{"an id that is text", func(t *testing.T, db *sql.DB) {
			mustExec(t, db, `UPDATE events SET id = 'ten' WHERE id = 10`)
		}, 0, "an id is not an integer: ten"},
		{"an id that is a real number", func(t *testing.T, db *sql.DB) {
			mustExec(t, db, `UPDATE events SET id = 4.5 WHERE id = 4`)
		}, 4, "unreadable row"},
	}
	for _, tc := range cases {
		for _, chunk := range []int64{defaultVerifyChunk, 3} {
			t.Run(fmt.Sprintf("%s/chunk %d", tc.name, chunk), func(t *testing.T) {
				t.Parallel()
				verifyTampered(t, chunk, func(t *testing.T, db *sql.DB) {
					loosen(t, db)
					tc.tamper(t, db)
				}, tc.id, tc.reason)
			})
		}
	}
}

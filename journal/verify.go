package journal

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"
)

// How Verify reads: the head (the highest id) is taken in one read
// snapshot, which also checks the AUTOINCREMENT counter, the open intents
// and the operations index. The rows from 1 to that head are read in
// chunks of ids by up to verifyWorkers read transactions at once; each
// checks what a row can show by itself (its hash, format, time and kind)
// and hands the coordinator, in id order, the few facts that link rows:
// id, prev_hash, hash, and for intents and receipts the call, key and
// operation key. The coordinator checks the links exactly as a single
// walk would, so the first break reported is the same.
//
// The worker transactions start after the head's snapshot. The journal
// is append-only, so they see the same rows up to the head; someone who
// rewrites rows between the snapshots leaves a chain that either breaks
// or holds from genesis, as a rewrite before the walk would.

// defaultVerifyChunk is how many ids one query of Verify covers.
const defaultVerifyChunk = 4096

// maxVerifyWorkers bounds the read transactions of a walk: the reader
// pool has four connections, one of them the head's snapshot.
const maxVerifyWorkers = 3

// fieldSep joins a row's columns into one value in the fast query. A
// value that holds it is read again column by column.
const fieldSep = '\x1f'

// fastColumns is the select list of the fast query: every column of
// columns, in order, joined with fieldSep into one text value, or NULL
// if any column is NULL (concat_ws would leave it out). The driver
// costs about as much per column returned as SQLite does to read the
// row, so one value per row halves the walk; concat_ws builds it in one
// allocation, where a chain of || would copy it once per column.
func fastColumns() string {
	cols := strings.Split(columns, ",")
	for i := range cols {
		cols[i] = strings.TrimSpace(cols[i])
	}
	return `CASE WHEN ` + strings.Join(cols, ` IS NULL OR `) + ` IS NULL THEN NULL ELSE concat_ws(x'1f', ` +
		strings.Join(cols, ", ") + `) END`
}

// linkFacts is what the coordinator needs of one checked row.
type linkFacts struct {
	id       int64
	prevHash string
	hash     string
	kind     Kind
	callID   string
	keyID    string
	opKey    string
	// The row's own checks, in the order a single walk makes them:
	// before fails before the prev_hash link is checked, after after it,
	// detail when the intent's detail is read for its operation key.
	before, after, detail string
	// unreadable: the row could not be read; the walk stops there.
	unreadable string
}

// verifyChunkResult is one chunk's rows, in id order.
type verifyChunkResult struct {
	lo, hi int64
	rows   []linkFacts
	err    error // a failure to read, not a break
}

// Verify walks the whole chain: ids are 1, 2, 3, … with none missing,
// each row's prev_hash is the previous row's hash (the first row's is 64
// zeros), each row's hash is the SHA-256 of its canonical encoding, each
// row is well formed (kind, format, time, every receipt follows its
// intent), and the table of open intents agrees with the rows. A break
// returns the report up to the break and a *ChainError
// (errors.Is(err, ErrTampered)); any other error is a failure to read.
func (j *Journal) Verify(ctx context.Context) (VerifyReport, error) {
	tx, err := j.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return VerifyReport{}, fmt.Errorf("journal: verify: %w", err)
	}
	defer tx.Rollback()
	head, err := headID(ctx, tx)
	if err != nil {
		return VerifyReport{}, err
	}
	w := newWalk()
	if head > 0 {
		if err := j.walkChunks(ctx, tx, head, w); err != nil {
			return w.rep, err
		}
	}
	if err := w.finish(ctx, tx); err != nil {
		return w.rep, err
	}
	return w.rep, nil
}

// headID is the highest id, 0 for no rows. SQLite orders text after
// every number, so an id that is not an integer (a table rebuilt without
// its INTEGER PRIMARY KEY) shows here and is a break.
func headID(ctx context.Context, tx *sql.Tx) (int64, error) {
	var head any
	if err := tx.QueryRowContext(ctx, `SELECT max(id) FROM events`).Scan(&head); err != nil {
		return 0, fmt.Errorf("journal: verify: %w", err)
	}
	switch h := head.(type) {
	case nil:
		return 0, nil
	case int64:
		return h, nil
	default:
		return 0, chainErr(0, "an id is not an integer: %s", short(fmt.Sprint(h)))
	}
}

// walkChunks reads the rows 1..head in chunks, in parallel, and feeds
// them to w in id order.
func (j *Journal) walkChunks(ctx context.Context, tx *sql.Tx, head int64, w *walk) error {
	size := j.verifyChunk
	chunks := (head + size - 1) / size
	workers := int64(min(runtime.GOMAXPROCS(0), maxVerifyWorkers))
	workers = max(1, min(workers, chunks))
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	out := make([]chan verifyChunkResult, workers)
	for n := range out {
		out[n] = make(chan verifyChunkResult, 1)
		wg.Go(func() { j.verifyWorker(ctx, head, int64(n), workers, out[n]) })
	}
	for c := int64(0); c < chunks; c++ {
		var res verifyChunkResult
		select {
		case res = <-out[c%workers]:
		case <-ctx.Done():
			return fmt.Errorf("journal: verify: %w", ctx.Err())
		}
		if res.err != nil {
			return fmt.Errorf("journal: verify: %w", res.err)
		}
		if err := w.chunk(res); err != nil {
			return err
		}
		if w.rep.HeadID < res.hi && res.hi < head {
			return w.gap(ctx, tx)
		}
	}
	return nil
}

// verifyWorker checks the chunks first, first+step, … of the ids 1..head
// in its own read transaction and sends each result, in order, to out.
// No chunk reaches past head: rows written since the head's snapshot
// are not the walk's (the open intents it checks against are that
// snapshot's).
func (j *Journal) verifyWorker(ctx context.Context, head, first, step int64, out chan<- verifyChunkResult) {
	send := func(r verifyChunkResult) bool {
		select {
		case out <- r:
			return true
		case <-ctx.Done():
			return false
		}
	}
	tx, err := j.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		send(verifyChunkResult{err: err})
		return
	}
	defer tx.Rollback()
	c := newChunkChecker()
	size := j.verifyChunk
	for lo := first*size + 1; lo <= head; lo += step * size {
		hi := min(lo+size-1, head)
		rows, err := c.check(ctx, tx, lo, hi)
		if !send(verifyChunkResult{lo: lo, hi: hi, rows: rows, err: err}) || err != nil {
			return
		}
	}
}

// chunkChecker reads and checks chunks, reusing its buffers.
type chunkChecker struct {
	fast   string // the fast query
	buf    []byte
	r      row
	fields []any // r.fields()
}

func newChunkChecker() *chunkChecker {
	c := &chunkChecker{fast: `SELECT ` + fastColumns() + ` FROM events WHERE id BETWEEN ? AND ? ORDER BY id`}
	c.fields = c.r.fields()
	return c
}

// check reads the rows lo..hi, in one value per row where it can and
// column by column where it cannot, and checks each by itself.
func (c *chunkChecker) check(ctx context.Context, tx *sql.Tx, lo, hi int64) ([]linkFacts, error) {
	facts, ok, err := c.checkFast(ctx, tx, lo, hi)
	if err != nil || ok {
		return facts, err
	}
	return c.checkByColumn(ctx, tx, lo, hi)
}

// checkFast reads each row as one joined value. ok is false if any row
// cannot be split back into its columns unambiguously (a NULL, a value
// holding fieldSep, an integer column that is not a canonical integer).
func (c *chunkChecker) checkFast(ctx context.Context, tx *sql.Tx, lo, hi int64) (_ []linkFacts, ok bool, _ error) {
	rows, err := tx.QueryContext(ctx, c.fast, lo, hi)
	if err != nil {
		return nil, false, err
	}
	defer rows.Close()
	facts := make([]linkFacts, 0, hi-lo+1)
	var joined sql.NullString
	for rows.Next() && !overfull(facts, lo, hi) {
		if err := rows.Scan(&joined); err != nil {
			return nil, false, err
		}
		if !joined.Valid || !splitRow(joined.String, c.fields) {
			return nil, false, nil
		}
		facts = append(facts, ownChecks(&c.r, c.fields, &c.buf))
	}
	return facts, true, rows.Err()
}

// checkByColumn reads the rows lo..hi column by column. A row that does
// not scan ends the chunk: the walk stops at it.
func (c *chunkChecker) checkByColumn(ctx context.Context, tx *sql.Tx, lo, hi int64) ([]linkFacts, error) {
	rows, err := tx.QueryContext(ctx, `SELECT `+columns+` FROM events WHERE id BETWEEN ? AND ? ORDER BY id`, lo, hi)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var facts []linkFacts
	for rows.Next() && !overfull(facts, lo, hi) {
		if err := rows.Scan(c.fields...); err != nil {
			return append(facts, linkFacts{unreadable: err.Error()}), nil
		}
		facts = append(facts, ownChecks(&c.r, c.fields, &c.buf))
	}
	return facts, rows.Err()
}

// overfull reports whether a chunk has more rows than ids: then two
// share an id, and the walk breaks among the rows read, so a file of
// copies of one row costs no more than a chunk.
func overfull(facts []linkFacts, lo, hi int64) bool { return int64(len(facts)) > hi-lo+1 }

// splitRow splits a joined row into a row's fields (row.fields). The
// strings share the joined value's memory. It reports false unless the
// value has exactly one separator between each two columns and the
// integer columns are integers as SQLite writes them, so the split is
// the only one.
func splitRow(s string, fields []any) bool {
	last := len(fields) - 1
	for i, p := range fields {
		v := s
		if n := strings.IndexByte(s, fieldSep); n >= 0 {
			if i == last {
				return false
			}
			v, s = s[:n], s[n+1:]
		} else if i != last {
			return false
		}
		switch x := p.(type) {
		case *string:
			*x = v
		case *int64:
			n, ok := canonicalInt(v)
			if !ok {
				return false
			}
			*x = n
		}
	}
	return true
}

// canonicalInt parses a decimal integer written as strconv writes it (no
// sign but a minus, no leading zero).
func canonicalInt(s string) (int64, bool) {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, false
	}
	var b [20]byte
	return n, string(strconv.AppendInt(b[:0], n, 10)) == s
}

// ownChecks checks what a row shows by itself, in the order a single walk
// checks it, and keeps what the links need.
func ownChecks(r *row, fields []any, buf *[]byte) linkFacts {
	f := linkFacts{id: r.id, prevHash: r.prevHash, hash: r.hash, kind: Kind(r.kind), callID: r.callID, keyID: r.keyID}
	switch {
	case r.format != 1 && r.format != rowFormat:
		f.before = fmt.Sprintf("unknown row format %d", r.format)
		return f
	case r.format == 1 && r.detail != "":
		f.before = "a format 1 row has a detail"
		return f
	}
	var h [2 * sha256.Size]byte
	if sum := hashFields(buf, fields, &h); r.hash != string(sum) {
		f.after = fmt.Sprintf("hash %s does not match its contents (%s)", short(r.hash), short(string(sum)))
		return f
	}
	if !validTime(r.time) {
		f.after = fmt.Sprintf("time %q is not %s", r.time, timeLayout)
		return f
	}
	switch f.kind {
	case KindCall, KindReceipt:
	case KindIntent:
		f.opKey, f.detail = intentOperation(r.detail)
	case KindObservation, KindResolution, KindPlan, KindJob:
		if r.format < 2 {
			f.after = fmt.Sprintf("a %s row needs format 2", r.kind)
		}
	default:
		f.after = fmt.Sprintf("unknown kind %q", r.kind)
	}
	return f
}

// validTime reports whether s is a time as the journal writes it.
func validTime(s string) bool {
	_, err := time.Parse(timeLayout, s)
	return err == nil
}

// intentOperation reads an intent's operation key from its detail.
func intentOperation(detail string) (key, problem string) {
	if detail == "" {
		return "", ""
	}
	var d struct {
		OperationKey string `json:"operation_key"`
	}
	if err := json.Unmarshal([]byte(detail), &d); err != nil {
		return "", fmt.Sprintf("detail is not a JSON object: %v", err)
	}
	return d.OperationKey, ""
}

// walk is the coordinator's state: the links of the rows so far.
type walk struct {
	rep  VerifyReport
	prev string
	open map[string]int64 // call id → intent id, for intents without a receipt
	ops  map[opKey]string // (key id, operation key) → call id, from the intents
}

func newWalk() *walk {
	return &walk{prev: genesis, open: map[string]int64{}, ops: map[opKey]string{}}
}

// chunk checks a chunk's rows against the rows before them.
func (w *walk) chunk(res verifyChunkResult) error {
	for i := range res.rows {
		if err := w.row(&res.rows[i]); err != nil {
			return err
		}
	}
	return nil
}

// row checks one row's links and its own checks, in a single walk's
// order, and moves the head on.
func (w *walk) row(f *linkFacts) error {
	prevID := w.rep.HeadID
	if f.unreadable != "" {
		return chainErr(prevID+1, "unreadable row: %s", f.unreadable)
	}
	if f.id != prevID+1 {
		if f.id > prevID+1 {
			return chainErr(prevID+1, "missing (the next row is %d)", f.id)
		}
		return chainErr(f.id, "out of order after row %d", prevID)
	}
	if f.before != "" {
		return chainErr(f.id, "%s", f.before)
	}
	if f.prevHash != w.prev {
		return chainErr(f.id, "prev_hash %s is not the hash of row %d (%s)", short(f.prevHash), prevID, short(w.prev))
	}
	if f.after != "" {
		return chainErr(f.id, "%s", f.after)
	}
	if err := w.intents(f); err != nil {
		return err
	}
	w.prev = f.hash
	w.rep.HeadID, w.rep.Head = f.id, f.hash
	w.rep.Rows++
	return nil
}

// intents pairs intents with receipts and collects operation keys. The
// strings kept are copied: the row's own share its whole joined value.
func (w *walk) intents(f *linkFacts) error {
	switch f.kind {
	case KindIntent:
		if _, ok := w.open[f.callID]; ok {
			return chainErr(f.id, "call id %s already has an open intent", f.callID)
		}
		w.open[strings.Clone(f.callID)] = f.id
		if f.detail != "" {
			return chainErr(f.id, "%s", f.detail)
		}
		if f.opKey == "" {
			return nil
		}
		k := opKey{f.keyID, f.opKey}
		if prev, dup := w.ops[k]; dup {
			return chainErr(f.id, "operation key %q of key %s was already used by call %s", f.opKey, f.keyID, prev)
		}
		w.ops[opKey{strings.Clone(f.keyID), strings.Clone(f.opKey)}] = strings.Clone(f.callID)
	case KindReceipt:
		if _, ok := w.open[f.callID]; !ok {
			return chainErr(f.id, "receipt for call %s follows no open intent", f.callID)
		}
		delete(w.open, f.callID)
	}
	return nil
}

// gap reports the missing rows after the head, up to the next row.
func (w *walk) gap(ctx context.Context, tx *sql.Tx) error {
	var next int64
	if err := tx.QueryRowContext(ctx, `SELECT min(id) FROM events WHERE id > ?`, w.rep.HeadID).Scan(&next); err != nil {
		return fmt.Errorf("journal: verify: %w", err)
	}
	return chainErr(w.rep.HeadID+1, "missing (the next row is %d)", next)
}

// finish checks, in the head's snapshot, what the rows imply about the
// rest: the AUTOINCREMENT counter, the open intents and the operations
// index.
func (w *walk) finish(ctx context.Context, tx *sql.Tx) error {
	// The rows may have been reordered or the highest rows deleted; the
	// AUTOINCREMENT counter remembers the highest id ever given out.
	var seq sql.NullInt64
	if err := tx.QueryRowContext(ctx, `SELECT seq FROM sqlite_sequence WHERE name = 'events'`).Scan(&seq); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("journal: verify: %w", err)
	}
	if seq.Valid && seq.Int64 > w.rep.HeadID {
		return chainErr(w.rep.HeadID+1, "missing: ids up to %d were given out, the last row is %d", seq.Int64, w.rep.HeadID)
	}
	if err := checkOpenIntents(ctx, tx, w.open); err != nil {
		return err
	}
	if err := checkOperations(ctx, tx, w.ops); err != nil {
		return err
	}
	w.rep.OpenIntents = len(w.open)
	return nil
}

// checkOpenIntents compares the table of open intents, derived from the
// rows, with the rows.
func checkOpenIntents(ctx context.Context, tx *sql.Tx, open map[string]int64) error {
	stored := map[string]int64{}
	rows, err := tx.QueryContext(ctx, `SELECT call_id, event_id FROM open_intents`)
	if err != nil {
		return fmt.Errorf("journal: verify: %w", err)
	}
	for rows.Next() {
		var id string
		var ev int64
		if err := rows.Scan(&id, &ev); err != nil {
			rows.Close()
			return fmt.Errorf("journal: verify: %w", err)
		}
		stored[id] = ev
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("journal: verify: %w", err)
	}
	for id, ev := range open {
		if stored[id] != ev {
			return chainErr(ev, "intent %s has no receipt but is not listed as open", id)
		}
	}
	for id, ev := range stored {
		if open[id] != ev {
			return chainErr(ev, "call %s is listed as an open intent but the rows say otherwise", id)
		}
	}
	return nil
}

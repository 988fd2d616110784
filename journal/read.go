package journal

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"
)

// maxPage bounds one read.
const maxPage = 10000

// Events returns up to limit rows with ids above afterID, oldest first.
func (j *Journal) Events(ctx context.Context, afterID int64, limit int) ([]Event, error) {
	if limit <= 0 || limit > maxPage {
		return nil, fmt.Errorf("journal: events: limit %d: want 1 to %d", limit, maxPage)
	}
	if afterID < 0 {
		return nil, fmt.Errorf("journal: events: after id %d: must not be negative", afterID)
	}
	return j.query(ctx, `SELECT `+columns+` FROM events WHERE id > ? ORDER BY id LIMIT ?`, afterID, limit)
}

// Tail returns the last n rows (1 to 10000), oldest first.
func (j *Journal) Tail(ctx context.Context, n int) ([]Event, error) {
	if n <= 0 || n > maxPage {
		return nil, fmt.Errorf("journal: tail: %d rows: want 1 to %d", n, maxPage)
	}
	evs, err := j.query(ctx, `SELECT `+columns+` FROM events ORDER BY id DESC LIMIT ?`, n)
	if err != nil {
		return nil, err
	}
	for i, k := 0, len(evs)-1; i < k; i, k = i+1, k-1 {
		evs[i], evs[k] = evs[k], evs[i]
	}
	return evs, nil
}

// CallEvents returns the rows of one call: its call row, or its intent and
// (once written) its receipt.
func (j *Journal) CallEvents(ctx context.Context, callID string) ([]Event, error) {
	if err := checkCallID(callID); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return j.query(ctx, `SELECT `+columns+` FROM events WHERE call_id = ? ORDER BY id`, callID)
}

// OpenIntents returns the intents that have no receipt and were recorded
// (by their call time) before the given time, oldest first; a zero time
// means all of them. At start-up, every open intent is a write whose fate
// the daemon does not know (it stopped between sending and recording the
// answer): reconciliation looks each one up in PVE's task index and closes
// it with a receipt. While the daemon runs, pass a time a little in the
// past, so that writes still in flight are left alone.
func (j *Journal) OpenIntents(ctx context.Context, before time.Time) ([]Event, error) {
	q := `SELECT ` + prefixed("e.") + ` FROM open_intents o JOIN events e ON e.id = o.event_id`
	args := []any{}
	if !before.IsZero() {
		q += ` WHERE e.time < ?`
		args = append(args, before.UTC().Format(timeLayout))
	}
	return j.query(ctx, q+` ORDER BY e.id`, args...)
}

// Head returns the id and hash of the last row (0 and 64 zeros for an
// empty journal).
func (j *Journal) Head(ctx context.Context) (int64, string, error) {
	var id int64
	var hash string
	err := j.r.QueryRowContext(ctx, `SELECT id, hash FROM events ORDER BY id DESC LIMIT 1`).Scan(&id, &hash)
	if err == sql.ErrNoRows {
		return 0, genesis, nil
	}
	if err != nil {
		return 0, "", fmt.Errorf("journal: head: %w", err)
	}
	return id, hash, nil
}

func (j *Journal) query(ctx context.Context, q string, args ...any) ([]Event, error) {
	rows, err := j.r.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("journal: read: %w", err)
	}
	defer rows.Close()
	var evs []Event
	for rows.Next() {
		var r row
		if err := rows.Scan(r.fields()...); err != nil {
			return nil, fmt.Errorf("journal: read: %w", err)
		}
		ev, err := r.event()
		if err != nil {
			return nil, fmt.Errorf("journal: read: %w", err)
		}
		evs = append(evs, ev)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("journal: read: %w", err)
	}
	return evs, nil
}

// prefixed returns the column list with each column qualified by p.
func prefixed(p string) string {
	names := strings.Split(columns, ",")
	for i, c := range names {
		names[i] = p + strings.TrimSpace(c)
	}
	return strings.Join(names, ", ")
}

// Follower streams rows as they are appended; see [Journal.Follow].
type Follower struct {
	// C delivers the rows in id order. It is closed when the context ends,
	// the journal is closed, or reading fails; Err then says which.
	C   <-chan Event
	err error
	end chan struct{}
}

// Err returns why C was closed: nil when the context ended or the journal
// was closed, the read error otherwise. Call it after C is closed.
func (f *Follower) Err() error {
	<-f.end
	return f.err
}

// followPage is how many rows Follow reads at a time.
const followPage = 512

// Follow streams every row with an id above afterID: first those already
// there, then each new one as it is committed, until ctx ends. Rows written
// through this Journal wake it at once; rows written by another process
// (the daemon, when the CLI follows) are seen within the poll interval.
func (j *Journal) Follow(ctx context.Context, afterID int64) *Follower {
	c := make(chan Event, followPage)
	f := &Follower{C: c, end: make(chan struct{})}
	go func() {
		defer close(f.end)
		defer close(c)
		last := afterID
		for {
			wake := j.changedChan() // before reading, so no commit is missed
			if j.isClosed() {
				return
			}
			evs, err := j.Events(ctx, last, followPage)
			if err != nil {
				if ctx.Err() == nil && !j.isClosed() {
					f.err = err
				}
				return
			}
			for _, ev := range evs {
				select {
				case c <- ev:
				case <-ctx.Done():
					return
				}
				last = ev.ID
			}
			if len(evs) == followPage {
				continue
			}
			t := time.NewTimer(j.poll)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-wake:
			case <-t.C:
			}
			t.Stop()
		}
	}()
	return f
}

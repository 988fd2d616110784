package journal

import (
	"context"
	"fmt"
	"time"
)

// pathSinceSlack bounds how far a row's time can lag behind the rows
// written after it: a row's time is when its call arrived (intent, call)
// or when it was written (receipt, observation), and rows are written in
// id order, so a row is at most the longest call older than the rows
// after it. The longest call is a task wait (10 minutes) after the PVE
// timeout; an hour is well past that.
const pathSinceSlack = time.Hour

// PathSince returns the rows of one concrete path (reads, observations,
// intents, receipts) whose time is at or after since, oldest first, at
// most limit (1 to 10000, the newest kept): the operations near in time
// to one being reconciled, and the tasks their receipts claimed. It reads
// the path's rows backwards from the newest and stops once it meets a row
// an hour older than since, so a path with a long history costs what its
// recent rows cost.
func (j *Journal) PathSince(ctx context.Context, path string, since time.Time, limit int) ([]Event, error) {
	if limit <= 0 || limit > maxPage {
		return nil, fmt.Errorf("journal: path since: limit %d: want 1 to %d", limit, maxPage)
	}
	const page = 500
	stop := since.Add(-pathSinceSlack)
	var out []Event
	before := int64(1<<63 - 1)
	for len(out) < limit {
		evs, err := j.query(ctx, `SELECT `+columns+` FROM events WHERE path = ? AND kind IN ('call', 'observation', 'intent', 'receipt') AND id < ? ORDER BY id DESC LIMIT ?`,
			path, before, page)
		if err != nil {
			return nil, err
		}
		done := len(evs) < page
		for _, ev := range evs {
			before = ev.ID
			if ev.Time.Before(stop) {
				done = true
				break
			}
			if !ev.Time.Before(since) && len(out) < limit {
				out = append(out, ev)
			}
		}
		if done {
			break
		}
	}
	for i, k := 0, len(out)-1; i < k; i, k = i+1, k-1 {
		out[i], out[k] = out[k], out[i]
	}
	return out, nil
}

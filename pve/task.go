package pve

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// ErrTaskFailed is matched by a *TaskFailedError.
var ErrTaskFailed = errors.New("pve: task failed")

// TaskStatus is GET /nodes/{node}/tasks/{upid}/status.
type TaskStatus struct {
	UPID       string `json:"upid"`
	Node       string `json:"node"`
	Status     string `json:"status"` // running or stopped
	ExitStatus string `json:"exitstatus,omitempty"`
	Type       string `json:"type"`
	ID         string `json:"id"`
	User       string `json:"user"`
	PID        int64  `json:"pid"`
	PStart     int64  `json:"pstart"`
	StartTime  int64  `json:"starttime"`
}

// LogLine is one line of a task log.
type LogLine struct {
	N int    `json:"n"`
	T string `json:"t"`
}

// TaskResult is how a task ended.
type TaskResult struct {
	UPID UPID
	// ExitStatus is PVE's: "OK", "WARNINGS: n", or the error text.
	ExitStatus string
	// Warnings counts warnings when ExitStatus is "WARNINGS: n".
	Warnings int
	// Log holds the lines read while waiting (all of them with FollowLog).
	Log []LogLine
	// Waited is how long the wait took.
	Waited time.Duration
}

// TaskFailedError is a task that ended with an error exit status.
type TaskFailedError struct {
	UPID       string
	ExitStatus string
	// LastLines are the end of the task log, for context.
	LastLines []string
}

func (e *TaskFailedError) Error() string {
	msg := fmt.Sprintf("task %s failed: %s", e.UPID, e.ExitStatus)
	if len(e.LastLines) > 0 {
		msg += " (log ends: " + strings.Join(e.LastLines, " | ") + ")"
	}
	return msg
}

// Is matches ErrTaskFailed.
func (e *TaskFailedError) Is(target error) bool { return target == ErrTaskFailed }

// ExitOutcome interprets a task's exit status as PVE's status_is_error does:
// "OK" succeeds, "WARNINGS: n" succeeds with n warnings, anything else fails.
func ExitOutcome(exit string) (ok bool, warnings int) {
	if exit == "OK" {
		return true, 0
	}
	if rest, found := strings.CutPrefix(exit, "WARNINGS: "); found {
		if n, err := strconv.Atoi(rest); err == nil && n >= 0 {
			return true, n
		}
	}
	return false, 0
}

// TaskProgress is reported while waiting.
type TaskProgress struct {
	Status  TaskStatus
	NewLog  []LogLine
	Elapsed time.Duration
}

// WaitOptions tunes WaitTask.
type WaitOptions struct {
	// MinInterval is the first poll delay; 250 ms when zero. It doubles up
	// to MaxInterval (2 s when zero) while the task runs.
	MinInterval, MaxInterval time.Duration
	// FollowLog pages the task log while waiting and keeps it in the result.
	FollowLog bool
	// LogPage is the lines asked per log request; 500 when zero.
	LogPage int
	// Progress, when set, is called after every poll.
	Progress func(TaskProgress)
}

// WaitTask follows a task until it stops or ctx ends, polling the node the
// UPID names. A failed task returns the result and a *TaskFailedError; a
// context that ends first returns ctx's error (the task keeps running).
func (c *Client) WaitTask(ctx context.Context, upid string, opts WaitOptions) (*TaskResult, error) {
	u, err := ParseUPID(upid)
	if err != nil {
		return nil, err
	}
	if opts.MinInterval <= 0 {
		opts.MinInterval = 250 * time.Millisecond
	}
	if opts.MaxInterval <= 0 {
		opts.MaxInterval = 2 * time.Second
	}
	if opts.LogPage <= 0 {
		opts.LogPage = 500
	}
	base := Path("nodes", u.Node, "tasks", upid)
	res := &TaskResult{UPID: u}
	started := time.Now()
	interval := opts.MinInterval
	for {
		var st TaskStatus
		if err := c.Get(ctx, base+"/status", nil, &st); err != nil {
			return nil, fmt.Errorf("wait for %s: %w", upid, err)
		}
		var fresh []LogLine
		if opts.FollowLog || st.Status == "stopped" {
			fresh, err = c.readLog(ctx, base, len(res.Log), opts.LogPage)
			if err != nil {
				return nil, fmt.Errorf("wait for %s: %w", upid, err)
			}
			res.Log = append(res.Log, fresh...)
		}
		if opts.Progress != nil {
			opts.Progress(TaskProgress{Status: st, NewLog: fresh, Elapsed: time.Since(started)})
		}
		if st.Status == "stopped" {
			res.ExitStatus = st.ExitStatus
			res.Waited = time.Since(started)
			ok, warnings := ExitOutcome(st.ExitStatus)
			res.Warnings = warnings
			if !ok {
				return res, &TaskFailedError{UPID: upid, ExitStatus: st.ExitStatus, LastLines: lastLines(res.Log, 3)}
			}
			return res, nil
		}
		t := time.NewTimer(interval)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("wait for %s: %w (the task is still running)", upid, ctx.Err())
		case <-t.C:
		}
		interval = min(interval*2, opts.MaxInterval)
	}
}

// readLog pages GET .../log from line start to the end PVE reports in
// "total". Line numbers are 1-based; an empty log comes back as one line
// "no content", which is not part of the log.
func (c *Client) readLog(ctx context.Context, base string, start, page int) ([]LogLine, error) {
	var out []LogLine
	for {
		q := url.Values{"start": {strconv.Itoa(start)}, "limit": {strconv.Itoa(page)}}
		resp, err := c.Do(ctx, "GET", base+"/log", q)
		if err != nil {
			return nil, err
		}
		var lines []LogLine
		if err := resp.Decode(&lines); err != nil {
			return nil, err
		}
		total := int64(-1)
		if resp.Total != nil {
			total = *resp.Total
		}
		if start == 0 && total == 1 && len(lines) == 1 && lines[0].T == "no content" {
			return out, nil
		}
		out = append(out, lines...)
		start += len(lines)
		if len(lines) == 0 || (total >= 0 && int64(start) >= total) || (total < 0 && len(lines) < page) {
			return out, nil
		}
	}
}

func lastLines(log []LogLine, n int) []string {
	var out []string
	for _, l := range log[max(0, len(log)-n):] {
		out = append(out, l.T)
	}
	return out
}

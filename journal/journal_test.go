package journal

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

func quietLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// openTest opens a new journal in a temporary directory.
func openTest(t testing.TB, opts Options) *Journal {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = quietLog()
	}
	j, err := Open(context.Background(), filepath.Join(t.TempDir(), "journal.db"), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() })
	return j
}

func alice() Principal {
	return Principal{KeyID: "abcdefghijklmnop", KeyName: "alice", Profile: "operator",
		Transport: "loopback", Source: "127.0.0.1:50123"}
}

func readCall() Call {
	return Call{
		Principal: alice(), Tool: "proxmox_api_call", Endpoint: "nodes_qemu_status_current_get",
		Method: "GET", PathTemplate: "/nodes/{node}/qemu/{vmid}/status/current",
		Path: "/nodes/pve1/qemu/100/status/current", Risk: "read",
		Args:     map[string]any{"method": "GET", "path": "/nodes/pve1/qemu/100/status/current"},
		Decision: Decision{Effect: "allow", Reasons: []string{"operator may read"}, Policy: "operator", PolicyDigest: "sha256:00"},
	}
}

func writeCall() Call {
	return Call{
		Principal: alice(), Tool: "proxmox_api_call", Endpoint: "nodes_qemu_config_post",
		Method: "POST", PathTemplate: "/nodes/{node}/qemu/{vmid}/config",
		Path: "/nodes/pve1/qemu/100/config", Risk: "write",
		Args:        map[string]any{"params": map[string]any{"memory": 4096, "cipassword": "hunter2", "digest": "abc"}},
		Decision:    Decision{Effect: "allow", Policy: "operator"},
		PriorDigest: "3f1c0d", PriorConfig: map[string]any{"memory": 2048, "cipassword": "**********"},
	}
}

func TestRecordIntentReceiptTail(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 11, 30, 10, 4, 5, 123456789, time.UTC)
	j := openTest(t, Options{Now: func() time.Time { return now }})

	read, err := j.Record(ctx, readCall(), Result{Outcome: OutcomeOK, Status: 200, Duration: 1500 * time.Microsecond})
	if err != nil {
		t.Fatal(err)
	}
	if read.ID != 1 || read.Kind != KindCall || len(read.CallID) != 32 || read.PrevHash != genesis || len(read.Hash) != 64 {
		t.Errorf("read row: %+v", read)
	}
	if !read.Time.Equal(now.Truncate(time.Microsecond)) || read.DurationUS != 1500 {
		t.Errorf("read row time %v duration %d", read.Time, read.DurationUS)
	}
	wc := writeCall()
	wc.ID = "req-42"
	in, err := j.Intent(ctx, wc)
	if err != nil {
		t.Fatal(err)
	}
	if in.CallID != "req-42" || in.Outcome != OutcomePending || in.PrevHash != read.Hash || in.PriorDigest != "3f1c0d" {
		t.Errorf("intent row: %+v", in)
	}
	if strings.Contains(string(in.Args), "hunter2") || !strings.Contains(string(in.Args), `"cipassword":"[redacted hmac:`) {
		t.Errorf("intent args not redacted: %s", in.Args)
	}
	open, err := j.OpenIntents(ctx, time.Time{})
	if err != nil || len(open) != 1 || open[0].CallID != "req-42" {
		t.Fatalf("open intents = %v, %v", open, err)
	}
	upid := "UPID:pve1:0000C1A2:0001E2F3:6740A1B2:qmconfig:100:alice@pve!pmcp:"
	rc, err := j.Receipt(ctx, in.CallID, Result{Outcome: OutcomeOK, Status: 200, Duration: 40 * time.Millisecond, UPID: upid, JobID: "job-1"})
	if err != nil {
		t.Fatal(err)
	}
	if rc.Kind != KindReceipt || rc.CallID != "req-42" || rc.Principal != alice() || rc.Tool != "proxmox_api_call" ||
		rc.Path != "/nodes/pve1/qemu/100/config" || rc.Decision.Effect != "allow" || rc.UPID != upid || rc.JobID != "job-1" ||
		string(rc.Args) != "null" || rc.PrevHash != in.Hash {
		t.Errorf("receipt row: %+v", rc)
	}
	if open, err := j.OpenIntents(ctx, time.Time{}); err != nil || len(open) != 0 {
		t.Errorf("open intents after the receipt = %v, %v", open, err)
	}
	tail, err := j.Tail(ctx, 2)
	if err != nil || len(tail) != 2 || tail[0].ID != 2 || tail[1].ID != 3 {
		t.Fatalf("tail 2 = %v, %v", tail, err)
	}
	all, err := j.Tail(ctx, 100)
	if err != nil || len(all) != 3 {
		t.Fatalf("tail 100 = %d rows, %v", len(all), err)
	}
	evs, err := j.CallEvents(ctx, "req-42")
	if err != nil || len(evs) != 2 || evs[0].Kind != KindIntent || evs[1].Kind != KindReceipt {
		t.Errorf("call events = %v, %v", evs, err)
	}
	rep, err := j.Verify(ctx)
	if err != nil || rep.Rows != 3 || rep.HeadID != 3 || rep.Head != rc.Hash || rep.OpenIntents != 0 {
		t.Errorf("verify = %+v, %v", rep, err)
	}
	if st := j.Stats(); st.Rows != 3 || st.Failures != 0 || st.Commits != 3 {
		t.Errorf("stats = %+v", st)
	}
}

// An intent without a receipt survives a restart (a crash between the two)
// and is found by OpenIntents, filtered by time.
func TestOpenIntentsAfterRestart(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "journal.db")
	j, err := Open(ctx, path, Options{Logger: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	early := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := writeCall()
	c.Time = early
	in1, err := j.Intent(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	c.Time = early.Add(time.Hour)
	in2, err := j.Intent(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	c.Time = early.Add(2 * time.Hour)
	in3, err := j.Intent(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := j.Receipt(ctx, in2.CallID, Result{Outcome: OutcomeError, Error: "500 got timeout"}); err != nil {
		t.Fatal(err)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	j, err = Open(ctx, path, Options{Logger: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	open, err := j.OpenIntents(ctx, time.Time{})
	if err != nil || len(open) != 2 || open[0].CallID != in1.CallID || open[1].CallID != in3.CallID {
		t.Fatalf("open intents = %v, %v", open, err)
	}
	open, err = j.OpenIntents(ctx, early.Add(90*time.Minute))
	if err != nil || len(open) != 1 || open[0].CallID != in1.CallID {
		t.Fatalf("open intents before 01:30 = %v, %v", open, err)
	}
	// Reconciliation closes one as uncertain.
	if _, err := j.Receipt(ctx, in1.CallID, Result{Outcome: OutcomeUncertain, Error: "no task found in PVE's index"}); err != nil {
		t.Fatal(err)
	}
	rep, err := j.Verify(ctx)
	if err != nil || rep.Rows != 5 || rep.OpenIntents != 1 {
		t.Errorf("verify = %+v, %v", rep, err)
	}
}

func TestReceiptAndCallIDRules(t *testing.T) {
	ctx := context.Background()
	j := openTest(t, Options{})
	if _, err := j.Receipt(ctx, "nope", Result{Outcome: OutcomeOK}); !errors.Is(err, ErrNoIntent) {
		t.Errorf("receipt without intent: %v", err)
	}
	rec, err := j.Record(ctx, readCall(), Result{Outcome: OutcomeOK})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := j.Receipt(ctx, rec.CallID, Result{Outcome: OutcomeOK}); !errors.Is(err, ErrNoIntent) {
		t.Errorf("receipt for a call row: %v", err)
	}
	in, err := j.Intent(ctx, writeCall())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := j.Receipt(ctx, in.CallID, Result{Outcome: OutcomeOK}); err != nil {
		t.Fatal(err)
	}
	if _, err := j.Receipt(ctx, in.CallID, Result{Outcome: OutcomeOK}); !errors.Is(err, ErrReceiptExists) {
		t.Errorf("second receipt: %v", err)
	}
	dup := writeCall()
	dup.ID = in.CallID
	if _, err := j.Intent(ctx, dup); !errors.Is(err, ErrDuplicateCall) {
		t.Errorf("intent with a used call id: %v", err)
	}
	dup = readCall()
	dup.ID = rec.CallID
	if _, err := j.Record(ctx, dup, Result{Outcome: OutcomeOK}); !errors.Is(err, ErrDuplicateCall) {
		t.Errorf("record with a used call id: %v", err)
	}
	// The refusals wrote nothing and the chain holds.
	rep, err := j.Verify(ctx)
	if err != nil || rep.Rows != 3 {
		t.Errorf("verify = %+v, %v", rep, err)
	}
	if st := j.Stats(); st.Failures != 5 {
		t.Errorf("failures = %d, want 5", st.Failures)
	}
}

func TestValidation(t *testing.T) {
	ctx := context.Background()
	j := openTest(t, Options{})
	cases := []struct {
		name   string
		change func(c *Call, r *Result)
		want   string
	}{
		{"no tool", func(c *Call, r *Result) { c.Tool = "" }, "tool: required"},
		{"no principal", func(c *Call, r *Result) { c.Principal.KeyID, c.Principal.KeyName = "", "" }, "principal: a key id or key name is required"},
		{"no transport", func(c *Call, r *Result) { c.Principal.Transport = "" }, "principal.transport: required"},
		{"bad method", func(c *Call, r *Result) { c.Method = "PATCH" }, `method "PATCH": want GET, POST, PUT, DELETE or empty`},
		{"relative path", func(c *Call, r *Result) { c.Path = "nodes/pve1" }, `path "nodes/pve1": must start with /`},
		{"method without path", func(c *Call, r *Result) { c.Path = "" }, "path: required with method GET"},
		{"unknown effect", func(c *Call, r *Result) { c.Decision.Effect = "maybe" }, `decision.effect "maybe": want one of allow, deny, confirm, dry_run, breakglass, or empty`},
		{"bad call id", func(c *Call, r *Result) { c.ID = "a b" }, `call id "a b": character ' ' at 1`},
		{"long call id", func(c *Call, r *Result) { c.ID = strings.Repeat("a", 65) }, "want 1 to 64 characters"},
		{"args that are not JSON", func(c *Call, r *Result) { c.Args = func() {} }, "args: encode"},
		{"raw args that are not JSON", func(c *Call, r *Result) { c.Args = json.RawMessage(`{"a":`) }, "args: decode"},
		{"unknown outcome", func(c *Call, r *Result) { r.Outcome = "fine" }, `outcome "fine": want one of ok, error`},
		{"pending outcome", func(c *Call, r *Result) { r.Outcome = OutcomePending }, `outcome "pending"`},
		{"negative duration", func(c *Call, r *Result) { r.Duration = -time.Second }, "duration -1s: must not be negative"},
		{"bad status", func(c *Call, r *Result) { r.Status = 1000 }, "status 1000"},
		{"bad upid", func(c *Call, r *Result) { r.UPID = "pve1:123" }, `upid "pve1:123": must start with "UPID:"`},
		{"deny but ok", func(c *Call, r *Result) { c.Decision.Effect = "deny" }, `outcome "ok": a call the policy denied has outcome denied`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, r := readCall(), Result{Outcome: OutcomeOK}
			tc.change(&c, &r)
			_, err := j.Record(ctx, c, r)
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want ErrInvalid with %q", err, tc.want)
			}
		})
	}
	for _, effect := range []string{"", "deny"} {
		c := writeCall()
		c.Decision.Effect = effect
		if _, err := j.Intent(ctx, c); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "an intent needs a decision") {
			t.Errorf("intent with effect %q: %v", effect, err)
		}
	}
	if _, err := j.Receipt(ctx, "x", Result{Outcome: OutcomeDenied}); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "a receipt follows a write that was sent") {
		t.Errorf("denied receipt: %v", err)
	}
	if rows, _ := j.Tail(ctx, 10); len(rows) != 0 {
		t.Errorf("%d rows written by invalid calls", len(rows))
	}
}

// Long error text is cut with a marker, not refused: the call is still
// recorded.
func TestLongErrorAndArgs(t *testing.T) {
	ctx := context.Background()
	j := openTest(t, Options{})
	c := readCall()
	c.Args = map[string]any{"blob": strings.Repeat("x", 2<<20)}
	ev, err := j.Record(ctx, c, Result{Outcome: OutcomeError, Error: strings.Repeat("é", 20000)})
	if err != nil {
		t.Fatal(err)
	}
	if len(ev.Error) > maxError+64 || !strings.HasSuffix(ev.Error, "more bytes]") {
		t.Errorf("error text: %d bytes, ends %q", len(ev.Error), ev.Error[len(ev.Error)-20:])
	}
	var args map[string]any
	if err := json.Unmarshal(ev.Args, &args); err != nil || args["_omitted"] != "too large for the journal" || len(args["sha256"].(string)) != 64 {
		t.Errorf("oversized args = %s, %v", ev.Args, err)
	}
}

func TestWritesAfterCloseAndReadOnly(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "journal.db")
	j, err := Open(ctx, path, Options{Logger: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := j.Record(ctx, readCall(), Result{Outcome: OutcomeOK}); err != nil {
		t.Fatal(err)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := j.Record(ctx, readCall(), Result{Outcome: OutcomeOK}); !errors.Is(err, ErrClosed) {
		t.Errorf("record after close: %v", err)
	}
	if err := j.Close(); err != nil {
		t.Errorf("second close: %v", err)
	}
	ro, err := Open(ctx, path, Options{ReadOnly: true, Logger: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if _, err := ro.Record(ctx, readCall(), Result{Outcome: OutcomeOK}); !errors.Is(err, ErrReadOnly) {
		t.Errorf("record on a read-only journal: %v", err)
	}
	if evs, err := ro.Tail(ctx, 10); err != nil || len(evs) != 1 {
		t.Errorf("read-only tail = %v, %v", evs, err)
	}
	if _, err := ro.Verify(ctx); err != nil {
		t.Errorf("read-only verify: %v", err)
	}
}

// A context that ends while the row waits its turn withdraws it; an error
// always means nothing was written.
func TestCancelledContext(t *testing.T) {
	j := openTest(t, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := j.Record(ctx, readCall(), Result{Outcome: OutcomeOK})
	if err == nil {
		// The writer may take the request before the caller notices the
		// cancelled context; then the row is written and durable.
		evs, _ := j.Tail(context.Background(), 10)
		if len(evs) != 1 {
			t.Fatalf("record returned success, %d rows", len(evs))
		}
		return
	}
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "nothing written") {
		t.Errorf("err = %v", err)
	}
	if evs, _ := j.Tail(context.Background(), 10); len(evs) != 0 {
		t.Errorf("a withdrawn row was written")
	}
}

func TestConcurrentWriters(t *testing.T) {
	ctx := context.Background()
	j := openTest(t, Options{})
	const writers, calls = 16, 25
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < calls; i++ {
				in, err := j.Intent(ctx, writeCall())
				if err != nil {
					errs <- err
					return
				}
				if _, err := j.Record(ctx, readCall(), Result{Outcome: OutcomeOK}); err != nil {
					errs <- err
					return
				}
				if _, err := j.Receipt(ctx, in.CallID, Result{Outcome: OutcomeOK}); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	rep, err := j.Verify(ctx)
	if err != nil || rep.Rows != writers*calls*3 || rep.OpenIntents != 0 {
		t.Fatalf("verify = %+v, %v", rep, err)
	}
	st := j.Stats()
	t.Logf("%d rows in %d commits", st.Rows, st.Commits)
	if st.Rows != writers*calls*3 || st.Commits > st.Rows {
		t.Errorf("stats = %+v", st)
	}
}

// Two processes' worth of writers (two Journals on one file) keep one chain:
// each batch reads the head inside its write transaction.
func TestTwoWritersOneFile(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "journal.db")
	a, err := Open(ctx, path, Options{Logger: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := Open(ctx, path, Options{Logger: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	var wg sync.WaitGroup
	for _, j := range []*Journal{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 30; i++ {
				if _, err := j.Record(ctx, readCall(), Result{Outcome: OutcomeOK}); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if rep, err := a.Verify(ctx); err != nil || rep.Rows != 60 {
		t.Errorf("verify = %+v, %v", rep, err)
	}
}

// Several processes opening a journal that does not exist yet (stdio
// sessions started together) create it once: every open succeeds, and the
// rows they write form one chain.
func TestConcurrentFirstOpen(t *testing.T) {
	ctx := context.Background()
	for round := range 5 {
		path := filepath.Join(t.TempDir(), fmt.Sprintf("journal-%d.db", round))
		const n = 8
		js := make([]*Journal, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				js[i], errs[i] = Open(ctx, path, Options{Logger: quietLog()})
			}()
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("round %d, open %d: %v", round, i, err)
			}
			if _, err := js[i].Record(ctx, readCall(), Result{Outcome: OutcomeOK}); err != nil {
				t.Fatal(err)
			}
		}
		if rep, err := js[0].Verify(ctx); err != nil || rep.Rows != n {
			t.Errorf("verify = %+v, %v", rep, err)
		}
		for _, j := range js {
			j.Close()
		}
	}
}

func TestFollow(t *testing.T) {
	ctx := context.Background()
	j := openTest(t, Options{})
	for i := 0; i < 3; i++ {
		if _, err := j.Record(ctx, readCall(), Result{Outcome: OutcomeOK}); err != nil {
			t.Fatal(err)
		}
	}
	fctx, cancel := context.WithCancel(ctx)
	f := j.Follow(fctx, 1)
	for _, want := range []int64{2, 3} {
		if ev := <-f.C; ev.ID != want {
			t.Fatalf("followed row %d, want %d", ev.ID, want)
		}
	}
	if _, err := j.Record(ctx, readCall(), Result{Outcome: OutcomeOK}); err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-f.C:
		if ev.ID != 4 {
			t.Fatalf("followed row %d, want 4", ev.ID)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a new row did not arrive")
	}
	cancel()
	for range f.C {
	}
	if err := f.Err(); err != nil {
		t.Errorf("follow ended with %v", err)
	}
}

// A read-only Journal (the CLI) follows rows another Journal (the daemon)
// writes, by polling.
func TestFollowAcrossConnections(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "journal.db")
	w, err := Open(ctx, path, Options{Logger: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	r, err := Open(ctx, path, Options{ReadOnly: true, Logger: quietLog(), PollInterval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	fctx, cancel := context.WithCancel(ctx)
	defer cancel()
	f := r.Follow(fctx, 0)
	for i := 1; i <= 5; i++ {
		if _, err := w.Record(ctx, readCall(), Result{Outcome: OutcomeOK}); err != nil {
			t.Fatal(err)
		}
		select {
		case ev := <-f.C:
			if ev.ID != int64(i) {
				t.Fatalf("followed row %d, want %d", ev.ID, i)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("row %d did not arrive", i)
		}
	}
	// Closing the journal ends the stream without an error.
	r.Close()
	for range f.C {
	}
	if err := f.Err(); err != nil {
		t.Errorf("follow ended with %v", err)
	}
}

func TestReadArgumentErrors(t *testing.T) {
	j := openTest(t, Options{})
	ctx := context.Background()
	if _, err := j.Tail(ctx, 0); err == nil || !strings.Contains(err.Error(), "want 1 to 10000") {
		t.Errorf("tail 0: %v", err)
	}
	if _, err := j.Events(ctx, -1, 10); err == nil || !strings.Contains(err.Error(), "must not be negative") {
		t.Errorf("events after -1: %v", err)
	}
	if _, err := j.CallEvents(ctx, ""); !errors.Is(err, ErrInvalid) {
		t.Errorf("call events of an empty id: %v", err)
	}
	if id, h, err := j.Head(ctx); err != nil || id != 0 || h != genesis {
		t.Errorf("head of an empty journal = %d %s %v", id, h, err)
	}
}

// The writer's connection runs in WAL mode with synchronous=FULL.
func TestPragmas(t *testing.T) {
	j := openTest(t, Options{BusyTimeout: 1234 * time.Millisecond})
	ctx := context.Background()
	for _, p := range []struct {
		pragma string
		want   string
	}{{"journal_mode", "wal"}, {"synchronous", "2"}, {"busy_timeout", "1234"}, {"application_id", "1347240778"}, {"user_version", "3"}} {
		var got string
		if err := j.w.QueryRowContext(ctx, "PRAGMA "+p.pragma).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != p.want {
			t.Errorf("PRAGMA %s = %s, want %s", p.pragma, got, p.want)
		}
	}
	var qo string
	if err := j.r.QueryRowContext(ctx, "PRAGMA query_only").Scan(&qo); err != nil || qo != "1" {
		t.Errorf("readers: query_only = %s, %v", qo, err)
	}
}

func TestFileModes(t *testing.T) {
	for _, umask := range []int{0o000, 0o022, 0o077} {
		old := setUmask(umask)
		path := filepath.Join(t.TempDir(), "journal.db")
		j, err := Open(context.Background(), path, Options{Logger: quietLog()})
		setUmask(old)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := j.Record(context.Background(), readCall(), Result{Outcome: OutcomeOK}); err != nil {
			t.Fatal(err)
		}
		for _, p := range []string{path, path + "-wal", path + "-shm"} {
			st, err := os.Stat(p)
			if err != nil {
				t.Fatal(err)
			}
			if st.Mode().Perm() != 0o600 {
				t.Errorf("umask %03o: %s has mode %v", umask, filepath.Base(p), st.Mode().Perm())
			}
		}
		j.Close()
	}
	// An existing journal with a loose mode is tightened.
	path := filepath.Join(t.TempDir(), "journal.db")
	j, err := Open(context.Background(), path, Options{Logger: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	j.Close()
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	j, err = Open(context.Background(), path, Options{Logger: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	j.Close()
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o600 {
		t.Errorf("a 0644 journal was left at %v", st.Mode().Perm())
	}
}

func TestOpenRefuses(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	other := filepath.Join(dir, "other.db")
	db, err := sql.Open("sqlite", other)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`CREATE TABLE things (x)`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	newer := filepath.Join(dir, "newer.db")
	j, err := Open(ctx, newer, Options{Logger: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	j.Close()
	db, err = sql.Open("sqlite", newer)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`PRAGMA user_version = 99`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	link := filepath.Join(dir, "link.db")
	if err := os.Symlink(newer, link); err != nil {
		t.Fatal(err)
	}
	empty := write("empty.db", "")
	cases := []struct {
		name string
		path string
		opts Options
		want string
	}{
		{"no path", "", Options{}, "no path given"},
		{"missing directory", filepath.Join(dir, "nope", "journal.db"), Options{}, "directory"},
		{"text file", write("text.db", "hello, this is not a database at all, not even close\n"), Options{}, "not a database"},
		{"another SQLite database", other, Options{}, "not a proxmox-mcp journal"},
		{"newer schema", newer, Options{}, "schema version 99 is newer than this binary knows (3)"},
		{"newer schema, read-only", newer, Options{ReadOnly: true}, "schema version 99 is newer"},
		{"symbolic link", link, Options{}, "not a regular file"},
		{"a directory", dir, Options{}, "not a regular file"},
		{"read-only, missing", filepath.Join(dir, "missing.db"), Options{ReadOnly: true}, "no journal there"},
		{"read-only, empty file", empty, Options{ReadOnly: true}, "not yet a journal"},
		{"negative option", filepath.Join(dir, "neg.db"), Options{MaxBatch: -1}, "negative option"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.opts.Logger = quietLog()
			j, err := Open(ctx, tc.path, tc.opts)
			if err == nil {
				j.Close()
				t.Fatalf("opened")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

// setUmask sets the process umask and returns the old one.
func setUmask(m int) int { return syscall.Umask(m) }

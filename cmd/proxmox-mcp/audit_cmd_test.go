package main

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/proxmox-mcp/proxmox-mcp/journal"
	"github.com/rogpeppe/go-internal/testscript"
)

// TestAuditScripts runs the scripts in testdata/audit. They read journals
// that the test's own commands write through the journal package (the
// product has no command that writes audit rows):
//
//	seed-journal FILE        writes the calls of seedCalls
//	tamper-journal FILE ID   changes row ID behind the journal's back
func TestAuditScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir: "testdata/audit",
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"seed-journal":   seedJournalCmd,
			"tamper-journal": tamperJournalCmd,
		},
	})
}

func seedJournalCmd(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: seed-journal FILE")
	}
	if err := seedJournal(context.Background(), ts.MkAbs(args[0])); err != nil {
		ts.Fatalf("seed-journal: %v", err)
	}
}

func tamperJournalCmd(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: tamper-journal FILE ID")
	}
	id, err := strconv.Atoi(args[1])
	if err != nil {
		ts.Fatalf("tamper-journal: %v", err)
	}
	db, err := sql.Open("sqlite", ts.MkAbs(args[0]))
	if err != nil {
		ts.Fatalf("tamper-journal: %v", err)
	}
	defer db.Close()
	for _, s := range []string{`DROP TRIGGER events_append_only_update`, `UPDATE events SET outcome = 'ok', error = '' WHERE id = ` + strconv.Itoa(id)} {
		if _, err := db.Exec(s); err != nil {
			ts.Fatalf("tamper-journal: %s: %v", s, err)
		}
	}
}

// seedJournal writes a journal of a few calls at fixed times: a read, a
// denial, a write with its receipt, a search, an open intent with a
// secret in its arguments, and a failed read whose error holds a key.
func seedJournal(ctx context.Context, path string) error {
	t0 := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	tick := 0
	now := func() time.Time { tick++; return t0.Add(time.Duration(tick) * time.Second) }
	j, err := journal.Open(ctx, path, journal.Options{Now: now, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		return err
	}
	defer j.Close()
	alice := journal.Principal{KeyID: "aaaaaaaaaaaaaaaa", KeyName: "alice", Profile: "operator", Transport: "loopback", Source: "127.0.0.1:40001"}
	bob := journal.Principal{KeyID: "bbbbbbbbbbbbbbbb", KeyName: "bob", Profile: "read-only", Transport: "tailnet", Source: "100.64.0.7:51000", TailnetUser: "bob@example.com", TailnetNode: "bob-laptop"}
	carol := journal.Principal{KeyID: "cccccccccccccccc", KeyName: "carol", Policy: "lab@3", Transport: "stdio"}
	allow := journal.Decision{Effect: "allow", Reasons: []string{}, Policy: "operator", PolicyDigest: "sha256:0f"}
	call := func(p journal.Principal, method, tmpl, path string, args any) journal.Call {
		return journal.Call{Time: now(), Principal: p, Tool: "proxmox_api_call", Method: method, PathTemplate: tmpl, Path: path,
			Risk: "read", Args: args, Decision: allow}
	}
	steps := []func() error{
		func() error {
			c := call(alice, "GET", "/nodes/{node}/qemu/{vmid}/status/current", "/nodes/pve1/qemu/100/status/current", map[string]any{"path": "/nodes/pve1/qemu/100/status/current"})
			_, err := j.Record(ctx, c, journal.Result{Outcome: journal.OutcomeOK, Status: 200, Duration: 1500 * time.Microsecond})
			return err
		},
		func() error {
			c := call(bob, "POST", "/nodes/{node}/qemu/{vmid}/status/stop", "/nodes/pve1/qemu/100/status/stop", map[string]any{})
			c.Risk = "destructive"
			c.Decision = journal.Decision{Effect: "deny", Reasons: []string{"read-only keys may not change state"}, Policy: "read-only"}
			_, err := j.Record(ctx, c, journal.Result{Outcome: journal.OutcomeDenied, Duration: 300 * time.Microsecond})
			return err
		},
		func() error {
			c := call(alice, "POST", "/nodes/{node}/qemu/{vmid}/status/start", "/nodes/pve1/qemu/100/status/start", map[string]any{})
			c.ID, c.Risk = "call-start-100", "write"
			in, err := j.Intent(ctx, c)
			if err != nil {
				return err
			}
			_, err = j.Receipt(ctx, in.CallID, journal.Result{Outcome: journal.OutcomeOK, Status: 200, Duration: 41 * time.Millisecond,
				UPID: "UPID:pve1:00001234:00005678:6740A1B2:qmstart:100:pmcp-operator@pve!mcp:", JobID: "job-7"})
			return err
		},
		func() error {
			c := journal.Call{Time: now(), Principal: alice, Tool: "proxmox_api_search", Args: map[string]any{"query": "snapshot"}}
			_, err := j.Record(ctx, c, journal.Result{Outcome: journal.OutcomeOK, Duration: 800 * time.Microsecond})
			return err
		},
		func() error {
			c := call(carol, "POST", "/nodes/{node}/qemu/{vmid}/config", "/nodes/pve1/qemu/101/config",
				map[string]any{"params": map[string]any{"cipassword": "hunter2", "memory": 4096}})
			c.ID, c.Risk, c.PriorDigest = "call-config-101", "write", "5e4f3a"
			c.PriorConfig = map[string]any{"memory": 2048}
			_, err := j.Intent(ctx, c)
			return err
		},
		func() error {
			c := call(alice, "GET", "/nodes/{node}/storage/{storage}/content", "/nodes/pve1/storage/nfs/content", map[string]any{})
			_, err := j.Record(ctx, c, journal.Result{Outcome: journal.OutcomeError, Status: 500, Duration: 2 * time.Second,
				Error: "storage 'nfs' is not online\nused key pmcp_aaaaaaaaaaaaaaaa_Zm9vYmFyYmF6cXV4cXV1eHF1dXhxdXV4cXV1eHF1dXg"})
			return err
		},
	}
	for i, step := range steps {
		if err := step(); err != nil {
			return fmt.Errorf("step %d: %w", i+1, err)
		}
	}
	return j.Close()
}

// `audit tail --follow` prints what is already there, then each new call
// as it is committed (by another process's journal, here another Journal
// on the same file), and stops cleanly when interrupted.
func TestAuditTailFollow(t *testing.T) {
	ctx := context.Background()
	for _, asJSON := range []bool{false, true} {
		t.Run(fmt.Sprintf("json=%v", asJSON), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "journal.db")
			if err := seedJournal(ctx, path); err != nil {
				t.Fatal(err)
			}
			w, err := journal.Open(ctx, path, journal.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			args := []string{"audit", "tail", "--follow", "-n", "2", "--journal", path}
			if asJSON {
				args = append(args, "--json")
			}
			runCtx, interrupt := context.WithCancel(ctx)
			pr, pw := io.Pipe()
			var stderr strings.Builder
			code := make(chan int, 1)
			go func() {
				code <- run(runCtx, args, pw, &stderr)
				pw.Close()
			}()
			next := lineReader(t, pr)
			first, second := next(), next()
			if asJSON {
				// The last two rows: the open intent and the failed read.
				if !strings.Contains(first, `"kind":"intent"`) || !strings.Contains(second, `"outcome":"error"`) {
					t.Fatalf("backlog:\n%s\n%s", first, second)
				}
			} else if !strings.Contains(first, " carol ") || !strings.Contains(second, " alice ") || !strings.Contains(second, "GET /nodes/pve1/storage/nfs/content") {
				t.Fatalf("backlog:\n%s\n%s", first, second)
			}
			// A quick write shows as one line (its receipt) in human form,
			// two rows in JSON; a read as one.
			c := journal.Call{Principal: journal.Principal{KeyName: "dave", Transport: "loopback"}, Tool: "proxmox_api_call",
				Method: "POST", Path: "/nodes/pve1/qemu/102/status/reboot", Decision: journal.Decision{Effect: "allow"}}
			in, err := w.Intent(ctx, c)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := w.Receipt(ctx, in.CallID, journal.Result{Outcome: journal.OutcomeOK, UPID: "UPID:pve1:1:2:3:qmreboot:102:x@pve:"}); err != nil {
				t.Fatal(err)
			}
			c.Method, c.Path = "GET", "/version"
			if _, err := w.Record(ctx, c, journal.Result{Outcome: journal.OutcomeOK}); err != nil {
				t.Fatal(err)
			}
			if asJSON {
				var evs []journal.Event
				for i := 0; i < 3; i++ {
					var ev journal.Event
					if err := json.Unmarshal([]byte(next()), &ev); err != nil {
						t.Fatal(err)
					}
					evs = append(evs, ev)
				}
				if evs[0].Kind != journal.KindIntent || evs[1].Kind != journal.KindReceipt || evs[2].Path != "/version" || evs[1].CallID != in.CallID {
					t.Errorf("followed rows: %+v", evs)
				}
			} else {
				if l := next(); !strings.Contains(l, " dave ") || !strings.Contains(l, "allow      ok") || !strings.Contains(l, "UPID:pve1:1:2:3:qmreboot:102:x@pve:") {
					t.Errorf("receipt line: %q", l)
				}
				if l := next(); !strings.Contains(l, "GET /version") {
					t.Errorf("read line: %q", l)
				}
			}
			interrupt()
			if l := next(); l != "EOF" {
				t.Errorf("after the interrupt: %q", l)
			}
			if c := <-code; c != 0 {
				t.Errorf("exit %d: %s", c, stderr.String())
			}
		})
	}
}

// A slow write shows while it is under way: its intent is printed as
// pending once it has waited holdIntent for its receipt.
func TestAuditTailFollowShowsSlowWrites(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for the hold time")
	}
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "journal.db")
	w, err := journal.Open(ctx, path, journal.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	runCtx, interrupt := context.WithCancel(ctx)
	defer interrupt()
	pr, pw := io.Pipe()
	go func() {
		run(runCtx, []string{"audit", "tail", "--follow", "-n", "0", "--journal", path}, pw, io.Discard)
		pw.Close()
	}()
	next := lineReader(t, pr)
	// Reads until the command shows one: it is following from then on.
	ready := make(chan struct{})
	go func() {
		for {
			select {
			case <-ready:
				return
			case <-time.After(50 * time.Millisecond):
			}
			c := journal.Call{Principal: journal.Principal{KeyName: "warm", Transport: "stdio"}, Tool: "proxmox_api_call", Method: "GET", Path: "/version"}
			if _, err := w.Record(ctx, c, journal.Result{Outcome: journal.OutcomeOK}); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	next()
	close(ready)
	c := journal.Call{Principal: journal.Principal{KeyName: "erin", Transport: "stdio"}, Tool: "proxmox_api_call",
		Method: "POST", Path: "/nodes/pve1/vzdump", Decision: journal.Decision{Effect: "allow"}}
	start := time.Now()
	in, err := w.Intent(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	l := next()
	for strings.Contains(l, " warm ") {
		l = next()
	}
	if !strings.Contains(l, " erin ") || !strings.Contains(l, "allow      pending             -  POST /nodes/pve1/vzdump") {
		t.Fatalf("first line: %q", l)
	}
	if d := time.Since(start); d < holdIntent {
		t.Errorf("the pending intent showed after %v, before the hold time", d)
	}
	if _, err := w.Receipt(ctx, in.CallID, journal.Result{Outcome: journal.OutcomeTaskRunning}); err != nil {
		t.Fatal(err)
	}
	if l := next(); !strings.Contains(l, " erin ") || !strings.Contains(l, "task_running") {
		t.Fatalf("second line: %q", l)
	}
}

// lineReader returns a function that reads the next line of r, or fails
// the test after 10s; it returns "EOF" at the end.
func lineReader(t *testing.T, r io.Reader) func() string {
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	return func() string {
		t.Helper()
		select {
		case l, ok := <-lines:
			if !ok {
				return "EOF"
			}
			return l
		case <-time.After(10 * time.Second):
			t.Fatal("no line within 10s")
			return ""
		}
	}
}

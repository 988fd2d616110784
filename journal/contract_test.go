package journal

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// v1Journal writes a journal as schema version 1 made it: format 1 rows
// without the detail column, hashed without it.
func v1Journal(t *testing.T, path string) {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := migrate1(ctx, tx); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(`PRAGMA user_version = 1`); err != nil {
		t.Fatal(err)
	}
	v1cols := strings.Replace(columns, "detail, ", "", 1)
	prev := genesis
	for i, kind := range []string{"call", "intent", "receipt", "intent"} {
		callID := []string{"c1", "c2", "c2", "c3"}[i]
		r := row{id: int64(i + 1), format: 1, time: "2026-11-30T10:00:0" + string(rune('0'+i)) + ".000000Z", kind: kind, callID: callID,
			keyID: "abcdefghijklmnop", keyName: "alice", profile: "admin", transport: "loopback", tool: "proxmox_api_call",
			method: "PUT", pathTemplate: "/nodes/{node}/qemu/{vmid}/config", path: "/nodes/pve1/qemu/100/config", risk: "write",
			args: "{}", effect: "allow", reasons: "[]", priorConfig: "null", outcome: map[string]string{"call": "ok", "intent": "pending", "receipt": "ok"}[kind],
			prevHash: prev}
		r.hash = r.computeHash()
		vals := r.values()
		vals = append(vals[:32:32], vals[33:]...) // without detail
		if _, err := tx.Exec(`INSERT INTO events (`+v1cols+`) VALUES (`+strings.Repeat("?, ", 33)+`?)`, vals...); err != nil {
			t.Fatal(err)
		}
		switch kind {
		case "intent":
			if _, err := tx.Exec(`INSERT INTO open_intents (call_id, event_id) VALUES (?, ?)`, callID, r.id); err != nil {
				t.Fatal(err)
			}
		case "receipt":
			if _, err := tx.Exec(`DELETE FROM open_intents WHERE call_id = ?`, callID); err != nil {
				t.Fatal(err)
			}
		}
		prev = r.hash
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
}

// A journal of schema version 1 is migrated in place: its rows, ids, hashes
// and open intents are kept and still verify (format 1, hashed without
// detail), and new rows are format 2.
func TestMigrationFromVersion1KeepsTheChain(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "journal.db")
	v1Journal(t, path)
	j, err := Open(ctx, path, Options{Logger: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	rep, err := j.Verify(ctx)
	if err != nil || rep.Rows != 4 || rep.OpenIntents != 1 {
		t.Fatalf("after migration: %+v, %v", rep, err)
	}
	open, err := j.OpenIntents(ctx, time.Time{})
	if err != nil || len(open) != 1 || open[0].CallID != "c3" {
		t.Fatalf("open intents after migration: %v, %v", open, err)
	}
	ev, err := j.Record(ctx, Call{Tool: "t", Principal: Principal{KeyID: "abcdefghijklmnop", Transport: "stdio"}}, Result{Outcome: OutcomeOK})
	if err != nil || ev.ID != 5 {
		t.Fatalf("a new row: %+v, %v", ev, err)
	}
	var format int
	if err := j.r.QueryRowContext(ctx, `SELECT format FROM events WHERE id = 5`).Scan(&format); err != nil || format != 2 {
		t.Errorf("new row format %d, %v; want 2", format, err)
	}
	if rep, err := j.Verify(ctx); err != nil || rep.Rows != 5 {
		t.Errorf("verify after a new row: %+v, %v", rep, err)
	}
}

func intentWithKey(key, digest, path string) Call {
	return Call{Tool: "proxmox_api_call", Principal: Principal{KeyID: "abcdefghijklmnop", Transport: "loopback"},
		Method: "PUT", PathTemplate: "/nodes/{node}/qemu/{vmid}/config", Path: path, Risk: "write",
		Decision: Decision{Effect: "allow"}, Args: map[string]any{"memory": "2048"},
		Detail: &Detail{OperationKey: key, RequestDigest: digest}}
}

// An operation key is claimed by the intent that carries it: the same key
// again, with the same request, is told which operation it was; with
// another request it is refused; another key may use the same words. Under
// concurrent retries exactly one intent is written.
func TestOperationKeyIsClaimedOnce(t *testing.T) {
	ctx := context.Background()
	j := openTest(t, Options{})
	first, err := j.Intent(ctx, intentWithKey("op-1", "d1", "/nodes/pve1/qemu/100/config"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = j.Intent(ctx, intentWithKey("op-1", "d1", "/nodes/pve1/qemu/100/config"))
	var ke *OperationKeyError
	if !errors.As(err, &ke) || !ke.Same || ke.CallID != first.CallID || !errors.Is(err, ErrOperationKeyUsed) {
		t.Fatalf("same key, same request: %v", err)
	}
	_, err = j.Intent(ctx, intentWithKey("op-1", "d2", "/nodes/pve1/qemu/100/config"))
	if !errors.As(err, &ke) || ke.Same {
		t.Fatalf("same key, other request: %v", err)
	}
	other := intentWithKey("op-1", "d2", "/nodes/pve1/qemu/100/config")
	other.Principal.KeyID = "bcdefghijklmnopq"
	if _, err := j.Intent(ctx, other); err != nil {
		t.Fatalf("another key's same words: %v", err)
	}
	if id, dg, ok, err := j.OperationByKey(ctx, "abcdefghijklmnop", "op-1"); err != nil || !ok || id != first.CallID || dg != "d1" {
		t.Errorf("OperationByKey: %s %s %v %v", id, dg, ok, err)
	}
	if _, err := j.Intent(ctx, intentWithKey("bad key!", "d", "/x")); !errors.Is(err, ErrInvalid) {
		t.Errorf("a malformed operation key: %v", err)
	}

	// Concurrent retries of one operation: one intent.
	var wg sync.WaitGroup
	var mu sync.Mutex
	wins, same := 0, 0
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := j.Intent(ctx, intentWithKey("op-burst", "dX", "/nodes/pve1/qemu/101/config"))
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				wins++
			case errors.As(err, new(*OperationKeyError)):
				same++
			default:
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if wins != 1 || same != 31 {
		t.Errorf("32 concurrent intents with one key: %d written, %d told it was used; want 1 and 31", wins, same)
	}
	if rep, err := j.Verify(ctx); err != nil {
		t.Errorf("verify: %+v, %v", rep, err)
	}
}

// The operations index is derived from the intents and checked by Verify.
func TestVerifyChecksTheOperationsIndex(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "journal.db")
	j, err := Open(ctx, path, Options{Logger: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	if _, err := j.Intent(ctx, intentWithKey("op-1", "d1", "/nodes/pve1/qemu/100/config")); err != nil {
		t.Fatal(err)
	}
	db := tamperer(t, path)
	mustExec(t, db, `UPDATE operations SET call_id = 'forged'`)
	if _, err := j.Verify(ctx); !errors.Is(err, ErrTampered) || !strings.Contains(err.Error(), "operations index") {
		t.Errorf("a forged operations entry: %v", err)
	}
	mustExec(t, db, `DELETE FROM operations`)
	if _, err := j.Verify(ctx); !errors.Is(err, ErrTampered) {
		t.Errorf("a missing operations entry: %v", err)
	}
}

// Observations, resolutions and plans are rows of the chain; a resolution
// settles an existing operation only; a receipt carries the write's
// evidence; secrets in any of them are redacted.
func TestContractRows(t *testing.T) {
	ctx := context.Background()
	j := openTest(t, Options{})
	who := Principal{KeyID: "abcdefghijklmnop", KeyName: "alice", Transport: "loopback"}
	in, err := j.Intent(ctx, intentWithKey("op-1", "d1", "/nodes/pve1/qemu/100/config"))
	if err != nil {
		t.Fatal(err)
	}
	rc, err := j.Receipt(ctx, in.CallID, Result{Outcome: OutcomeOK, Detail: &Detail{Scope: "/nodes/{node}/qemu/{vmid}/config", Digest: "after1",
		Changes: map[string]FieldChange{"memory": {Before: "1024", After: "2048"}, "cipassword": {Before: nil, After: "hunter2"}}}})
	if err != nil {
		t.Fatal(err)
	}
	d, err := rc.DetailOf()
	if err != nil || d.Digest != "after1" || d.Changes["memory"].After != "2048" {
		t.Errorf("receipt detail %+v, %v", d, err)
	}
	if strings.Contains(string(rc.Detail), "hunter2") {
		t.Errorf("a secret field's change reached the journal: %s", rc.Detail)
	}
	ob, err := j.Observe(ctx, Observation{CallID: in.CallID, Principal: who, PathTemplate: "/nodes/{node}/qemu/{vmid}/config",
		Path: "/nodes/pve1/qemu/100/config", Digest: "after1", Config: map[string]any{"memory": "2048", "cipassword": "hunter2"}})
	if err != nil || ob.Kind != KindObservation || strings.Contains(string(ob.Detail), "hunter2") {
		t.Fatalf("observation: %+v, %v", ob, err)
	}
	if _, err := j.Observe(ctx, Observation{CallID: in.CallID, Principal: who, Path: "/nodes/pve1/qemu/100/config", Digest: "after1"}); err != nil {
		t.Errorf("a second observation of one operation: %v", err)
	}
	if _, err := j.Resolve(ctx, Resolution{CallID: "nosuchcall", State: StateApplied, By: who}); !errors.Is(err, ErrNoIntent) {
		t.Errorf("a resolution of no operation: %v", err)
	}
	if _, err := j.Resolve(ctx, Resolution{CallID: in.CallID, State: "maybe", By: who}); !errors.Is(err, ErrInvalid) {
		t.Errorf("a resolution of state maybe: %v", err)
	}
	res, err := j.Resolve(ctx, Resolution{CallID: in.CallID, State: StateApplied, By: who, Reason: "seen in the task index",
		Evidence: []Evidence{{Kind: "task", Says: "qmconfig ended OK", UPID: "UPID:pve1:x"}}})
	if err != nil || res.Kind != KindResolution {
		t.Fatalf("resolution: %+v, %v", res, err)
	}
	exp := time.Now().Add(10 * time.Minute)
	pl, err := j.KeepPlan(ctx, Plan{ID: "pmpl-1", Principal: who, Tool: "proxmox_api_call", PathTemplate: "/nodes/{node}/qemu/{vmid}/config",
		Path: "/nodes/pve1/qemu/100/config", Risk: "write", Decision: Decision{Effect: "allow"},
		Request: PlannedRequest{Method: "PUT", Path: "/nodes/pve1/qemu/100/config", Params: map[string][]string{"memory": {"4096"}}},
		Digest:  "after1", Expires: exp})
	if err != nil || pl.Kind != KindPlan {
		t.Fatalf("plan: %+v, %v", pl, err)
	}
	evs, err := j.PathEvents(ctx, "/nodes/pve1/qemu/100/config", 0, 100)
	if err != nil || len(evs) != 4 { // intent, receipt, two observations (the plan is not a row of the path's history)
		t.Errorf("path events: %d, %v", len(evs), err)
	}
	mine, err := j.KeyEvents(ctx, who.KeyID, 100)
	if err != nil || len(mine) != 6 {
		t.Errorf("key events: %d, %v", len(mine), err)
	}
	if rep, err := j.Verify(ctx); err != nil || rep.Rows != 6 {
		t.Errorf("verify: %+v, %v", rep, err)
	}
}

// The intents of one key's change are found together, in order.
func TestChangeEvents(t *testing.T) {
	ctx := context.Background()
	j := openTest(t, Options{})
	for i, change := range []string{"upgrade", "other", "upgrade", ""} {
		c := intentWithKey("", "", "/nodes/pve1/qemu/100/config")
		c.Detail = &Detail{Change: change}
		if change == "" {
			c.Detail = nil
		}
		if i == 2 {
			c.Principal.KeyID = "bcdefghijklmnopq"
		}
		if _, err := j.Intent(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	evs, err := j.ChangeEvents(ctx, "abcdefghijklmnop", "upgrade")
	if err != nil || len(evs) != 1 {
		t.Fatalf("the change's intents: %d, %v", len(evs), err)
	}
	if _, err := j.ChangeEvents(ctx, "abcdefghijklmnop", "bad name!"); !errors.Is(err, ErrInvalid) {
		t.Errorf("a malformed change name: %v", err)
	}
}

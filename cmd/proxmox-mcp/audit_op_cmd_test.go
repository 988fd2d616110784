package main

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/proxmox-mcp/proxmox-mcp/journal"
)

// TestAuditOperationScripts runs the scripts in testdata/operations: audit
// show, resolve and bundle on journals the test writes through the journal
// package:
//
//	seed-operations FILE   writes the operations of seedOperations
//	give-away DIR UID      (root) gives DIR and every file in it to UID, and
//	                       lets UID traverse $WORK and its parent
//	owner PATH UID         fails unless PATH and everything under it (not
//	                       following links) is UID's
func TestAuditOperationScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir: "testdata/operations",
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"seed-operations": func(ts *testscript.TestScript, neg bool, args []string) {
				if neg || len(args) != 1 {
					ts.Fatalf("usage: seed-operations FILE")
				}
				if err := seedOperations(context.Background(), ts.MkAbs(args[0])); err != nil {
					ts.Fatalf("seed-operations: %v", err)
				}
			},
			"give-away": func(ts *testscript.TestScript, neg bool, args []string) {
				if neg || len(args) < 2 {
					ts.Fatalf("usage: give-away DIR UID [FILE...]")
				}
				uid, err := strconv.Atoi(args[1])
				ts.Check(err)
				dir := ts.MkAbs(args[0])
				ts.Check(filepath.WalkDir(dir, func(p string, _ fs.DirEntry, err error) error {
					if err != nil {
						return err
					}
					if p != dir && len(args) > 2 {
						return nil // only the directory
					}
					return os.Lchown(p, uid, uid)
				}))
				work := ts.Getenv("WORK")
				for _, p := range []string{work, filepath.Dir(work)} {
					ts.Check(os.Chmod(p, 0o711))
				}
			},
			"owner": func(ts *testscript.TestScript, neg bool, args []string) {
				if neg || len(args) != 2 {
					ts.Fatalf("usage: owner PATH UID")
				}
				ts.Check(filepath.WalkDir(ts.MkAbs(args[0]), func(p string, _ fs.DirEntry, err error) error {
					if err != nil {
						return err
					}
					fi, err := os.Lstat(p)
					if err != nil {
						return err
					}
					if got := fi.Sys().(*syscall.Stat_t).Uid; strconv.Itoa(int(got)) != args[1] {
						ts.Fatalf("%s is uid %d's, want %s", p, got, args[1])
					}
					return nil
				}))
			},
		},
		Condition: func(cond string) (bool, error) {
			if cond == "root" {
				return os.Geteuid() == 0, nil
			}
			return false, fmt.Errorf("unknown condition %q", cond)
		},
	})
}

// seedOperations writes a journal of operations at fixed times and ids:
// an edit whose answer was lost (with the configuration it was planned
// against, and a later observation of it), a start a reconciliation
// settled from its task, an intent left open, and a read.
func seedOperations(ctx context.Context, path string) error {
	t0 := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	tick := 0
	now := func() time.Time { tick++; return t0.Add(time.Duration(tick) * time.Second) }
	j, err := journal.Open(ctx, path, journal.Options{Now: now, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		return err
	}
	defer j.Close()
	alice := journal.Principal{KeyID: "aaaaaaaaaaaaaaaa", KeyName: "alice", Profile: "admin", Transport: "loopback", Source: "127.0.0.1:40001"}
	allow := journal.Decision{Effect: "allow", Reasons: []string{}, Policy: "admin", PolicyDigest: "sha256:0f"}
	write := func(id, method, tmpl, path string, args map[string]any) journal.Call {
		return journal.Call{ID: id, Time: now(), Principal: alice, Tool: "proxmox_api_call", Method: method, PathTemplate: tmpl, Path: path,
			Risk: "write", Args: args, Decision: allow, Detail: &journal.Detail{Token: "mcp@pve!admin"}}
	}
	edit := write("op-uncertain", "PUT", "/nodes/{node}/qemu/{vmid}/config", "/nodes/pve1/qemu/100/config",
		map[string]any{"node": "pve1", "vmid": 100, "memory": 4096, "cipassword": "hunter2"})
	edit.PriorDigest, edit.PriorConfig = "3f1c0d", map[string]any{"memory": 2048, "cores": 2}
	edit.Detail.OperationKey, edit.Detail.RequestDigest = "mem-1", "9e"
	upid := "UPID:pve1:00001234:00005678:6740A1B2:qmstart:101:mcp@pve!admin:"
	steps := []func() error{
		func() error {
			in, err := j.Intent(ctx, edit)
			if err != nil {
				return err
			}
			_, err = j.Receipt(ctx, in.CallID, journal.Result{Outcome: journal.OutcomeUncertain, Error: "answer lost: connection reset\nby peer"})
			return err
		},
		func() error {
			_, err := j.Observe(ctx, journal.Observation{Time: now(), Principal: alice, Tool: "proxmox_api_call", PathTemplate: "/nodes/{node}/qemu/{vmid}/config",
				Path: "/nodes/pve1/qemu/100/config", Digest: "9d41", Config: map[string]any{"memory": 4096, "cores": 2}})
			return err
		},
		func() error {
			in, err := j.Intent(ctx, write("op-resolved", "POST", "/nodes/{node}/qemu/{vmid}/status/start", "/nodes/pve1/qemu/101/status/start",
				map[string]any{"node": "pve1", "vmid": 101}))
			if err != nil {
				return err
			}
			if _, err := j.Receipt(ctx, in.CallID, journal.Result{Outcome: journal.OutcomeUncertain, Error: "answer lost"}); err != nil {
				return err
			}
			_, err = j.Resolve(ctx, journal.Resolution{Time: now(), CallID: in.CallID, State: journal.StateApplied,
				By: journal.Principal{KeyID: "daemon", KeyName: "daemon", Transport: "stdio"}, Reason: "its task ended OK",
				Evidence: []journal.Evidence{{Kind: "task", UPID: upid, Says: "task " + upid + " (qmstart of 101) ended OK"}}})
			return err
		},
		func() error {
			_, err := j.Intent(ctx, write("op-open", "POST", "/nodes/{node}/qemu/{vmid}/status/stop", "/nodes/pve1/qemu/101/status/stop",
				map[string]any{"node": "pve1", "vmid": 101}))
			return err
		},
		func() error {
			c := journal.Call{ID: "read-1", Time: now(), Principal: alice, Tool: "proxmox_api_call", Method: "GET",
				PathTemplate: "/nodes/{node}/qemu/{vmid}/config", Path: "/nodes/pve1/qemu/100/config", Risk: "read", Decision: allow}
			_, err := j.Record(ctx, c, journal.Result{Outcome: journal.OutcomeOK, Status: 200})
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

// A person's reason is required, printable and bounded.
func TestCheckReason(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", "required"},
		{"bell\x07", "character U+0007 at 4 is not printable"},
		{"esc\x1b[31m", "character U+001B at 3 is not printable"},
		{"\xff", "not UTF-8"},
		{string(make([]byte, maxReason+1)), "4097 bytes: at most 4096"},
		{"checked qm config 100: memory 4096", ""},
	} {
		err := checkReason(tc.in)
		if (err == nil) != (tc.want == "") || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%q: %v, want %q", tc.in, err, tc.want)
		}
	}
}

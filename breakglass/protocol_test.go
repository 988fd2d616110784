package breakglass

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/proxmox-mcp/proxmox-mcp/pki"
)

// pbed is a repository in a temporary directory, a service over it with a
// clock the test moves, and the principals of a protocol run.
type pbed struct {
	t     testing.TB
	repo  string
	dir   string
	now   time.Time
	mu    sync.Mutex
	svc   *Service
	lvm   *fakeLVM
	alice Principal // requests
	bob   Principal // approves
}

var (
	alice       = Principal{KeyID: "k-alice", Name: "alice", Lineage: "k-alice", Profile: "root"}
	aliceRotate = Principal{KeyID: "k-alice2", Name: "alice-laptop", Lineage: "k-alice", Profile: "root"}
	bob         = Principal{KeyID: "k-bob", Name: "bob", Lineage: "k-bob", Profile: "root"}
	hostRoot    = Principal{Name: "root", Host: true}
)

func newPBed(t testing.TB) *pbed {
	t.Helper()
	base := t.TempDir()
	b := &pbed{t: t, repo: filepath.Join(base, "model-repo"), dir: filepath.Join(base, "helper", "breakglass"),
		now: time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC), lvm: &fakeLVM{lvs: map[string]LV{"vg0/models": {VG: "vg0", Name: "models", UUID: "uuid-1", Size: 1 << 30}}},
		alice: alice, bob: bob}
	if err := os.MkdirAll(filepath.Join(b.repo, "weights"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(base, "helper"), 0o700); err != nil {
		t.Fatal(err)
	}
	b.write("weights/a.bin", "old weights")
	b.write("README", "the models")
	b.open()
	if _, err := pki.CreateSigningKey(filepath.Join(b.dir, KeyFile)); err != nil {
		t.Fatal(err)
	}
	return b
}

// open (re)opens the service, as a helper or runner started afresh does.
func (b *pbed) open() {
	b.t.Helper()
	if b.svc != nil {
		b.svc.Close()
	}
	svc, err := OpenService(ServiceOptions{Dir: b.dir, Now: b.clock,
		Repository: Repository{Paths: []string{b.repo}, Volumes: []string{"vg0/models"}, LVM: b.lvm}})
	if err != nil {
		b.t.Fatal(err)
	}
	b.svc = svc
	b.t.Cleanup(func() { svc.Close() })
}

func (b *pbed) clock() time.Time {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.now
}

func (b *pbed) advance(d time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.now = b.now.Add(d)
}

func (b *pbed) path(rel string) string { return filepath.Join(b.repo, rel) }

func (b *pbed) write(rel, content string) {
	b.t.Helper()
	if err := os.WriteFile(b.path(rel), []byte(content), 0o644); err != nil {
		b.t.Fatal(err)
	}
}

func (b *pbed) read(rel string) string {
	b.t.Helper()
	data, err := os.ReadFile(b.path(rel))
	if err != nil {
		b.t.Fatal(err)
	}
	return string(data)
}

func (b *pbed) stage(content string) (string, int64) {
	b.t.Helper()
	sum := sha256.Sum256([]byte(content))
	sha := hex.EncodeToString(sum[:])
	st, err := b.svc.Stage(context.Background(), sha, int64(len(content)), 0, []byte(content))
	if err != nil || !st.Complete {
		b.t.Fatalf("stage: %+v, %v", st, err)
	}
	return sha, int64(len(content))
}

// approved takes op through the request and both confirmations and
// returns its record, queued for the runner.
func (b *pbed) approved(op Operation) Record {
	b.t.Helper()
	ctx := context.Background()
	rec, err := b.svc.Request(ctx, b.alice, op)
	if err != nil {
		b.t.Fatalf("request %+v: %v", op, err)
	}
	if _, err := b.svc.Confirm(ctx, b.alice, rec.Preview.ID, rec.Phrase()); err != nil {
		b.t.Fatalf("confirm: %v", err)
	}
	rec, err = b.svc.Approve(ctx, b.bob, rec.Preview.ID, rec.Digest)
	if err != nil {
		b.t.Fatalf("approve: %v", err)
	}
	return rec
}

// run runs the queue and returns its events.
func (b *pbed) run() []RunEvent {
	b.t.Helper()
	var evs []RunEvent
	if err := b.svc.RunQueue(context.Background(), func(_ context.Context, ev RunEvent) { evs = append(evs, ev) }); err != nil {
		b.t.Fatal(err)
	}
	return evs
}

func (b *pbed) runOne(want string) RunEvent {
	b.t.Helper()
	evs := b.run()
	if len(evs) != 1 {
		b.t.Fatalf("the runner handled %d files, want 1: %+v", len(evs), evs)
	}
	if evs[0].Result.Outcome != want {
		b.t.Fatalf("outcome %s (%s), want %s", evs[0].Result.Outcome, evs[0].Result.Message, want)
	}
	return evs[0]
}

func (b *pbed) queueFile(id string) string { return filepath.Join(b.dir, QueueDir, id+".json") }

type fakeLVM struct {
	mu      sync.Mutex
	lvs     map[string]LV
	removed []string
}

func (f *fakeLVM) Lookup(_ context.Context, v string) (LV, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	lv, ok := f.lvs[v]
	if !ok {
		return LV{}, targetErr("no logical volume %s", v)
	}
	return lv, nil
}

func (f *fakeLVM) Remove(_ context.Context, v, uuid string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.lvs[v].UUID != uuid {
		return targetErr("%s is another volume", v)
	}
	delete(f.lvs, v)
	f.removed = append(f.removed, v)
	return nil
}

func TestBreakglassEndToEnd(t *testing.T) {
	b := newPBed(t)
	ctx := context.Background()
	sha, size := b.stage("new weights")
	rec, err := b.svc.Request(ctx, alice, Operation{Kind: OpPutFile, Path: b.path("weights/a.bin"), SHA256: sha, Size: size})
	if err != nil {
		t.Fatal(err)
	}
	p := rec.Preview
	if got := rec.State(b.clock()); got != StateAwaitingConfirmation {
		t.Fatalf("state %s", got)
	}
	if !p.Expires.Equal(p.Created.Add(MaxTTL)) || len(p.Targets) != 2 || p.Targets[1].SHA256 == "" || !strings.Contains(p.Changes[0], "replacing 11 bytes") {
		t.Fatalf("preview %+v", p)
	}
	if rec.Digest != p.Digest() {
		t.Fatal("the record's digest is not its preview's")
	}
	// Approval before the requester confirms is refused.
	if _, err := b.svc.Approve(ctx, bob, p.ID, rec.Digest); !errors.Is(err, ErrState) {
		t.Fatalf("approve before confirm: %v", err)
	}
	// A wrong phrase confirms nothing.
	if _, err := b.svc.Confirm(ctx, alice, p.ID, "break glass "+p.ID); err == nil || !strings.Contains(err.Error(), "phrase") {
		t.Fatalf("wrong phrase: %v", err)
	}
	if _, err := b.svc.Confirm(ctx, alice, p.ID, rec.Phrase()); err != nil {
		t.Fatal(err)
	}
	// The approver names the digest it saw.
	if _, err := b.svc.Approve(ctx, bob, p.ID, strings.Repeat("0", 64)); err == nil || !strings.Contains(err.Error(), "digest") {
		t.Fatalf("wrong digest: %v", err)
	}
	if _, err := os.Stat(b.queueFile(p.ID)); !os.IsNotExist(err) {
		t.Fatal("a request was queued before its approval")
	}
	rec, err = b.svc.Approve(ctx, bob, p.ID, rec.Digest)
	if err != nil {
		t.Fatal(err)
	}
	if rec.State(b.clock()) != StateQueued {
		t.Fatalf("state %s", rec.State(b.clock()))
	}
	ev := b.runOne(OutcomeDone)
	if ev.Signed.Approver.KeyID != "k-bob" || ev.Signed.Requester.KeyID != "k-alice" || ev.Result.Digest != rec.Digest {
		t.Fatalf("event %+v", ev)
	}
	if got := b.read("weights/a.bin"); got != "new weights" {
		t.Fatalf("the file holds %q", got)
	}
	rec, err = b.svc.Get(p.ID)
	if err != nil || rec.State(b.clock()) != OutcomeDone || rec.Result.Changes[0] != p.Changes[0] {
		t.Fatalf("record after the run: %+v, %v", rec, err)
	}
	if entries, _ := os.ReadDir(filepath.Join(b.dir, QueueDir)); len(entries) != 0 {
		t.Fatalf("the queue holds %v after the run", entries)
	}
}

func TestBreakglassRequesterIsNeverItsOwnApprover(t *testing.T) {
	b := newPBed(t)
	ctx := context.Background()
	rec, err := b.svc.Request(ctx, alice, Operation{Kind: OpDeleteFile, Path: b.path("README")})
	if err != nil {
		t.Fatal(err)
	}
	id := rec.Preview.ID
	// Somebody else cannot give the requester's confirmation.
	if _, err := b.svc.Confirm(ctx, bob, id, rec.Phrase()); !errors.Is(err, ErrPrincipal) {
		t.Fatalf("bob confirms alice's request: %v", err)
	}
	if _, err := b.svc.Confirm(ctx, alice, id, rec.Phrase()); err != nil {
		t.Fatal(err)
	}
	for _, who := range []Principal{alice, aliceRotate} {
		if _, err := b.svc.Approve(ctx, who, id, rec.Digest); !errors.Is(err, ErrPrincipal) {
			t.Fatalf("%s approves alice's own request: %v", who, err)
		}
	}
	if _, err := os.Stat(b.queueFile(id)); !os.IsNotExist(err) {
		t.Fatal("a self-approved request was queued")
	}
	// Root at the host is another principal.
	if _, err := b.svc.Approve(ctx, hostRoot, id, rec.Digest); err != nil {
		t.Fatal(err)
	}
	b.runOne(OutcomeDone)
	if _, err := os.Stat(b.path("README")); !os.IsNotExist(err) {
		t.Fatal("README is still there")
	}
}

func TestBreakglassReplayIsRefused(t *testing.T) {
	b := newPBed(t)
	rec := b.approved(Operation{Kind: OpDeleteFile, Path: b.path("README")})
	signed, err := os.ReadFile(b.queueFile(rec.Preview.ID))
	if err != nil {
		t.Fatal(err)
	}
	b.runOne(OutcomeDone)
	b.write("README", "written again")
	// The same signed file, put back, after a restart of everything.
	if err := os.WriteFile(b.queueFile(rec.Preview.ID), signed, 0o600); err != nil {
		t.Fatal(err)
	}
	b.open()
	ev := b.runOne(OutcomeRefused)
	if !strings.Contains(ev.Result.Message, "replay") {
		t.Fatalf("replay: %s", ev.Result.Message)
	}
	if b.read("README") != "written again" {
		t.Fatal("the replay deleted the file again")
	}
	got, err := b.svc.Get(rec.Preview.ID)
	if err != nil || got.Result.Outcome != OutcomeDone {
		t.Fatalf("the first run's result was overwritten: %+v, %v", got.Result, err)
	}
}

func TestBreakglassTamperedRequestIsRefused(t *testing.T) {
	fields := map[string]func(*Signed){
		"id":        func(s *Signed) { s.ID = "bg-0000000000000000" },
		"nonce":     func(s *Signed) { s.Nonce = strings.Repeat("1", 64) },
		"digest":    func(s *Signed) { s.Digest = strings.Repeat("2", 64) },
		"operation": func(s *Signed) { s.Operation.Path = strings.Replace(s.Operation.Path, "README", "weights", 1) },
		"targets":   func(s *Signed) { s.Targets[0].Ino++ },
		"requester": func(s *Signed) { s.Requester.KeyID = "k-mallory" },
		"approver":  func(s *Signed) { s.Approver = alice },
		"issued":    func(s *Signed) { s.Issued = s.Issued.Add(-time.Hour) },
		"expires":   func(s *Signed) { s.Expires = s.Expires.Add(time.Hour) },
		"key":       func(s *Signed) { s.Key = "0000000000000000" },
	}
	for name, tamper := range fields {
		t.Run(name, func(t *testing.T) {
			b := newPBed(t)
			rec := b.approved(Operation{Kind: OpDeleteFile, Path: b.path("README")})
			file := b.queueFile(rec.Preview.ID)
			var env Envelope
			data, _ := os.ReadFile(file)
			if err := json.Unmarshal(data, &env); err != nil {
				t.Fatal(err)
			}
			var s Signed
			if err := json.Unmarshal(env.Payload, &s); err != nil {
				t.Fatal(err)
			}
			tamper(&s)
			env.Payload, _ = json.Marshal(s)
			data, _ = json.Marshal(env)
			if err := os.WriteFile(file, data, 0o600); err != nil {
				t.Fatal(err)
			}
			ev := b.runOne(OutcomeRefused)
			if !strings.Contains(ev.Result.Message, "signature") {
				t.Fatalf("tampered %s: %s", name, ev.Result.Message)
			}
			if b.read("README") != "the models" {
				t.Fatal("a tampered request ran")
			}
		})
	}
	t.Run("signature", func(t *testing.T) {
		b := newPBed(t)
		rec := b.approved(Operation{Kind: OpDeleteFile, Path: b.path("README")})
		file := b.queueFile(rec.Preview.ID)
		var env Envelope
		data, _ := os.ReadFile(file)
		json.Unmarshal(data, &env) //nolint:errcheck // checked by the run
		env.Signature[3] ^= 1
		data, _ = json.Marshal(env)
		os.WriteFile(file, data, 0o600) //nolint:errcheck // checked by the run
		if ev := b.runOne(OutcomeRefused); !strings.Contains(ev.Result.Message, "signature") {
			t.Fatal(ev.Result.Message)
		}
	})
}

func TestBreakglassExpiry(t *testing.T) {
	b := newPBed(t)
	ctx := context.Background()
	// Approved in time, run at 5 min + 1 s: refused.
	rec := b.approved(Operation{Kind: OpDeleteFile, Path: b.path("README")})
	b.advance(MaxTTL + time.Second)
	ev := b.runOne(OutcomeRefused)
	if !strings.Contains(ev.Result.Message, "expired") || b.read("README") != "the models" {
		t.Fatalf("expired run: %s", ev.Result.Message)
	}
	if got, _ := b.svc.Get(rec.Preview.ID); got.State(b.clock()) != OutcomeRefused {
		t.Fatalf("state %s", got.State(b.clock()))
	}
	// Confirmed at 5 min + 1 s: refused; at exactly 5 min it still holds.
	r2, err := b.svc.Request(ctx, alice, Operation{Kind: OpDeleteFile, Path: b.path("README")})
	if err != nil {
		t.Fatal(err)
	}
	b.advance(MaxTTL)
	if _, err := b.svc.Confirm(ctx, alice, r2.Preview.ID, r2.Phrase()); err != nil {
		t.Fatalf("confirm at 5 min: %v", err)
	}
	b.advance(time.Second)
	if _, err := b.svc.Approve(ctx, bob, r2.Preview.ID, r2.Digest); !errors.Is(err, ErrState) || !strings.Contains(err.Error(), "expired") {
		t.Fatalf("approve at 5 min + 1 s: %v", err)
	}
}

func TestBreakglassAnotherSigningKeyIsRefused(t *testing.T) {
	b := newPBed(t)
	b.approved(Operation{Kind: OpDeleteFile, Path: b.path("README")})
	if err := pki.RotateSigningKey(filepath.Join(b.dir, KeyFile)); err != nil {
		t.Fatal(err)
	}
	ev := b.runOne(OutcomeRefused)
	if !strings.Contains(ev.Result.Message, "another key") || b.read("README") != "the models" {
		t.Fatalf("signed by the old key: %s", ev.Result.Message)
	}
}

func TestBreakglassConcurrentRequests(t *testing.T) {
	b := newPBed(t)
	ctx := context.Background()
	const n = 8
	for i := range n {
		b.write("f"+string(rune('a'+i)), "x")
	}
	var wg sync.WaitGroup
	recs := make([]Record, n)
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			r, err := b.svc.Request(ctx, alice, Operation{Kind: OpDeleteFile, Path: b.path("f" + string(rune('a'+i)))})
			if err == nil {
				_, err = b.svc.Confirm(ctx, alice, r.Preview.ID, r.Phrase())
			}
			if err == nil {
				r, err = b.svc.Approve(ctx, bob, r.Preview.ID, r.Digest)
			}
			recs[i], errs[i] = r, err
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	evs := b.run()
	if len(evs) != n {
		t.Fatalf("%d runs, want %d", len(evs), n)
	}
	for i, r := range recs {
		got, err := b.svc.Get(r.Preview.ID)
		if err != nil || got.Result == nil || got.Result.Outcome != OutcomeDone || got.Preview.Operation.Path != b.path("f"+string(rune('a'+i))) {
			t.Fatalf("request %d: %+v, %v", i, got, err)
		}
	}
}

func TestBreakglassRestartBetweenSteps(t *testing.T) {
	b := newPBed(t)
	ctx := context.Background()
	rec, err := b.svc.Request(ctx, alice, Operation{Kind: OpDeleteDirectory, Path: b.path("weights")})
	if err != nil {
		t.Fatal(err)
	}
	b.open()
	if _, err := b.svc.Confirm(ctx, alice, rec.Preview.ID, rec.Phrase()); err != nil {
		t.Fatal(err)
	}
	b.open()
	if _, err := b.svc.Approve(ctx, bob, rec.Preview.ID, rec.Digest); err != nil {
		t.Fatal(err)
	}
	b.open()
	b.runOne(OutcomeDone)
	if _, err := os.Stat(b.path("weights")); !os.IsNotExist(err) {
		t.Fatal("weights is still there")
	}
}

func TestBreakglassTargetSwappedAfterApproval(t *testing.T) {
	outside := t.TempDir()
	os.WriteFile(filepath.Join(outside, "victim"), []byte("keep me"), 0o644) //nolint:errcheck // checked below
	cases := map[string]struct {
		op   func(b *pbed) Operation
		swap func(b *pbed)
	}{
		"file replaced by a symlink": {
			op: func(b *pbed) Operation { return Operation{Kind: OpDeleteFile, Path: b.path("weights/a.bin")} },
			swap: func(b *pbed) {
				os.Remove(b.path("weights/a.bin"))
				os.Symlink(filepath.Join(outside, "victim"), b.path("weights/a.bin")) //nolint:errcheck // the run says
			},
		},
		"parent replaced by a symlink": {
			op: func(b *pbed) Operation { return Operation{Kind: OpDeleteFile, Path: b.path("weights/a.bin")} },
			swap: func(b *pbed) {
				os.Rename(b.path("weights"), b.path("old"))                             //nolint:errcheck // the run says
				os.Symlink(outside, b.path("weights"))                                  //nolint:errcheck // the run says
				os.WriteFile(filepath.Join(outside, "a.bin"), []byte("outside"), 0o644) //nolint:errcheck // the run says
			},
		},
		"file replaced by another": {
			op: func(b *pbed) Operation { return Operation{Kind: OpDeleteFile, Path: b.path("README")} },
			swap: func(b *pbed) {
				os.Remove(b.path("README"))
				b.write("README", "the models")
			},
		},
		"directory grew": {
			op:   func(b *pbed) Operation { return Operation{Kind: OpDeleteDirectory, Path: b.path("weights")} },
			swap: func(b *pbed) { b.write("weights/new.bin", "more") },
		},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			b := newPBed(t)
			b.approved(c.op(b))
			c.swap(b)
			ev := b.runOne(OutcomeRefused)
			if !strings.Contains(ev.Result.Message, "nothing was done") && !strings.Contains(ev.Result.Message, "symbolic link") {
				t.Fatalf("message: %s", ev.Result.Message)
			}
			if data, _ := os.ReadFile(filepath.Join(outside, "victim")); string(data) != "keep me" {
				t.Fatal("the runner followed the link")
			}
		})
	}
}

func TestBreakglassRefusesTargetsOutsideTheRepository(t *testing.T) {
	b := newPBed(t)
	ctx := context.Background()
	sibling := b.repo + "-notes"
	os.MkdirAll(sibling, 0o755)                                             //nolint:errcheck // the request says
	os.WriteFile(filepath.Join(sibling, "x"), []byte("notes"), 0o644)       //nolint:errcheck // the request says
	os.Symlink(filepath.Dir(b.repo), filepath.Join(b.repo, "up"))           //nolint:errcheck // the request says
	os.Symlink(filepath.Join(sibling, "x"), filepath.Join(b.repo, "alias")) //nolint:errcheck // the request says
	for _, c := range []struct {
		op   Operation
		want string
	}{
		{Operation{Kind: OpDeleteFile, Path: sibling + "/x"}, "not inside the protected repository"},
		{Operation{Kind: OpDeleteFile, Path: b.repo + "/../model-repo-notes/x"}, "canonical"},
		{Operation{Kind: OpDeleteFile, Path: b.repo + "/weights/./a.bin"}, "canonical"},
		{Operation{Kind: OpDeleteFile, Path: b.repo + "/up/model-repo-notes/x"}, "symbolic link"},
		{Operation{Kind: OpDeleteFile, Path: b.repo + "/alias"}, "symbolic link"},
		{Operation{Kind: OpDeleteDirectory, Path: b.repo}, "repository"},
		{Operation{Kind: OpDeleteDirectory, Path: filepath.Dir(b.repo)}, "above it"},
		{Operation{Kind: OpMove, Path: b.path("README"), To: sibling + "/README"}, "not inside"},
		{Operation{Kind: OpDeleteFile, Path: "relative/README"}, "absolute"},
		{Operation{Kind: OpDeleteVolume, Volume: "vg0/other"}, "not one of the protected volumes"},
		{Operation{Kind: OpDeleteVolume, Volume: "/dev/vg0/models"}, "vg/lv"},
		{Operation{Kind: OpDeleteFile, Path: b.path("README"), Volume: "vg0/models"}, "does not take it"},
		{Operation{Kind: "chmod", Path: b.path("README")}, "not one of"},
		{Operation{Kind: OpPutFile, Path: b.path("new"), SHA256: strings.Repeat("a", 64)}, "no upload"},
	} {
		if _, err := b.svc.Request(ctx, alice, c.op); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.op, err, c.want)
		}
	}
	if entries, _ := os.ReadDir(filepath.Join(b.dir, requestDir)); len(entries) != 0 {
		t.Fatalf("refused requests were kept: %v", entries)
	}
}

func TestBreakglassMissingRepository(t *testing.T) {
	b := newPBed(t)
	if err := os.RemoveAll(b.repo); err != nil {
		t.Fatal(err)
	}
	_, err := b.svc.Request(context.Background(), alice, Operation{Kind: OpDeleteFile, Path: b.path("README")})
	if !errors.Is(err, ErrTarget) || !strings.Contains(err.Error(), "does not exist on this host") {
		t.Fatalf("missing repository: %v", err)
	}
}

func TestBreakglassMoveAndVolume(t *testing.T) {
	b := newPBed(t)
	b.approved(Operation{Kind: OpMove, Path: b.path("README"), To: b.path("weights/README")})
	b.runOne(OutcomeDone)
	if b.read("weights/README") != "the models" {
		t.Fatal("not moved")
	}
	// A volume swapped for another of the same name after approval.
	b.approved(Operation{Kind: OpDeleteVolume, Volume: "vg0/models"})
	b.lvm.lvs["vg0/models"] = LV{VG: "vg0", Name: "models", UUID: "uuid-2", Size: 1 << 30}
	if ev := b.runOne(OutcomeRefused); !strings.Contains(ev.Result.Message, "UUID") {
		t.Fatal(ev.Result.Message)
	}
	b.approved(Operation{Kind: OpDeleteVolume, Volume: "vg0/models"})
	b.runOne(OutcomeDone)
	if len(b.lvm.removed) != 1 {
		t.Fatalf("removed %v", b.lvm.removed)
	}
}

func TestBreakglassDenyWithdrawsTheQueuedRequest(t *testing.T) {
	b := newPBed(t)
	rec := b.approved(Operation{Kind: OpDeleteFile, Path: b.path("README")})
	got, err := b.svc.Deny(context.Background(), hostRoot, rec.Preview.ID, "not today")
	if err != nil || got.State(b.clock()) != StateDenied {
		t.Fatalf("deny: %+v, %v", got, err)
	}
	if evs := b.run(); len(evs) != 0 {
		t.Fatalf("a denied request ran: %+v", evs)
	}
	if b.read("README") != "the models" {
		t.Fatal("README was deleted")
	}
}

func TestStageChecksOrderAndHash(t *testing.T) {
	b := newPBed(t)
	ctx := context.Background()
	content := "0123456789"
	sum := sha256.Sum256([]byte(content))
	sha := hex.EncodeToString(sum[:])
	if _, err := b.svc.Stage(ctx, sha, 10, 4, []byte("4567")); err == nil {
		t.Fatal("a chunk before the first was taken")
	}
	if st, err := b.svc.Stage(ctx, sha, 10, 0, []byte("0123")); err != nil || st.Received != 4 {
		t.Fatalf("%+v %v", st, err)
	}
	if _, err := b.svc.Stage(ctx, sha, 10, 2, []byte("23")); err == nil || !strings.Contains(err.Error(), "next chunk starts there") {
		t.Fatalf("out of order: %v", err)
	}
	if _, err := b.svc.Stage(ctx, sha, 10, 4, []byte("456X89")); err == nil || !strings.Contains(err.Error(), "dropped") {
		t.Fatalf("wrong content: %v", err)
	}
	b.svc.Stage(ctx, sha, 10, 0, []byte("0123")) //nolint:errcheck // checked by the next
	if st, err := b.svc.Stage(ctx, sha, 10, 4, []byte("456789")); err != nil || !st.Complete {
		t.Fatalf("%+v %v", st, err)
	}
}

// TestRunnerLeavesFilesBeingWritten: a runner started by one request
// must not take the temporary file of another the helper is still
// writing (the path unit starts it on any file; atomicfile writes
// ".name.tmp-..." and renames it).
func TestRunnerLeavesFilesBeingWritten(t *testing.T) {
	b := newPBed(t)
	tmp := filepath.Join(b.dir, QueueDir, ".bg-0123456789abcdef.json.tmp-1")
	if err := os.WriteFile(tmp, []byte("half a request"), 0o600); err != nil {
		t.Fatal(err)
	}
	b.approved(Operation{Kind: OpDeleteFile, Path: b.path("README")})
	b.runOne(OutcomeDone)
	if _, err := os.Stat(tmp); err != nil {
		t.Fatalf("the runner took a file being written: %v", err)
	}
}

// TestBreakglassHostApprovalOnly: with protected.approval "host", no key
// approves (so a daemon that has seen two keys cannot take both
// confirmations); root at the host does.
func TestBreakglassHostApprovalOnly(t *testing.T) {
	b := newPBed(t)
	svc, err := OpenService(ServiceOptions{Dir: b.dir, Now: b.clock, HostApprovalOnly: true,
		Repository: Repository{Paths: []string{b.repo}}})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	ctx := context.Background()
	rec, err := svc.Request(ctx, alice, Operation{Kind: OpDeleteFile, Path: b.path("README")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Confirm(ctx, alice, rec.Preview.ID, rec.Phrase()); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Approve(ctx, bob, rec.Preview.ID, rec.Digest); !errors.Is(err, ErrPrincipal) || !strings.Contains(err.Error(), "command line only") {
		t.Fatalf("a key's approval with host approval only: %v", err)
	}
	if _, err := svc.Approve(ctx, hostRoot, rec.Preview.ID, rec.Digest); err != nil {
		t.Fatal(err)
	}
}

// TestSweepKeepsWhatIsLive: a staged upload a live request names stays
// whatever its age; an unused one and an old nonce go after their time.
func TestSweepKeepsWhatIsLive(t *testing.T) {
	b := newPBed(t)
	ctx := context.Background()
	used, _ := b.stage("content a request names")
	unused, _ := b.stage("content nobody names")
	if _, err := b.svc.Request(ctx, alice, Operation{Kind: OpPutFile, Path: b.path("new.bin"), SHA256: used}); err != nil {
		t.Fatal(err)
	}
	nonce := filepath.Join(b.dir, nonceDir, strings.Repeat("c", 64))
	if err := os.WriteFile(nonce, []byte("bg-x"), 0o600); err != nil {
		t.Fatal(err)
	}
	old := b.clock().Add(-NonceTTL - time.Hour)
	for _, p := range []string{filepath.Join(b.dir, stagingDir, used), filepath.Join(b.dir, stagingDir, unused), nonce} {
		if err := os.Chtimes(p, old, old); err != nil {
			t.Fatal(err)
		}
	}
	got, err := b.svc.Sweep(ctx)
	if err != nil || got.Staged != 1 || got.Nonces != 1 {
		t.Fatalf("sweep: %+v, %v", got, err)
	}
	if _, err := os.Stat(filepath.Join(b.dir, stagingDir, used)); err != nil {
		t.Errorf("the live request's content was swept: %v", err)
	}
	if _, err := os.Stat(filepath.Join(b.dir, stagingDir, unused)); !os.IsNotExist(err) {
		t.Errorf("the unused content stayed: %v", err)
	}
}

// TestPhraseCannotBeWorkedOut: the requester's phrase is not made of what
// the answers show (id and digest), so a model that was not given it (the
// person was asked) cannot confirm; a wrong phrase's error does not tell
// the right one. The phrase was once "break glass <id> <digest[:12]>".
func TestPhraseCannotBeWorkedOut(t *testing.T) {
	b := newPBed(t)
	ctx := context.Background()
	rec, err := b.svc.Request(ctx, alice, Operation{Kind: OpDeleteFile, Path: b.path("README")})
	if err != nil {
		t.Fatal(err)
	}
	shown := rec.Shown()
	if shown.Code != "" {
		t.Fatal("a shown record carries the phrase's code")
	}
	for _, guess := range []string{"break glass " + rec.Preview.ID + " " + rec.Digest[:12], "break glass " + rec.Preview.ID, rec.Digest} {
		_, err := b.svc.Confirm(ctx, alice, rec.Preview.ID, guess)
		if err == nil {
			t.Fatalf("%q confirmed the request", guess)
		}
		if strings.Contains(err.Error(), rec.Code) {
			t.Fatalf("the refusal tells the phrase: %v", err)
		}
	}
	if _, err := b.svc.Confirm(ctx, alice, rec.Preview.ID, rec.Phrase()); err != nil {
		t.Fatal(err)
	}
}

// TestLimitsOnWhatWaits: one principal cannot leave more than
// MaxLivePerPrincipal requests waiting, and staging never fills the disk
// the helper's journal is on.
func TestLimitsOnWhatWaits(t *testing.T) {
	b := newPBed(t)
	ctx := context.Background()
	for i := range MaxLivePerPrincipal {
		if _, err := b.svc.Request(ctx, alice, Operation{Kind: OpDeleteFile, Path: b.path("README")}); err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
	}
	if _, err := b.svc.Request(ctx, aliceRotate, Operation{Kind: OpDeleteFile, Path: b.path("README")}); !errors.Is(err, ErrState) || !strings.Contains(err.Error(), "waiting") {
		t.Fatalf("a request past the limit, by a rotation of the same key: %v", err)
	}
	if _, err := b.svc.Request(ctx, bob, Operation{Kind: OpDeleteFile, Path: b.path("README")}); err != nil {
		t.Fatalf("another principal's request: %v", err)
	}
	b.advance(MaxTTL + time.Second)
	if _, err := b.svc.Request(ctx, alice, Operation{Kind: OpDeleteFile, Path: b.path("README")}); err != nil {
		t.Fatalf("a request once the others expired: %v", err)
	}
	full, err := OpenService(ServiceOptions{Dir: b.dir, Now: b.clock, MinFree: 1 << 62, Repository: Repository{Paths: []string{b.repo}}})
	if err != nil {
		t.Fatal(err)
	}
	defer full.Close()
	if _, err := full.Stage(ctx, strings.Repeat("a", 64), 3, 0, []byte("abc")); !errors.Is(err, ErrState) || !strings.Contains(err.Error(), "keeps free") {
		t.Fatalf("staging onto a full disk: %v", err)
	}
}

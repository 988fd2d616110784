package breakglass

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/proxmox-mcp/proxmox-mcp/pve"
	"github.com/proxmox-mcp/proxmox-mcp/pve/sim"
	"github.com/proxmox-mcp/proxmox-mcp/schema"
)

var (
	regOnce sync.Once
	reg91   *schema.Registry
	regErr  error
)

// registry91 parses the real PVE 9.1 schema once per test binary.
func registry91(tb testing.TB) *schema.Registry {
	tb.Helper()
	const path = "../../shared/fixtures/pve-9.1/apidoc.js"
	if _, err := os.Stat(path); os.IsNotExist(err) {
		tb.Skipf("real PVE fixture %s is not here: ../shared/fixtures must sit beside the repository", path)
	}
	regOnce.Do(func() { reg91, regErr = schema.ParseFile(path) })
	if regErr != nil {
		tb.Fatal(regErr)
	}
	return reg91
}

// simAPI calls the simulator in memory (no sockets, so it works inside a
// synctest bubble) with one token, as a *pve.Client would, and counts the
// reads.
type simAPI struct {
	h    http.Handler
	auth string
	gets atomic.Int64
	// loads counts GET /storage: one per inventory read.
	loads atomic.Int64
	fails atomic.Bool // every request fails, as when pveproxy is down
}

func (a *simAPI) Get(ctx context.Context, path string, q url.Values, out any) error {
	a.gets.Add(1)
	if path == "/storage" {
		a.loads.Add(1)
	}
	_, err := a.do(ctx, http.MethodGet, path, q, out)
	return err
}

func (a *simAPI) do(ctx context.Context, method, path string, params url.Values, out any) (json.RawMessage, error) {
	if a.fails.Load() {
		return nil, fmt.Errorf("pve: %s %s: connection refused", method, path)
	}
	target := sim.APIPrefix + path
	var body io.Reader
	if method == http.MethodGet || method == http.MethodDelete {
		if len(params) > 0 {
			target += "?" + params.Encode()
		}
	} else {
		body = strings.NewReader(params.Encode())
	}
	req := httptest.NewRequestWithContext(ctx, method, target, body)
	req.Header.Set("Authorization", a.auth)
	if body != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	rec := httptest.NewRecorder()
	a.h.ServeHTTP(rec, req)
	var env struct {
		Data    json.RawMessage `json:"data"`
		Message string          `json:"message"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &env); err != nil && rec.Code == http.StatusOK {
		return nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	if rec.Code != http.StatusOK {
		return nil, &pve.APIError{Method: method, Path: path, Status: rec.Code, Message: strings.TrimSpace(env.Message)}
	}
	if out != nil {
		return env.Data, json.Unmarshal(env.Data, out)
	}
	return env.Data, nil
}

// bed is the simulator with the model repository of the tests on pve1:
// the volume group models on /dev/sda with an lvm storage of the same
// name; /dev/sdb with partition sdb1 mounted at /mnt/pve/models-dir by a
// PVE directory storage of that name; VM 900 (llm01) with scsi0 on
// local-lvm and scsi1 = models:vm-900-disk-0, the LV models/vm-900-disk-0.
type bed struct {
	t     testing.TB
	sim   *sim.Sim
	clock *sim.ManualClock
	reg   *schema.Registry
	root  *simAPI // root@pam!sim, to set the scene
	ro    *simAPI // mcp@pve!read-only, the guard's reader
}

func newBed(t testing.TB) *bed {
	t.Helper()
	reg := registry91(t)
	clock := sim.NewManualClock(time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC))
	s, err := sim.New(sim.Options{Registry: reg, Clock: clock, Seed: 9})
	if err != nil {
		t.Fatal(err)
	}
	tok := func(id string) *simAPI {
		tk, ok := s.Token(id)
		if !ok {
			t.Fatalf("no token %s", id)
		}
		return &simAPI{h: s, auth: tk.Header()}
	}
	b := &bed{t: t, sim: s, clock: clock, reg: reg, root: tok("root@pam!sim"), ro: tok("mcp@pve!read-only")}
	b.run("POST", "/nodes/pve1/disks/lvm", url.Values{"name": {"models"}, "device": {"/dev/sda"}, "add_storage": {"1"}})
	b.run("POST", "/nodes/pve1/disks/directory", url.Values{"name": {"models-dir"}, "device": {"/dev/sdb"}, "add_storage": {"1"}})
	b.run("POST", "/nodes/pve1/qemu", url.Values{"vmid": {"900"}, "name": {"llm01"}, "scsi0": {"local-lvm:8"}, "scsi1": {"models:32"}})
	var conf map[string]any
	if err := b.root.Get(context.Background(), "/nodes/pve1/qemu/900/config", nil, &conf); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(fmt.Sprint(conf["scsi1"]), "models:vm-900-disk-0,") {
		t.Fatalf("VM 900's scsi1 is %v", conf["scsi1"])
	}
	return b
}

// run makes a call as root and, for a task, lets it finish.
func (b *bed) run(method, path string, form url.Values) {
	b.t.Helper()
	data, err := b.root.do(context.Background(), method, path, form, nil)
	if err != nil {
		b.t.Fatalf("%s %s: %v", method, path, err)
	}
	var upid string
	if json.Unmarshal(data, &upid) != nil || !pve.IsUPID(upid) {
		return
	}
	b.clock.Advance(time.Minute)
	u, _ := pve.ParseUPID(upid)
	var st pve.TaskStatus
	if err := b.root.Get(context.Background(), pve.Path("nodes", u.Node, "tasks", upid, "status"), nil, &st); err != nil {
		b.t.Fatal(err)
	}
	if st.ExitStatus != "OK" {
		b.t.Fatalf("%s %s: task %s ended %q", method, path, upid, st.ExitStatus)
	}
}

// fakeFS resolves paths like ResolvePath over a table of symlinks instead
// of the test machine's filesystem.
type fakeFS map[string]string

func (f fakeFS) resolve(p string) (string, error) {
	if isHidden(p) {
		return "", fmt.Errorf("%s: %w", p, errHidden)
	}
	for link, target := range f {
		if within(p, link) {
			out := target + strings.TrimPrefix(p, link)
			if isHidden(out) {
				return "", fmt.Errorf("%s leads to %s: %w", p, out, errHidden)
			}
			return out, nil
		}
	}
	return p, nil
}

// repoFS has a symlink to the repository and one into /tmp.
var repoFS = fakeFS{"/srv/models-link": "/mnt/pve/models-dir", "/srv/scratch": "/tmp/scratch"}

// guard builds a guard over the bed with the read-only token.
func (b *bed) guard(p Protected) *Guard {
	b.t.Helper()
	g, err := NewGuard(p, Options{PVE: b.ro, ResolvePath: repoFS.resolve})
	if err != nil {
		b.t.Fatal(err)
	}
	return g
}

// check decides one call: the endpoint is looked up in the real schema
// and the concrete path matched against it, as tools does.
func (b *bed) check(g *Guard, method, concrete string, args map[string]any) policyGuard {
	b.t.Helper()
	ep, vars, err := b.reg.Match(method, concrete)
	if err != nil {
		b.t.Fatalf("%s %s: %v", method, concrete, err)
	}
	return policyGuard{g.Check(context.Background(), ep, vars, args), ep, vars}
}

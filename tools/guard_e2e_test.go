package tools

import (
	"context"
	"crypto/rand"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/proxmox-mcp/proxmox-mcp/breakglass"
	"github.com/proxmox-mcp/proxmox-mcp/policy"
	"github.com/proxmox-mcp/proxmox-mcp/pve"
	"github.com/proxmox-mcp/proxmox-mcp/pve/sim"
)

// newGuardedHarness is a tool server on the simulator with the real
// protected-repository guard, which reads PVE's view with the read-only
// tier's token. The simulator holds the model repository: the volume group
// models on /dev/sda (an lvm storage of that name) and VM 900 whose scsi1
// is its LV models/vm-900-disk-0, the protected volume.
func newGuardedHarness(t *testing.T) (*harness, *pve.Client) {
	t.Helper()
	reg := realRegistry(t)
	clock := sim.NewManualClock(time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC))
	s, err := sim.New(sim.Options{Registry: reg, Seed: 3, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewUnstartedServer(s)
	ts.EnableHTTP2 = false
	ts.StartTLS()
	t.Cleanup(ts.Close)
	fp := pve.Fingerprint(ts.Certificate().Raw)
	tok, _ := s.Token("root@pam!sim")
	root, err := pve.New(pve.Config{BaseURL: ts.URL + sim.APIPrefix, Token: pve.Token{ID: tok.ID, Secret: pve.Secret(tok.Secret)},
		TLS: pve.TLSTrust{Fingerprints: []string{fp}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, step := range []struct {
		path string
		form url.Values
	}{
		{"/nodes/pve1/disks/lvm", url.Values{"name": {"models"}, "device": {"/dev/sda"}, "add_storage": {"1"}}},
		{"/nodes/pve1/qemu", url.Values{"vmid": {"900"}, "name": {"llm01"}, "scsi0": {"local-lvm:8"}, "scsi1": {"models:32"}}},
	} {
		resp, err := root.Do(context.Background(), "POST", step.path, step.form)
		if err != nil {
			t.Fatalf("POST %s: %v", step.path, err)
		}
		upid, _ := resp.String()
		clock.Advance(time.Minute)
		var st pve.TaskStatus
		if err := root.Get(context.Background(), pve.Path("nodes", "pve1", "tasks", upid, "status"), nil, &st); err != nil || st.ExitStatus != "OK" {
			t.Fatalf("POST %s: task %+v, %v", step.path, st, err)
		}
	}
	tiers := &simTiers{t: t, sim: s, url: ts.URL + sim.APIPrefix, fp: fp, clients: map[Tier]*pve.Client{}}
	ro, err := tiers.Client(TierReadOnly)
	if err != nil {
		t.Fatal(err)
	}
	guard, err := breakglass.NewGuard(breakglass.Protected{Volumes: []string{"models/vm-900-disk-0"}}, breakglass.Options{PVE: ro})
	if err != nil {
		t.Fatal(err)
	}
	store, err := policy.NewStore(t.TempDir(), time.Now)
	if err != nil {
		t.Fatal(err)
	}
	engine, err := policy.NewEngine(context.Background(), store, engineOptions(t, policy.EngineOptions{}))
	if err != nil {
		t.Fatal(err)
	}
	key := make([]byte, 32)
	rand.Read(key) //nolint:errcheck // crypto/rand does not fail
	audit := newRecorder()
	srv, err := New(Options{
		Name: "proxmox-mcp", Version: "test", Mode: ModeCompact,
		Registry: staticRegistry{reg}, Policy: engine, Audit: audit, Guard: guard, PVE: tiers,
		Switches: Switches{AllowMutations: true}, ConfirmKey: key,
	})
	if err != nil {
		t.Fatal(err)
	}
	return &harness{t: t, srv: srv, sim: s, clock: clock, audit: audit, engine: engine, store: store}, root
}

// Through the tools, with the real guard and the real policies: an admin
// key's calls that reach the protected LV by another name (the VM that
// owns it, the volume group that holds it, its volume id on the lvm
// storage) are refused and nothing reaches PVE; the same key still
// changes an unrelated guest. Before the guard derived these references,
// the admin profile allowed every one of them.
func TestProtectedRepositoryThroughTheTools(t *testing.T) {
	h, root := newGuardedHarness(t)
	c, ctx := h.as("admin")
	for _, tc := range []struct {
		method, path string
		params       map[string]any
		want         string
	}{
		{"DELETE", "/nodes/pve1/qemu/900", map[string]any{"purge": true, "destroy-unreferenced-disks": true}, "vm 900 scsi1 holds models:vm-900-disk-0"},
		{"PUT", "/nodes/pve1/qemu/900/config", map[string]any{"delete": "scsi1"}, "vm 900 scsi1 holds"},
		{"DELETE", "/nodes/pve1/disks/lvm/models", map[string]any{"cleanup-disks": true}, "volume group models (node pve1), which holds protected LV models/vm-900-disk-0"},
		{"DELETE", "/nodes/pve1/storage/models/content/" + url.PathEscape("models:vm-900-disk-0"), nil, "protected LV models/vm-900-disk-0"},
	} {
		args := map[string]any{"method": tc.method, "path": tc.path}
		if tc.params != nil {
			args["params"] = tc.params
		}
		res, _ := call(t, c, ctx, ToolCall, args)
		if !res.IsError || !strings.Contains(text(res), "protected repository") || !strings.Contains(text(res), tc.want) {
			t.Errorf("%s %s: %s, want a refusal naming %q", tc.method, tc.path, text(res), tc.want)
		}
	}
	var conf map[string]any
	if err := root.Get(context.Background(), "/nodes/pve1/qemu/900/config", nil, &conf); err != nil || !strings.HasPrefix(conf["scsi1"].(string), "models:vm-900-disk-0") {
		t.Errorf("VM 900 after the refusals: %v, %v", conf, err)
	}
	res, _ := call(t, c, ctx, ToolCall, map[string]any{"method": "PUT", "path": "/nodes/pve1/qemu/101/config", "params": map[string]any{"memory": 4096}})
	if res.IsError {
		t.Errorf("an unrelated config change: %s", text(res))
	}
}

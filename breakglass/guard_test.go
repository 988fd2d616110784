package breakglass

import (
	"context"
	"net/url"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/proxmox-mcp/proxmox-mcp/policy"
	"github.com/proxmox-mcp/proxmox-mcp/schema"
)

// policyGuard is a guard result with the call it was for.
type policyGuard struct {
	policy.Guard
	ep   *schema.Endpoint
	vars map[string]string
}

// has reports whether some hit has the kind and a value containing each
// of the words.
func (r policyGuard) has(kind string, words ...string) bool {
	for _, h := range r.Hits {
		if h.Kind != kind {
			continue
		}
		all := true
		for _, w := range words {
			all = all && strings.Contains(h.Value, w)
		}
		if all {
			return true
		}
	}
	return false
}

// repository is what the regression tests protect: the LV behind VM 900's
// scsi1, the disk of the directory storage and that storage's path.
var repository = Protected{
	Volumes: []string{"models/vm-900-disk-0"},
	Devices: []string{"/dev/sdb"},
	Paths:   []string{"/mnt/pve/models-dir"},
}

// The findings of the boundary review: each call reaches the protected
// repository by a name the old guard was not given (it matched only the
// configured strings), so it found nothing and the admin profile allowed
// it. Each case fails on the old guard (no hits) and is a hit now.
func TestGuardDerivedReferences(t *testing.T) {
	b := newBed(t)
	g := b.guard(repository)
	for _, tc := range []struct {
		name     string
		method   string
		path     string
		args     map[string]any
		kind     string
		contains []string
	}{
		{"destroying the VM that owns the protected LV, purging its disks",
			"DELETE", "/nodes/pve1/qemu/900", map[string]any{"purge": true, "destroy-unreferenced-disks": true},
			"guest", []string{"vm 900 scsi1 holds", "models:vm-900-disk-0"}},
		{"unlinking the disk", "PUT", "/nodes/pve1/qemu/900/unlink", map[string]any{"idlist": "scsi1", "force": true},
			"guest", []string{"vm 900 scsi1 holds"}},
		{"moving the disk away and deleting the source", "POST", "/nodes/pve1/qemu/900/move_disk",
			map[string]any{"disk": "scsi1", "storage": "local-lvm", "delete": true}, "guest", []string{"vm 900 scsi1 holds"}},
		{"detaching the disk from the config", "PUT", "/nodes/pve1/qemu/900/config", map[string]any{"delete": "scsi1"},
			"guest", []string{"vm 900 scsi1 holds"}},
		{"removing the volume group that holds the LV, wiping its disks", "DELETE", "/nodes/pve1/disks/lvm/models",
			map[string]any{"cleanup-disks": true, "cleanup-config": true}, "volume-group", []string{"volume group models (node pve1), which holds protected LV models/vm-900-disk-0"}},
		{"wiping a partition of the protected disk", "PUT", "/nodes/pve1/disks/wipedisk", map[string]any{"disk": "/dev/sdb1"},
			"device", []string{"/dev/sdb1, a partition of protected device /dev/sdb"}},
		{"deleting content of the storage whose path is protected", "DELETE",
			"/nodes/pve1/storage/models-dir/content/" + url.PathEscape("models-dir:iso/debian.iso"), nil,
			"path", []string{"storage models-dir, whose path /mnt/pve/models-dir is at or under protected path /mnt/pve/models-dir"}},
		{"deleting the VM's other disk (its volume id names VM 900)", "DELETE",
			"/nodes/pve1/storage/local-lvm/content/" + url.PathEscape("local-lvm:vm-900-disk-0"), nil,
			"guest", []string{"vm 900 scsi1 holds"}},
		{"the protected LV under another storage's volume id", "PUT", "/nodes/pve1/qemu/100/config",
			map[string]any{"scsi5": "models:vm-900-disk-0,size=32G"}, "volume", []string{"models:vm-900-disk-0"}},
		{"the LV as a device path", "PUT", "/nodes/pve1/qemu/100/config", map[string]any{"scsi5": "/dev/models/vm-900-disk-0"},
			"device", []string{"protected LV models/vm-900-disk-0"}},
		{"the LV through device mapper", "PUT", "/nodes/pve1/qemu/100/config", map[string]any{"virtio3": "/dev/mapper/models-vm--900--disk--0"},
			"device", []string{"protected LV models/vm-900-disk-0"}},
		{"the disk by its by-id link", "PUT", "/nodes/pve1/qemu/100/config",
			map[string]any{"sata1": "/dev/disk/by-id/ata-Samsung_SSD_870_EVO_2TB_S6PNNS0T500101"}, "device", []string{"/dev/disk/by-id/ata-Samsung_SSD_870_EVO_2TB_S6PNNS0T500101, protected device /dev/sdb (node pve1)"}},
		{"a partition by its by-id link", "PUT", "/nodes/pve1/qemu/100/config",
			map[string]any{"sata1": "/dev/disk/by-id/ata-Samsung_SSD_870_EVO_2TB_S6PNNS0T500101-part1"}, "device", []string{"/dev/sdb1, a partition of protected device /dev/sdb"}},
		{"the disk by its WWN", "PUT", "/nodes/pve1/disks/wipedisk", map[string]any{"disk": "/dev/disk/by-id/wwn-0x5002538f42000001"},
			"device", []string{"protected device /dev/sdb"}},
		{"a bind mount through a symlink to the repository", "PUT", "/nodes/pve1/lxc/200/config",
			map[string]any{"mp1": "/srv/models-link/llama,mp=/models"}, "path", []string{"/mnt/pve/models-dir/llama, at or under protected path /mnt/pve/models-dir"}},
		{"a bind mount of the host's root", "PUT", "/nodes/pve1/lxc/200/config", map[string]any{"mp1": "/,mp=/host"},
			"path", []string{"/, above protected path /mnt/pve/models-dir"}},
		{"a storage created under the protected path", "POST", "/storage",
			map[string]any{"storage": "sneaky", "type": "dir", "path": "/mnt/pve/models-dir/sub", "content": "images"},
			"path", []string{"/mnt/pve/models-dir/sub, at or under protected path"}},
		{"a storage created over the volume group", "POST", "/storage",
			map[string]any{"storage": "sneaky", "type": "lvm", "vgname": "models", "content": "images"},
			"volume-group", []string{"volume group models (node pve1), which holds protected LV"}},
		{"backing up every guest of the node", "POST", "/nodes/pve1/vzdump", map[string]any{"all": true, "storage": "backup"},
			"guest", []string{"vm 900 scsi1 holds"}},
		{"stopping every guest of the node", "POST", "/nodes/pve1/stopall", nil, "guest", []string{"vm 900 scsi1 holds"}},
		{"a HA resource of the guest", "POST", "/cluster/ha/resources", map[string]any{"sid": "vm:900"}, "guest", []string{"vm 900"}},
		{"the directory storage's mount unit", "DELETE", "/nodes/pve1/disks/directory/models-dir", map[string]any{"cleanup-disks": true},
			"path", []string{"/mnt/pve/models-dir, at or under protected path"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := b.check(g, tc.method, tc.path, tc.args)
			if !got.Evaluated || !got.has(tc.kind, tc.contains...) {
				t.Errorf("%s %s %v: hits %+v, want a %s hit with %q", tc.method, tc.path, tc.args, got.Hits, tc.kind, tc.contains)
			}
		})
	}
}

// What the guard cannot resolve in PVE's view is a hit of kind
// "unresolved": a device PVE does not list, a path the daemon's sandbox
// hides, a symlink into one.
func TestGuardRefusesWhatItCannotResolve(t *testing.T) {
	b := newBed(t)
	g := b.guard(repository)
	for _, tc := range []struct {
		name     string
		args     map[string]any
		contains string
	}{
		{"a device-mapper node", map[string]any{"scsi5": "/dev/dm-7"}, "device /dev/dm-7, which is not in PVE's disk list or LVM of node pve1"},
		{"an unknown by-id link", map[string]any{"scsi5": "/dev/disk/by-id/ata-Other_Disk_123"}, "/dev/disk/by-id/ata-Other_Disk_123, which is not in PVE's disk list"},
		{"a by-uuid link", map[string]any{"scsi5": "/dev/disk/by-uuid/0b1c2d3e"}, "by-uuid/0b1c2d3e, which is not in PVE's disk list"},
		{"an LV of an unknown volume group", map[string]any{"scsi5": "/dev/other/lv"}, "/dev/other/lv, which is not in PVE's disk list"},
		{"a path under /tmp", map[string]any{"args": "-drive file=/tmp/x.img,if=virtio"}, "path /tmp/x.img, which cannot be resolved in PVE's view (/tmp/x.img: the daemon's sandbox hides it)"},
		{"a path under /home", map[string]any{"scsi5": "/home/someone/disk.img"}, "path /home/someone/disk.img, which cannot be resolved"},
		{"a symlink into /tmp", map[string]any{"scsi5": "/srv/scratch/disk.img"}, "leads to /tmp/scratch/disk.img"},
		{"a magic link of /proc", map[string]any{"scsi5": "/proc/1/root/mnt/pve/models-dir/x.img"}, "path /proc/1/root/mnt/pve/models-dir/x.img, which cannot be resolved"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := b.check(g, "PUT", "/nodes/pve1/qemu/100/config", tc.args)
			if !got.has("unresolved", tc.contains) {
				t.Errorf("hits %+v, want an unresolved hit with %q", got.Hits, tc.contains)
			}
		})
	}
	// Kernel names of character devices cannot be block devices.
	if got := b.check(g, "PUT", "/nodes/pve1/qemu/100/config", map[string]any{"serial0": "/dev/ttyS0", "memory": 4096}); len(got.Hits) != 0 {
		t.Errorf("a serial port: hits %+v", got.Hits)
	}
}

// Calls that touch nothing protected stay free, so the guard does not
// refuse the host's ordinary work.
func TestGuardLetsUnrelatedCallsThrough(t *testing.T) {
	b := newBed(t)
	g := b.guard(repository)
	for _, tc := range []struct {
		method, path string
		args         map[string]any
	}{
		{"PUT", "/nodes/pve1/qemu/100/config", map[string]any{"memory": 4096, "scsi2": "local-lvm:4", "net1": "virtio,bridge=vmbr0"}},
		{"DELETE", "/nodes/pve1/qemu/101", map[string]any{"purge": true}},
		{"POST", "/nodes/pve1/qemu/100/status/stop", nil},
		{"POST", "/nodes/pve1/qemu/100/move_disk", map[string]any{"disk": "scsi0", "storage": "local-lvm", "delete": true}},
		{"DELETE", "/nodes/pve1/disks/lvmthin/data", map[string]any{"volume-group": "pve"}},
		{"PUT", "/nodes/pve1/disks/wipedisk", map[string]any{"disk": "/dev/nvme0n1p1"}},
		{"DELETE", "/nodes/pve1/storage/local/content/" + url.PathEscape("local:iso/debian-12.8.0-amd64-netinst.iso"), nil},
		{"POST", "/nodes/pve1/vzdump", map[string]any{"vmid": "100,101", "storage": "backup"}},
		{"PUT", "/access/acl", map[string]any{"path": "/", "roles": "PVEAuditor", "users": "someone@pve"}},
		{"POST", "/nodes/pve1/lxc/200/snapshot", map[string]any{"snapname": "before"}},
	} {
		if got := b.check(g, tc.method, tc.path, tc.args); !got.Evaluated || len(got.Hits) != 0 {
			t.Errorf("%s %s %v: hits %+v, want none", tc.method, tc.path, tc.args, got.Hits)
		}
	}
}

// The guest a call targets is read at decision time, not from the
// inventory: a protected disk attached since the inventory was read is
// seen at once.
func TestGuardReadsTargetedGuestNow(t *testing.T) {
	b := newBed(t)
	g, err := NewGuard(repository, Options{PVE: b.ro, ResolvePath: repoFS.resolve, MaxAge: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if got := b.check(g, "POST", "/nodes/pve1/qemu/100/status/stop", nil); len(got.Hits) != 0 {
		t.Fatalf("before: %+v", got.Hits)
	}
	b.run("PUT", "/nodes/pve1/qemu/100/config", url.Values{"scsi3": {"models:vm-900-disk-0"}})
	got := b.check(g, "POST", "/nodes/pve1/qemu/100/status/stop", nil)
	if !got.has("guest", "vm 100 scsi3 holds", "models:vm-900-disk-0") {
		t.Errorf("after attaching the LV: %+v", got.Hits)
	}
	// A snapshot keeps the reference after the disk is detached.
	b.run("POST", "/nodes/pve1/qemu/100/snapshot", url.Values{"snapname": {"with-model"}})
	b.run("PUT", "/nodes/pve1/qemu/100/config", url.Values{"delete": {"scsi3,unused0"}})
	got = b.check(g, "POST", "/nodes/pve1/qemu/100/status/stop", nil)
	if !got.has("guest", "vm 100 scsi3 (snapshot with-model) holds") {
		t.Errorf("after detaching, with the snapshot: %+v", got.Hits)
	}
}

// Reads need nothing from PVE; with nothing protected the guard reads
// nothing at all.
func TestGuardReadsAndEmptyAreFree(t *testing.T) {
	b := newBed(t)
	g := b.guard(repository)
	if got := b.check(g, "GET", "/nodes/pve1/qemu/900/config", nil); !got.Evaluated || len(got.Hits) != 0 || b.ro.gets.Load() != 0 {
		t.Errorf("a read: %+v after %d reads", got, b.ro.gets.Load())
	}
	empty := b.guard(Protected{})
	if got := b.check(empty, "DELETE", "/nodes/pve1/qemu/900", map[string]any{"purge": 1}); !got.Evaluated || len(got.Hits) != 0 || b.ro.gets.Load() != 0 || !empty.Empty() {
		t.Errorf("nothing protected: %+v after %d reads", got, b.ro.gets.Load())
	}
}

// Without PVE's view nothing can be decided: an unreadable inventory, no
// token, or a protected name PVE does not know refuse every call that is
// not a read.
func TestGuardFailsClosed(t *testing.T) {
	b := newBed(t)
	down := &simAPI{h: b.sim, auth: b.ro.auth}
	down.fails.Store(true)
	for _, tc := range []struct {
		name     string
		g        func() *Guard
		contains string
	}{
		{"PVE unreachable", func() *Guard {
			g, _ := NewGuard(repository, Options{PVE: down, ResolvePath: repoFS.resolve})
			return g
		}, "inventory cannot be read from PVE: pve: GET /storage: connection refused"},
		{"no token", func() *Guard {
			g, _ := NewGuard(repository, Options{ResolvePath: repoFS.resolve})
			return g
		}, "no PVE token is configured"},
		{"a protected device no node has", func() *Guard {
			return b.guard(Protected{Devices: []string{"/dev/disk/by-id/ata-Gone_1"}})
		}, "protected device /dev/disk/by-id/ata-Gone_1 is not in PVE's disk list of any node"},
		{"a protected LV of no volume group", func() *Guard { return b.guard(Protected{Volumes: []string{"gone/repo"}}) },
			"the volume group of protected LV gone/repo is on no node"},
		{"a protected volume on no storage", func() *Guard { return b.guard(Protected{Volumes: []string{"gone:vm-900-disk-0"}}) },
			"on storage gone, which is not defined"},
		{"a protected path the sandbox hides", func() *Guard { return b.guard(Protected{Paths: []string{"/home/models"}}) },
			"protected path /home/models cannot be resolved"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := b.check(tc.g(), "POST", "/nodes/pve1/qemu/100/status/start", nil)
			if !got.has("unresolved", tc.contains) {
				t.Errorf("hits %+v, want an unresolved hit with %q", got.Hits, tc.contains)
			}
		})
	}
	// A GET still needs nothing.
	g, _ := NewGuard(repository, Options{PVE: down})
	if got := b.check(g, "GET", "/nodes/pve1/qemu/100/config", nil); len(got.Hits) != 0 {
		t.Errorf("a read with PVE down: %+v", got.Hits)
	}
}

// Validated arguments are typed (bools, numbers, lists); the guard reads
// them as their wire form.
func TestGuardTypedArguments(t *testing.T) {
	b := newBed(t)
	g := b.guard(repository)
	got := b.check(g, "POST", "/nodes/pve1/vzdump", map[string]any{"vmid": "100,900", "storage": "backup", "protected": true})
	if !got.has("guest", "vm 900") {
		t.Errorf("vmid list: %+v", got.Hits)
	}
	got = b.check(g, "POST", "/cluster/bulk-action/guest/shutdown", map[string]any{"vms": []any{float64(100), float64(900)}})
	if !got.has("guest", "vm 900") {
		t.Errorf("vms as numbers: %+v", got.Hits)
	}
	got = b.check(g, "POST", "/nodes/pve1/qemu/100/config", map[string]any{"scsi5": "models:vm-900-disk-0", "scsihw": "virtio-scsi-single", "agent": true})
	if !got.has("volume", "models:vm-900-disk-0") {
		t.Errorf("typed config: %+v", got.Hits)
	}
}

// An operator key used to get "confirm (approver self)" for a rollback or
// stop of the guest whose disk is protected (the old guard saw no hit), so
// it could confirm its own call. Now the guard hits and the operator
// profile denies; the same calls on an unprotected guest still ask for
// the confirmation.
func TestOperatorCannotConfirmProtectedGuest(t *testing.T) {
	b := newBed(t)
	g := b.guard(repository)
	ctx := context.Background()
	op, err := policy.CompileBuiltin(ctx, policy.Operator)
	if err != nil {
		t.Fatal(err)
	}
	decide := func(method, path string, args map[string]any) policy.Decision {
		got := b.check(g, method, path, args)
		in := &policy.Input{
			Principal: policy.Principal{KeyID: "opkey", Profile: policy.Operator, Transport: "loopback"},
			Tool:      got.ep.Tool, Method: got.ep.Method, Path: got.ep.Path, Params: args, Risk: got.ep.CallRisk(args),
			Endpoint: policy.EndpointFacts{Risk: got.ep.Risk}, Guard: got.Guard, Time: time.Date(2026, 11, 29, 11, 0, 0, 0, time.UTC),
		}
		return op.Decide(ctx, in, 0)
	}
	for _, path := range []string{"/nodes/pve1/qemu/900/status/stop", "/nodes/pve1/qemu/900/snapshot/before/rollback"} {
		if d := decide("POST", path, nil); d.Effect != policy.Deny || !strings.Contains(strings.Join(d.Reasons, " "), "vm 900 scsi1 holds") {
			t.Errorf("%s: %+v, want deny naming the slot", path, d)
		}
	}
	if d := decide("POST", "/nodes/pve1/qemu/100/status/stop", nil); d.Effect != policy.Confirm {
		t.Errorf("stop of VM 100: %+v, want confirm", d)
	}
}

// The inventory is read again once it is older than MaxAge, and callers
// that need it at the same time share one read.
func TestGuardInventoryAgeAndSingleFlight(t *testing.T) {
	b := newBed(t)
	synctest.Test(t, func(t *testing.T) {
		g := b.guard(repository)
		stop := func() {
			if got := b.check(g, "POST", "/nodes/pve1/qemu/900/status/stop", nil); !got.has("guest", "vm 900 scsi1") {
				t.Errorf("stop of VM 900: %+v", got.Hits)
			}
		}
		stop()
		stop()
		if n := b.ro.loads.Load(); n != 1 {
			t.Fatalf("%d inventory reads within MaxAge, want 1", n)
		}
		time.Sleep(DefaultMaxAge)
		stop()
		if n := b.ro.loads.Load(); n != 2 {
			t.Fatalf("%d inventory reads after MaxAge, want 2", n)
		}
		time.Sleep(DefaultMaxAge)
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(stop)
		}
		wg.Wait()
		if n := b.ro.loads.Load(); n != 3 {
			t.Fatalf("%d inventory reads after 8 concurrent calls, want 3", n)
		}
	})
}

// A secret parameter is never inspected: a path-shaped line of a PEM
// private key would otherwise be quoted in a hit, and hits are journalled.
func TestGuardSkipsSecrets(t *testing.T) {
	b := newBed(t)
	g := b.guard(repository)
	pem := "-----BEGIN PRIVATE KEY-----\n/tmp/looks+like+a+path\n-----END PRIVATE KEY-----"
	got := b.check(g, "POST", "/nodes/pve1/certificates/custom", map[string]any{"certificates": "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----", "key": pem})
	for _, h := range got.Hits {
		if strings.Contains(h.Value, "looks+like") {
			t.Errorf("a secret in a hit: %+v", h)
		}
	}
}

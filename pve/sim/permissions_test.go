package sim

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The tier tokens of the default setup and what the installer grants them
// (installer.TierRoles): read-only PVEAuditor, operator PVEAuditor and
// PMCPOperator, admin and root Administrator.
var tierTokens = []string{"mcp@pve!read-only", "mcp@pve!operator", "mcp@pve!admin", "mcp@pve!root"}

// permEnv is a fresh simulator called in process, without a server.
type permEnv struct {
	t     *testing.T
	s     *Sim
	clock *ManualClock
	vars  map[string]string // placeholders a setup fills: {upid}, {backup100}, …
}

func newPermEnv(t *testing.T) *permEnv {
	t.Helper()
	clock := NewManualClock(epoch)
	s, err := New(Options{Registry: registry(t), Clock: clock, Seed: 42})
	if err != nil {
		t.Fatal(err)
	}
	return &permEnv{t: t, s: s, clock: clock, vars: map[string]string{
		"iso":     "local:iso/debian-12.8.0-amd64-netinst.iso",
		"disk100": "local-lvm:vm-100-disk-0",
	}}
}

// answer is one reply: "ok" for a 200, else the status and PVE's message,
// with the parameter errors of a 400 ("400 skiplock: Only root may use
// this option.").
type answer struct {
	status int
	msg    string
	errors map[string]string
	data   json.RawMessage
}

func (a answer) String() string {
	if a.status == http.StatusOK {
		return "ok"
	}
	out := strings.TrimSpace(a.msg)
	if len(a.errors) > 0 {
		keys := make([]string, 0, len(a.errors))
		for k := range a.errors {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var parts []string
		for _, k := range keys {
			parts = append(parts, k+": "+strings.TrimSpace(a.errors[k]))
		}
		out = strings.Join(parts, "; ")
	}
	return strconv.Itoa(a.status) + " " + out
}

// expand fills the placeholders of a path or value.
func (e *permEnv) expand(v string) string {
	for k, val := range e.vars {
		v = strings.ReplaceAll(v, "{"+k+"}", val)
	}
	return v
}

// do calls the simulator as a token; path segments in {…} placeholders are
// escaped as a client escapes them.
func (e *permEnv) do(tokenID, method, path string, args url.Values) answer {
	e.t.Helper()
	tok, ok := e.s.Token(tokenID)
	if !ok {
		e.t.Fatalf("no token %s", tokenID)
	}
	return e.doAs(tok, method, path, args)
}

func (e *permEnv) doAs(tok Token, method, path string, args url.Values) answer {
	e.t.Helper()
	segs := strings.Split(path, "/")
	for i, seg := range segs {
		segs[i] = url.PathEscape(e.expand(seg))
	}
	target := APIPrefix + strings.Join(segs, "/")
	form := url.Values{}
	for k, vs := range args {
		for _, v := range vs {
			form.Add(k, e.expand(v))
		}
	}
	var req *http.Request
	if method == http.MethodGet || method == http.MethodDelete {
		req = httptest.NewRequest(method, target+"?"+form.Encode(), nil)
	} else {
		req = httptest.NewRequest(method, target, strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	req.Header.Set("Authorization", tok.Header())
	rec := httptest.NewRecorder()
	e.s.ServeHTTP(rec, req)
	var body struct {
		Data    json.RawMessage   `json:"data"`
		Message string            `json:"message"`
		Errors  map[string]string `json:"errors"`
	}
	json.Unmarshal(rec.Body.Bytes(), &body) //nolint:errcheck // a 401 has no body
	return answer{status: rec.Code, msg: body.Message, errors: body.Errors, data: body.Data}
}

// root runs a setup call as root@pam!sim (Administrator, not root@pam) and
// returns its data; it must succeed.
func (e *permEnv) root(method, path string, args url.Values) string {
	e.t.Helper()
	a := e.do("root@pam!sim", method, path, args)
	if a.status != http.StatusOK {
		e.t.Fatalf("setup %s %s: %s", method, path, a)
	}
	var s string
	json.Unmarshal(a.data, &s) //nolint:errcheck // not every answer is a string
	return s
}

// finish ends every task and returns the exit status of upid.
func (e *permEnv) finish(upid string) string {
	e.t.Helper()
	e.clock.Advance(time.Hour)
	e.s.mu.Lock()
	defer e.s.mu.Unlock()
	e.s.finishTasks(e.clock.Now())
	t := e.s.st.task(upid)
	if t == nil {
		e.t.Fatalf("no task %s", upid)
	}
	return t.exit
}

// backup makes a finished zstd backup of a guest on the shared storage
// "backup" and names it {backup<vmid>}.
func (e *permEnv) backup(node, vmid string) {
	e.t.Helper()
	if exit := e.finish(e.root("POST", "/nodes/"+node+"/vzdump", url.Values{"vmid": {vmid}, "storage": {"backup"}, "compress": {"zstd"}})); exit != "OK" {
		e.t.Fatalf("setup backup of %s: %s", vmid, exit)
	}
	kind := "qemu"
	if strings.HasPrefix(vmid, "2") {
		kind = "lxc"
	}
	ext := map[string]string{"qemu": "vma.zst", "lxc": "tar.zst"}[kind]
	e.vars["backup"+vmid] = "backup:backup/vzdump-" + kind + "-" + vmid + "-2026_11_29-10_00_00." + ext
}

// A task of root@pam!sim, still running, as {upid}.
func (e *permEnv) foreignTask() {
	e.vars["upid"] = e.root("POST", "/nodes/pve1/services/cron/restart", nil)
}

const (
	anyConfigQemu = "VM.Config.Disk|VM.Config.CDROM|VM.Config.CPU|VM.Config.Memory|VM.Config.Network|VM.Config.HWType|VM.Config.Options|VM.Config.Cloudinit"
	anyConfigLXC  = "VM.Config.Disk|VM.Config.CPU|VM.Config.Memory|VM.Config.Network|VM.Config.Options"
	bare          = "403 Permission check failed"
)

func denied(what string) string { return "403 Permission check failed (" + what + ")" }

// tierRow is one call of a served endpoint and what each tier gets; root
// answers as admin (both hold Administrator, neither is root@pam).
type tierRow struct {
	method, path string
	args         url.Values
	setup        func(*permEnv)
	ro, op, ad   string
}

func v(kv ...string) url.Values {
	out := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		out.Add(kv[i], kv[i+1])
	}
	return out
}

// Reproduces the review finding: the simulator accepted POST
// /nodes/{node}/qemu and /lxc from the read-only and operator tokens, as it
// made only the checks of the schema's permissions object, and PVE makes
// more in code. Every endpoint the simulator serves is called here by each
// tier token, each on a fresh simulator, and must answer as PVE does. The
// comment on a row names the PVE function whose in-code check decides it;
// rows without one are decided by the schema's permissions.
func TestTierTokensOnEveryServedEndpoint(t *testing.T) {
	rows := []tierRow{
		{method: "GET", path: "/version", ro: "ok", op: "ok", ad: "ok"},
		// pve-manager Nodes.pm index: every node, load only with Sys.Audit.
		{method: "GET", path: "/nodes", ro: "ok", op: "ok", ad: "ok"},
		{method: "GET", path: "/nodes/pve1/status", ro: "ok", op: "ok", ad: "ok"},
		{method: "GET", path: "/nodes/pve1/version", ro: "ok", op: "ok", ad: "ok"},
		{method: "GET", path: "/nodes/pve1/disks/list", ro: "ok", op: "ok", ad: "ok"},
		{method: "GET", path: "/nodes/pve1/disks/smart", args: v("disk", "/dev/sda"), ro: "ok", op: "ok", ad: "ok"},
		{method: "GET", path: "/nodes/pve1/rrddata", args: v("timeframe", "hour"), ro: "ok", op: "ok", ad: "ok"},
		// qemu-server's and pve-container's vncproxy and termproxy: VM.Console.
		{method: "POST", path: "/nodes/pve1/qemu/100/vncproxy", ro: denied("/vms/100, VM.Console"), op: denied("/vms/100, VM.Console"), ad: "ok"},
		{method: "POST", path: "/nodes/pve1/qemu/100/termproxy", ro: denied("/vms/100, VM.Console"), op: denied("/vms/100, VM.Console"), ad: "ok"},
		{method: "POST", path: "/nodes/pve2/lxc/201/vncproxy", ro: denied("/vms/201, VM.Console"), op: denied("/vms/201, VM.Console"), ad: "ok"},
		{method: "POST", path: "/nodes/pve2/lxc/201/termproxy", ro: denied("/vms/201, VM.Console"), op: denied("/vms/201, VM.Console"), ad: "ok"},
		// pve-manager's node termproxy: Sys.Console on the node.
		{method: "POST", path: "/nodes/pve1/termproxy", ro: denied("/nodes/pve1, Sys.Console"), op: denied("/nodes/pve1, Sys.Console"), ad: "ok"},
		// pve-storage's download-url and oci-registry-pull.
		{method: "POST", path: "/nodes/pve1/storage/local/download-url", args: v("url", "https://example.com/d.iso", "content", "iso", "filename", "d.iso"),
			ro: denied("/storage/local, Datastore.AllocateTemplate"), op: denied("/storage/local, Datastore.AllocateTemplate"), ad: "ok"},
		{method: "POST", path: "/nodes/pve1/storage/local/oci-registry-pull", args: v("reference", "docker.io/library/debian:13"),
			ro: denied("/storage/local, Datastore.AllocateTemplate"), op: denied("/storage/local, Datastore.AllocateTemplate"), ad: "ok"},
		{method: "GET", path: "/cluster/ha/status/current", ro: "ok", op: "ok", ad: "ok"},
		{method: "GET", path: "/nodes/pve1/disks/lvm", ro: "ok", op: "ok", ad: "ok"},
		{method: "GET", path: "/nodes/pve1/disks/lvmthin", ro: "ok", op: "ok", ad: "ok"},
		{method: "GET", path: "/nodes/pve1/disks/directory", ro: "ok", op: "ok", ad: "ok"},
		// pve-storage API2/Disks: add_storage needs Datastore.Allocate on
		// /storage (the disks handlers' own check, mayAddStorage).
		{method: "POST", path: "/nodes/pve1/disks/lvm", args: v("name", "vg1", "device", "/dev/sdb", "add_storage", "1"),
			ro: denied("/, Sys.Modify"), op: denied("/, Sys.Modify"), ad: "ok"},
		{method: "POST", path: "/nodes/pve1/disks/directory", args: v("name", "dir1", "device", "/dev/sdb", "add_storage", "1"),
			ro: denied("/, Sys.Modify"), op: denied("/, Sys.Modify"), ad: "ok"},
		// pve-manager Network.pm index: bridges filtered by check_sdn_bridge.
		{method: "GET", path: "/nodes/pve1/network", ro: "ok", op: "ok", ad: "ok"},
		{method: "GET", path: "/nodes/pve1/services", ro: "ok", op: "ok", ad: "ok"},
		{method: "GET", path: "/nodes/pve1/services/cron/state", ro: "ok", op: "ok", ad: "ok"},
		{method: "POST", path: "/nodes/pve1/services/cron/start", ro: denied("/nodes/pve1, Sys.Modify"), op: denied("/nodes/pve1, Sys.Modify"), ad: "ok"},
		{method: "POST", path: "/nodes/pve1/services/cron/stop", ro: denied("/nodes/pve1, Sys.Modify"), op: denied("/nodes/pve1, Sys.Modify"), ad: "ok"},
		{method: "POST", path: "/nodes/pve1/services/cron/restart", ro: denied("/nodes/pve1, Sys.Modify"), op: denied("/nodes/pve1, Sys.Modify"), ad: "ok"},
		{method: "POST", path: "/nodes/pve1/services/cron/reload", ro: denied("/nodes/pve1, Sys.Modify"), op: denied("/nodes/pve1, Sys.Modify"), ad: "ok"},
		{method: "GET", path: "/nodes/pve1/apt/update", ro: denied("/nodes/pve1, Sys.Modify"), op: denied("/nodes/pve1, Sys.Modify"), ad: "ok"},
		{method: "POST", path: "/nodes/pve1/apt/update", ro: denied("/nodes/pve1, Sys.Modify"), op: denied("/nodes/pve1, Sys.Modify"), ad: "ok"},
		{method: "GET", path: "/nodes/pve1/journal", ro: denied("/nodes/pve1, Sys.Syslog"), op: denied("/nodes/pve1, Sys.Syslog"), ad: "ok"},
		{method: "GET", path: "/nodes/pve1/syslog", ro: denied("/nodes/pve1, Sys.Syslog"), op: denied("/nodes/pve1, Sys.Syslog"), ad: "ok"},

		// pve-manager Cluster.pm resources, log and tasks filter per item.
		{method: "GET", path: "/cluster/resources", ro: "ok", op: "ok", ad: "ok"},
		{method: "GET", path: "/cluster/status", ro: "ok", op: "ok", ad: "ok"},
		{method: "GET", path: "/cluster/log", ro: "ok", op: "ok", ad: "ok"},
		{method: "GET", path: "/cluster/nextid", ro: "ok", op: "ok", ad: "ok"},
		{method: "GET", path: "/cluster/tasks", ro: "ok", op: "ok", ad: "ok"},
		// pve-access-control AccessControl.pm permissions: another
		// subject needs Sys.Audit on /access (PVEAuditor has it).
		{method: "GET", path: "/access/permissions", args: v("userid", "mcp@pve"), ro: "ok", op: "ok", ad: "ok"},
		{method: "GET", path: "/pools", ro: "ok", op: "ok", ad: "ok"},

		// pve-manager Tasks.pm: another's task needs Sys.Audit on the node
		// to read, Sys.Modify to stop (stop_task).
		{method: "GET", path: "/nodes/pve1/tasks", ro: "ok", op: "ok", ad: "ok"},
		{method: "GET", path: "/nodes/pve1/tasks/{upid}/status", setup: (*permEnv).foreignTask, ro: "ok", op: "ok", ad: "ok"},
		{method: "GET", path: "/nodes/pve1/tasks/{upid}/log", setup: (*permEnv).foreignTask, ro: "ok", op: "ok", ad: "ok"},
		{method: "DELETE", path: "/nodes/pve1/tasks/{upid}", setup: (*permEnv).foreignTask,
			ro: denied("/nodes/pve1, Sys.Modify"), op: denied("/nodes/pve1, Sys.Modify"), ad: "ok"},

		{method: "GET", path: "/storage", ro: "ok", op: "ok", ad: "ok"},
		{method: "GET", path: "/storage/local", ro: denied("/storage/local, Datastore.Allocate"), op: denied("/storage/local, Datastore.Allocate"), ad: "ok"},
		{method: "GET", path: "/nodes/pve1/storage", ro: "ok", op: "ok", ad: "ok"},
		{method: "GET", path: "/nodes/pve1/storage/local/status", ro: "ok", op: "ok", ad: "ok"},
		// pve-storage Content.pm index: check_volume_access per volume.
		{method: "GET", path: "/nodes/pve1/storage/local-lvm/content", ro: "ok", op: "ok", ad: "ok"},
		// pve-storage Content.pm info: check_volume_access.
		{method: "GET", path: "/nodes/pve1/storage/local/content/{iso}", ro: "ok", op: "ok", ad: "ok"},
		{method: "GET", path: "/nodes/pve1/storage/local-lvm/content/{disk100}",
			ro: denied("/vms/100, VM.Config.Disk"), op: denied("/vms/100, VM.Config.Disk"), ad: "ok"},
		{method: "GET", path: "/nodes/pve1/storage/backup/content/{backup100}", setup: func(e *permEnv) { e.backup("pve1", "100") },
			ro: denied("/storage/backup, Datastore.AllocateSpace"), op: "ok", ad: "ok"},
		// pve-storage Content.pm delete: a guest's backup needs
		// Datastore.AllocateSpace and VM.Backup, anything else
		// Datastore.Allocate.
		{method: "DELETE", path: "/nodes/pve1/storage/backup/content/{backup100}", setup: func(e *permEnv) { e.backup("pve1", "100") },
			ro: denied("/storage/backup, Datastore.AllocateSpace"), op: "ok", ad: "ok"},
		{method: "DELETE", path: "/nodes/pve1/storage/local/content/{iso}",
			ro: denied("/storage/local, Datastore.Allocate"), op: denied("/storage/local, Datastore.Allocate"), ad: "ok"},

		// pve-manager API2/VZDump.pm vzdump: Datastore.AllocateSpace on
		// the storage before the worker (VM.Backup is checked in it);
		// assert_param_permission_vzdump: prune-backups needs
		// Datastore.Allocate; API2/Backup.pm assert_param_permission_common:
		// bwlimit needs Sys.Modify on /, dumpdir is root@pam's.
		{method: "POST", path: "/nodes/pve1/vzdump", args: v("vmid", "100", "storage", "backup"),
			ro: denied("/storage/backup, Datastore.AllocateSpace"), op: "ok", ad: "ok"},
		{method: "POST", path: "/nodes/pve1/vzdump", args: v("vmid", "100", "storage", "backup", "prune-backups", "keep-last=1"),
			ro: denied("/storage/backup, Datastore.Allocate"), op: denied("/storage/backup, Datastore.Allocate"), ad: "ok"},
		{method: "POST", path: "/nodes/pve1/vzdump", args: v("vmid", "100", "storage", "backup", "bwlimit", "1000"),
			ro: denied("/, Sys.Modify"), op: denied("/, Sys.Modify"), ad: "ok"},
		{method: "POST", path: "/nodes/pve1/vzdump", args: v("vmid", "100", "dumpdir", "/tmp"),
			ro: "400 dumpdir: Only root may set this option.", op: "400 dumpdir: Only root may set this option.", ad: "400 dumpdir: Only root may set this option."},

		// qemu-server API2/Qemu.pm vmlist: VM.Audit per VM.
		{method: "GET", path: "/nodes/pve1/qemu", ro: "ok", op: "ok", ad: "ok"},
		// qemu-server create_vm: VM.Allocate on /vms/<vmid> or the pool
		// (a bare "Permission check failed"), VM.PowerMgmt for start
		// first, Datastore.AllocateSpace on the storage parameter first.
		{method: "POST", path: "/nodes/pve1/qemu", args: v("vmid", "150", "name", "n150", "memory", "512", "scsi0", "local-lvm:4", "net0", "virtio,bridge=vmbr0"),
			ro: bare, op: bare, ad: "ok"},
		{method: "POST", path: "/nodes/pve1/qemu", args: v("vmid", "150", "memory", "512", "start", "1"),
			ro: denied("/vms/150, VM.PowerMgmt"), op: bare, ad: "ok"},
		// create_vm: restoring over an existing VM needs only VM.Backup
		// on it (the bridges are checked in the task).
		{method: "POST", path: "/nodes/pve1/qemu", args: v("vmid", "9000", "archive", "{backup9000}", "force", "1", "storage", "local-lvm"),
			setup: func(e *permEnv) { e.backup("pve1", "9000") }, ro: denied("/storage/local-lvm, Datastore.AllocateSpace"), op: "ok", ad: "ok"},
		{method: "GET", path: "/nodes/pve1/qemu/100/config", ro: "ok", op: "ok", ad: "ok"},
		{method: "GET", path: "/nodes/pve1/qemu/100/pending", ro: "ok", op: "ok", ad: "ok"},
		{method: "GET", path: "/nodes/pve1/qemu/100/status/current", ro: "ok", op: "ok", ad: "ok"},
		// PVE::API2::Qemu::Agent exec and exec-status: the schema's
		// VM.GuestAgent.Unrestricted, which PMCPOperator holds.
		{method: "POST", path: "/nodes/pve1/qemu/100/agent/exec", args: v("command", "true"),
			ro: denied("/vms/100, VM.GuestAgent.Unrestricted"), op: "ok", ad: "ok"},
		{method: "GET", path: "/nodes/pve1/qemu/100/agent/exec-status", args: v("pid", "1201"),
			setup: func(e *permEnv) { e.root("POST", "/nodes/pve1/qemu/100/agent/exec", v("command", "true")) },
			ro:    denied("/vms/100, VM.GuestAgent.Unrestricted"), op: "ok", ad: "ok"},
		{method: "GET", path: "/nodes/pve1/qemu/100/snapshot", ro: "ok", op: "ok", ad: "ok"},
		{method: "GET", path: "/nodes/pve1/qemu/100/snapshot/before-upgrade/config", ro: "ok", op: "ok", ad: "ok"},
		{method: "PUT", path: "/nodes/pve1/qemu/101/config", args: v("memory", "4096"),
			ro: denied("/vms/101, " + anyConfigQemu), op: denied("/vms/101, " + anyConfigQemu), ad: "ok"},
		{method: "POST", path: "/nodes/pve1/qemu/101/config", args: v("memory", "4096"),
			ro: denied("/vms/101, " + anyConfigQemu), op: denied("/vms/101, " + anyConfigQemu), ad: "ok"},
		// update_vm_api: check_vm_modify_config_perm: args is root@pam's;
		// skiplock is root@pam's.
		{method: "PUT", path: "/nodes/pve1/qemu/101/config", args: v("args", "-no-reboot"),
			ro: denied("/vms/101, " + anyConfigQemu), op: denied("/vms/101, " + anyConfigQemu), ad: "500 only root can set 'args' config"},
		{method: "PUT", path: "/nodes/pve1/qemu/101/config", args: v("memory", "4096", "skiplock", "1"),
			ro: denied("/vms/101, " + anyConfigQemu), op: denied("/vms/101, " + anyConfigQemu), ad: "400 skiplock: Only root may use this option."},
		{method: "POST", path: "/nodes/pve1/qemu/101/status/start", ro: denied("/vms/101, VM.PowerMgmt"), op: "ok", ad: "ok"},
		// vm_start: skiplock is root@pam's.
		{method: "POST", path: "/nodes/pve1/qemu/101/status/start", args: v("skiplock", "1"),
			ro: denied("/vms/101, VM.PowerMgmt"), op: "400 skiplock: Only root may use this option.", ad: "400 skiplock: Only root may use this option."},
		{method: "POST", path: "/nodes/pve1/qemu/100/status/stop", ro: denied("/vms/100, VM.PowerMgmt"), op: "ok", ad: "ok"},
		{method: "POST", path: "/nodes/pve1/qemu/100/status/shutdown", ro: denied("/vms/100, VM.PowerMgmt"), op: "ok", ad: "ok"},
		{method: "POST", path: "/nodes/pve1/qemu/100/status/reboot", ro: denied("/vms/100, VM.PowerMgmt"), op: "ok", ad: "ok"},
		{method: "POST", path: "/nodes/pve1/qemu/100/status/reset", ro: denied("/vms/100, VM.PowerMgmt"), op: "ok", ad: "ok"},
		{method: "POST", path: "/nodes/pve1/qemu/100/status/suspend", ro: denied("/vms/100, VM.PowerMgmt"), op: "ok", ad: "ok"},
		// vm_suspend: todisk needs VM.Config.Disk and Datastore.AllocateSpace.
		{method: "POST", path: "/nodes/pve1/qemu/100/status/suspend", args: v("todisk", "1"),
			ro: denied("/vms/100, VM.PowerMgmt"), op: denied("/vms/100, VM.Config.Disk"), ad: "ok"},
		{method: "POST", path: "/nodes/pve1/qemu/100/status/resume", ro: denied("/vms/100, VM.PowerMgmt"), op: "ok", ad: "ok"},
		{method: "POST", path: "/nodes/pve1/qemu/100/snapshot", args: v("snapname", "s1"), ro: denied("/vms/100, VM.Snapshot"), op: "ok", ad: "ok"},
		// rollback: start needs VM.PowerMgmt (the operator has it).
		{method: "POST", path: "/nodes/pve1/qemu/100/snapshot/before-upgrade/rollback", args: v("start", "1"),
			ro: denied("/vms/100, VM.Snapshot|VM.Snapshot.Rollback"), op: "ok", ad: "ok"},
		{method: "DELETE", path: "/nodes/pve1/qemu/100/snapshot/before-upgrade", ro: denied("/vms/100, VM.Snapshot"), op: "ok", ad: "ok"},
		{method: "PUT", path: "/nodes/pve1/qemu/100/snapshot/before-upgrade/config", args: v("description", "x"), ro: denied("/vms/100, VM.Snapshot"), op: "ok", ad: "ok"},
		{method: "DELETE", path: "/nodes/pve1/qemu/9000", ro: denied("/vms/9000, VM.Allocate"), op: denied("/vms/9000, VM.Allocate"), ad: "ok"},
		// resize_vm: Datastore.AllocateSpace is checked in the task.
		{method: "PUT", path: "/nodes/pve1/qemu/100/resize", args: v("disk", "scsi0", "size", "+1G"),
			ro: denied("/vms/100, VM.Config.Disk"), op: denied("/vms/100, VM.Config.Disk"), ad: "ok"},
		// clone_vm: check_storage_access_clone, check_bridge_access.
		{method: "POST", path: "/nodes/pve1/qemu/9000/clone", args: v("newid", "150"),
			ro: denied("/vms/9000, VM.Clone"), op: denied("/vms/9000, VM.Clone"), ad: "ok"},
		// migrate_vm: force, migration_type and migration_network are
		// root@pam's; targetstorage checks the target storages.
		{method: "POST", path: "/nodes/pve1/qemu/100/migrate", args: v("target", "pve2", "online", "1"),
			ro: denied("/vms/100, VM.Migrate"), op: denied("/vms/100, VM.Migrate"), ad: "ok"},
		{method: "POST", path: "/nodes/pve1/qemu/101/template", ro: denied("/vms/101, VM.Allocate"), op: denied("/vms/101, VM.Allocate"), ad: "ok"},

		// pve-container API2/LXC.pm vmlist: VM.Audit per container.
		{method: "GET", path: "/nodes/pve1/lxc", ro: "ok", op: "ok", ad: "ok"},
		// pve-container create_vm: as QEMU's, plus
		// check_ct_modify_config_perm and the storages of the mount points.
		{method: "POST", path: "/nodes/pve1/lxc", args: v("vmid", "250", "ostemplate", "local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst", "rootfs", "local-lvm:4", "hostname", "t250"),
			ro: bare, op: bare, ad: "ok"},
		// create_vm: a forced restore over an existing container needs
		// VM.Backup on it, and Datastore.AllocateSpace on the storage.
		{method: "POST", path: "/nodes/pve2/lxc", args: v("vmid", "201", "ostemplate", "{backup201}", "restore", "1", "force", "1", "storage", "local-lvm"),
			setup: func(e *permEnv) { e.backup("pve2", "201") }, ro: bare, op: "ok", ad: "ok"},
		{method: "GET", path: "/nodes/pve1/lxc/200/config", ro: "ok", op: "ok", ad: "ok"},
		{method: "GET", path: "/nodes/pve1/lxc/200/pending", ro: "ok", op: "ok", ad: "ok"},
		{method: "GET", path: "/nodes/pve1/lxc/200/status/current", ro: "ok", op: "ok", ad: "ok"},
		{method: "GET", path: "/nodes/pve1/lxc/200/snapshot", ro: "ok", op: "ok", ad: "ok"},
		{method: "GET", path: "/nodes/pve1/lxc/200/snapshot/s0/config", setup: lxcSnapshot, ro: "ok", op: "ok", ad: "ok"},
		{method: "PUT", path: "/nodes/pve2/lxc/201/config", args: v("memory", "1024"),
			ro: denied("/vms/201, " + anyConfigLXC), op: denied("/vms/201, " + anyConfigLXC), ad: "ok"},
		{method: "POST", path: "/nodes/pve2/lxc/201/status/start", ro: denied("/vms/201, VM.PowerMgmt"), op: "ok", ad: "ok"},
		// pve-container vm_start: skiplock is root@pam's.
		{method: "POST", path: "/nodes/pve2/lxc/201/status/start", args: v("skiplock", "1"),
			ro: denied("/vms/201, VM.PowerMgmt"), op: "400 skiplock: Only root may use this option.", ad: "400 skiplock: Only root may use this option."},
		{method: "POST", path: "/nodes/pve1/lxc/200/status/stop", ro: denied("/vms/200, VM.PowerMgmt"), op: "ok", ad: "ok"},
		{method: "POST", path: "/nodes/pve1/lxc/200/status/shutdown", ro: denied("/vms/200, VM.PowerMgmt"), op: "ok", ad: "ok"},
		{method: "POST", path: "/nodes/pve1/lxc/200/status/reboot", ro: denied("/vms/200, VM.PowerMgmt"), op: "ok", ad: "ok"},
		{method: "POST", path: "/nodes/pve1/lxc/200/status/suspend", ro: denied("/vms/200, VM.PowerMgmt"), op: "ok", ad: "ok"},
		{method: "POST", path: "/nodes/pve1/lxc/200/status/resume", ro: denied("/vms/200, VM.PowerMgmt"), op: "ok", ad: "ok"},
		{method: "POST", path: "/nodes/pve1/lxc/200/snapshot", args: v("snapname", "s1"), ro: denied("/vms/200, VM.Snapshot"), op: "ok", ad: "ok"},
		{method: "POST", path: "/nodes/pve1/lxc/200/snapshot/s0/rollback", setup: lxcSnapshot,
			ro: denied("/vms/200, VM.Snapshot|VM.Snapshot.Rollback"), op: "ok", ad: "ok"},
		{method: "DELETE", path: "/nodes/pve1/lxc/200/snapshot/s0", setup: lxcSnapshot, ro: denied("/vms/200, VM.Snapshot"), op: "ok", ad: "ok"},
		{method: "PUT", path: "/nodes/pve1/lxc/200/snapshot/s0/config", args: v("description", "x"), setup: lxcSnapshot,
			ro: denied("/vms/200, VM.Snapshot"), op: "ok", ad: "ok"},
		{method: "DELETE", path: "/nodes/pve2/lxc/201", ro: denied("/vms/201, VM.Allocate"), op: denied("/vms/201, VM.Allocate"), ad: "ok"},
		// pve-container resize_vm: check_ct_modify_config_perm and
		// Datastore.AllocateSpace.
		{method: "PUT", path: "/nodes/pve1/lxc/200/resize", args: v("disk", "rootfs", "size", "+1G"),
			ro: denied("/vms/200, VM.Config.Disk"), op: denied("/vms/200, VM.Config.Disk"), ad: "ok"},
		// pve-container clone_vm: Datastore.AllocateSpace per volume,
		// the bridges.
		{method: "POST", path: "/nodes/pve2/lxc/201/clone", args: v("newid", "251"),
			ro: denied("/vms/201, VM.Clone"), op: denied("/vms/201, VM.Clone"), ad: "ok"},
		{method: "POST", path: "/nodes/pve2/lxc/201/migrate", args: v("target", "pve1"),
			ro: denied("/vms/201, VM.Migrate"), op: denied("/vms/201, VM.Migrate"), ad: "ok"},
		{method: "POST", path: "/nodes/pve2/lxc/201/template", ro: denied("/vms/201, VM.Allocate"), op: denied("/vms/201, VM.Allocate"), ad: "ok"},
	}
	reg := registry(t)
	covered := map[string]bool{}
	for _, row := range rows {
		segs := strings.Split(row.path, "/")
		for i, seg := range segs {
			if strings.Contains(seg, "{") {
				seg = "x" // a placeholder a setup fills
			}
			segs[i] = url.PathEscape(seg)
		}
		ep, _, err := reg.Match(row.method, strings.Join(segs, "/"))
		if err != nil {
			t.Fatalf("%s %s: %v", row.method, row.path, err)
		}
		covered[ep.Key()] = true
		want := map[string]string{tierTokens[0]: row.ro, tierTokens[1]: row.op, tierTokens[2]: row.ad, tierTokens[3]: row.ad}
		for _, tok := range tierTokens {
			e := newPermEnv(t)
			if row.setup != nil {
				row.setup(e)
			}
			got := e.do(tok, row.method, row.path, row.args).String()
			if got != want[tok] {
				t.Errorf("%s %s %v as %s: %s, want %s", row.method, row.path, row.args, tok, got, want[tok])
			}
		}
	}
	// Every semantic handler has a row; the directory indexes have no
	// in-code checks and answer every tier, but for the root@pam-only ones.
	e := newPermEnv(t)
	for _, key := range e.s.Coverage().Handled {
		if e.s.handlers[key] != nil {
			if !covered[key] {
				t.Errorf("served endpoint %s has no row", key)
			}
			continue
		}
		method, template, _ := strings.Cut(key, " ")
		ep := reg.Lookup(method, template)
		path := template
		for _, name := range ep.PathParams {
			val := map[string]string{"node": "pve1", "vmid": "100", "storage": "local", "snapname": "before-upgrade",
				"osdid": "0", "id": "100-0", "service": "cron"}[name]
			if val == "" {
				val = "x1"
			}
			path = strings.ReplaceAll(path, "{"+name+"}", val)
		}
		want := "ok"
		if ep.Permissions == nil {
			want = denied("user != root@pam")
		}
		for _, tok := range tierTokens {
			if got := e.do(tok, method, path, nil).String(); got != want {
				t.Errorf("directory %s as %s: %s, want %s", path, tok, got, want)
			}
		}
	}
}

func lxcSnapshot(e *permEnv) {
	e.finish(e.root("POST", "/nodes/pve1/lxc/200/snapshot", v("snapname", "s0")))
}

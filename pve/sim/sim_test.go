package sim

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"testing"

	"github.com/proxmox-mcp/proxmox-mcp/pve"
)

var ctx = context.Background()

func post(t *testing.T, c *pve.Client, path string, params url.Values) string {
	t.Helper()
	resp, err := c.Do(ctx, "POST", path, params)
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	s, err := resp.String()
	if err != nil {
		t.Fatalf("POST %s: data is not a string: %s", path, resp.Data)
	}
	return s
}

func getMap(t *testing.T, c *pve.Client, path string, params url.Values) map[string]any {
	t.Helper()
	var out map[string]any
	if err := c.Get(ctx, path, params, &out); err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	return out
}

func getList(t *testing.T, c *pve.Client, path string, params url.Values) []map[string]any {
	t.Helper()
	var out []map[string]any
	if err := c.Get(ctx, path, params, &out); err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	return out
}

func status(t *testing.T, c *pve.Client, node, kind string, vmid string) string {
	t.Helper()
	return getMap(t, c, "/nodes/"+node+"/"+kind+"/"+vmid+"/status/current", nil)["status"].(string)
}

// A stopped VM started through the API is running once its task ends, not
// before.
func TestStartStoppedVM(t *testing.T) {
	e := newEnv(t)
	c := e.client("mcp@pve!operator")
	upid := post(t, c, "/nodes/pve1/qemu/101/status/start", nil)
	u, err := pve.ParseUPID(upid)
	if err != nil || u.Type != "qmstart" || u.ID != "101" || u.User != "mcp@pve!operator" || u.Node != "pve1" {
		t.Fatalf("UPID %q (%+v, %v)", upid, u, err)
	}
	if got := status(t, c, "pve1", "qemu", "101"); got != "stopped" {
		t.Fatalf("status while the task runs = %s, want stopped", got)
	}
	st := e.finish(c, upid)
	if st.Status != "stopped" || st.ExitStatus != "OK" {
		t.Fatalf("task %+v", st)
	}
	if got := status(t, c, "pve1", "qemu", "101"); got != "running" {
		t.Fatalf("status after the task = %s, want running", got)
	}
	// Starting it again fails in the task, as PVE's worker does.
	st = e.finish(c, post(t, c, "/nodes/pve1/qemu/101/status/start", nil))
	if st.ExitStatus != "VM 101 already running" {
		t.Errorf("second start exit status %q", st.ExitStatus)
	}
}

// Every power action moves the state machine as PVE does.
func TestPowerActions(t *testing.T) {
	for _, tc := range []struct {
		kind, node, vmid, action string
		want                     string // status/current afterwards, or the task's error
		wantExit                 string
	}{
		{"qemu", "pve1", "100", "stop", "stopped", "OK"},
		{"qemu", "pve1", "100", "shutdown", "stopped", "OK"},
		{"qemu", "pve1", "100", "reboot", "running", "OK"},
		{"qemu", "pve1", "100", "reset", "running", "OK"},
		{"qemu", "pve1", "100", "suspend", "running", "OK"},
		{"qemu", "pve1", "101", "shutdown", "stopped", "VM 101 not running"},
		{"qemu", "pve1", "101", "reboot", "stopped", "VM 101 not running"},
		{"lxc", "pve1", "200", "stop", "stopped", "OK"},
		{"lxc", "pve2", "201", "start", "running", "OK"},
		{"lxc", "pve2", "201", "stop", "stopped", "CT 201 not running"},
	} {
		t.Run(tc.kind+"/"+tc.vmid+"/"+tc.action, func(t *testing.T) {
			e := newEnv(t)
			c := e.client("mcp@pve!operator")
			st := e.finish(c, post(t, c, "/nodes/"+tc.node+"/"+tc.kind+"/"+tc.vmid+"/status/"+tc.action, nil))
			if st.ExitStatus != tc.wantExit {
				t.Errorf("exit status %q, want %q", st.ExitStatus, tc.wantExit)
			}
			if got := status(t, c, tc.node, tc.kind, tc.vmid); got != tc.want {
				t.Errorf("status %s, want %s", got, tc.want)
			}
		})
	}
	e := newEnv(t)
	c := e.client("mcp@pve!operator")
	e.finish(c, post(t, c, "/nodes/pve1/qemu/100/status/suspend", nil))
	if q := getMap(t, c, "/nodes/pve1/qemu/100/status/current", nil)["qmpstatus"]; q != "paused" {
		t.Errorf("qmpstatus after suspend = %v", q)
	}
	e.finish(c, post(t, c, "/nodes/pve1/qemu/100/status/resume", nil))
	if q := getMap(t, c, "/nodes/pve1/qemu/100/status/current", nil)["qmpstatus"]; q != "running" {
		t.Errorf("qmpstatus after resume = %v", q)
	}
}

// A config edit against a stale digest is refused with PVE's 500 and
// changes nothing; the current digest succeeds and changes the digest.
func TestStaleDigestRejected(t *testing.T) {
	e := newEnv(t)
	c := e.client("mcp@pve!admin")
	conf := getMap(t, c, "/nodes/pve1/qemu/101/config", nil)
	digest := conf["digest"].(string)
	if len(digest) != 40 {
		t.Fatalf("digest %q is not a SHA-1", digest)
	}
	// Someone else changes the VM.
	if _, err := c.Do(ctx, "PUT", "/nodes/pve1/qemu/101/config", url.Values{"description": {"changed by someone"}}); err != nil {
		t.Fatal(err)
	}
	_, err := c.Do(ctx, "PUT", "/nodes/pve1/qemu/101/config", url.Values{"cores": {"8"}, "digest": {digest}})
	if !errors.Is(err, pve.ErrDigestMismatch) {
		t.Fatalf("stale digest: %v, want ErrDigestMismatch", err)
	}
	var apiErr *pve.APIError
	if !errors.As(err, &apiErr) || apiErr.Status != 500 || apiErr.Message != "detected modified configuration - file changed by other user? Try again." {
		t.Fatalf("error %#v", err)
	}
	after := getMap(t, c, "/nodes/pve1/qemu/101/config", nil)
	if after["cores"] != float64(4) {
		t.Errorf("cores changed to %v despite the refusal", after["cores"])
	}
	fresh := after["digest"].(string)
	if _, err := c.Do(ctx, "PUT", "/nodes/pve1/qemu/101/config", url.Values{"cores": {"8"}, "digest": {fresh}}); err != nil {
		t.Fatalf("current digest: %v", err)
	}
	final := getMap(t, c, "/nodes/pve1/qemu/101/config", nil)
	if final["cores"] != float64(8) || final["digest"] == fresh {
		t.Errorf("after the edit: cores %v, digest unchanged %v", final["cores"], final["digest"] == fresh)
	}
}

// Rolling back restores the snapshot's configuration and moves the parent.
func TestRollbackRestoresSnapshot(t *testing.T) {
	e := newEnv(t)
	c := e.client("mcp@pve!admin")
	if _, err := c.Do(ctx, "PUT", "/nodes/pve1/qemu/100/config", url.Values{"description": {"after the snapshot"}, "tags": {"changed"}}); err != nil {
		t.Fatal(err)
	}
	// 100 runs, so a change of cores waits as a pending value.
	if _, err := c.Do(ctx, "PUT", "/nodes/pve1/qemu/100/config", url.Values{"cores": {"16"}}); err != nil {
		t.Fatal(err)
	}
	pending := getList(t, c, "/nodes/pve1/qemu/100/pending", nil)
	found := false
	for _, p := range pending {
		if p["key"] == "cores" && p["pending"] == "16" && p["value"] == "2" {
			found = true
		}
	}
	if !found {
		t.Fatalf("pending cores not listed: %v", pending)
	}
	if cur := getMap(t, c, "/nodes/pve1/qemu/100/config", url.Values{"current": {"1"}}); cur["cores"] != float64(2) {
		t.Fatalf("current cores %v, want 2 until restart", cur["cores"])
	}
	st := e.finish(c, post(t, c, "/nodes/pve1/qemu/100/snapshot/before-upgrade/rollback", nil))
	if st.ExitStatus != "OK" {
		t.Fatalf("rollback task: %+v", st)
	}
	conf := getMap(t, c, "/nodes/pve1/qemu/100/config", nil)
	if _, has := conf["description"]; has || conf["tags"] != "prod;web" || conf["cores"] != float64(2) {
		t.Errorf("config after rollback: description %v, tags %v, cores %v", conf["description"], conf["tags"], conf["cores"])
	}
	if conf["parent"] != "before-upgrade" {
		t.Errorf("parent %v", conf["parent"])
	}
	if got := status(t, c, "pve1", "qemu", "100"); got != "stopped" {
		t.Errorf("a rollback without vmstate leaves the VM %s, want stopped", got)
	}
}

func TestSnapshotLifecycle(t *testing.T) {
	e := newEnv(t)
	c := e.client("mcp@pve!operator")
	upid := post(t, c, "/nodes/pve2/lxc/201/snapshot", url.Values{"snapname": {"pre-update"}, "description": {"before apt upgrade"}})
	// While the task runs the container is locked.
	if _, err := c.Do(ctx, "POST", "/nodes/pve2/lxc/201/snapshot", url.Values{"snapname": {"second"}}); err == nil || !strings.Contains(err.Error(), "CT is locked (snapshot)") {
		t.Fatalf("second snapshot during the first: %v", err)
	}
	e.finish(c, upid)
	list := getList(t, c, "/nodes/pve2/lxc/201/snapshot", nil)
	if len(list) != 2 || list[0]["name"] != "pre-update" || list[0]["description"] != "before apt upgrade" {
		t.Fatalf("snapshots %v", list)
	}
	cur := list[1]
	if cur["name"] != "current" || cur["description"] != "You are here!" || cur["parent"] != "pre-update" || cur["running"] != float64(0) {
		t.Errorf("current entry %v", cur)
	}
	if _, err := c.Do(ctx, "POST", "/nodes/pve2/lxc/201/snapshot", url.Values{"snapname": {"pre-update"}}); err == nil || !strings.Contains(err.Error(), "snapshot name 'pre-update' already used") {
		t.Errorf("duplicate name: %v", err)
	}
	resp, err := c.Do(ctx, "DELETE", "/nodes/pve2/lxc/201/snapshot/pre-update", nil)
	if err != nil {
		t.Fatal(err)
	}
	del, _ := resp.String()
	if st := e.finish(c, del); st.ExitStatus != "OK" {
		t.Fatalf("delete task %+v", st)
	}
	if list := getList(t, c, "/nodes/pve2/lxc/201/snapshot", nil); len(list) != 1 {
		t.Errorf("after delete: %v", list)
	}
}

// Destroying a protected guest is refused and the guest stays; a running
// one is refused too; an unprotected stopped one goes with its disks.
func TestDestroy(t *testing.T) {
	e := newEnv(t)
	c := e.client("mcp@pve!admin")
	_, err := c.Do(ctx, "DELETE", "/nodes/pve1/qemu/101", nil)
	if err == nil || !strings.Contains(err.Error(), "can't remove VM 101 - protection mode enabled") {
		t.Fatalf("protected: %v", err)
	}
	getMap(t, c, "/nodes/pve1/qemu/101/config", nil) // still there
	if _, err := c.Do(ctx, "DELETE", "/nodes/pve1/qemu/100", nil); err == nil || !strings.Contains(err.Error(), "VM 100 is running - destroy failed") {
		t.Fatalf("running: %v", err)
	}
	resp, err := c.Do(ctx, "DELETE", "/nodes/pve2/lxc/201", url.Values{"purge": {"1"}})
	if err != nil {
		t.Fatal(err)
	}
	upid, _ := resp.String()
	e.finish(c, upid)
	_, err = c.Do(ctx, "GET", "/nodes/pve2/lxc/201/config", nil)
	if err == nil || !strings.Contains(err.Error(), "Configuration file 'nodes/pve2/lxc/201.conf' does not exist") {
		t.Fatalf("after destroy: %v", err)
	}
	for _, v := range getList(t, c, "/nodes/pve2/storage/local-lvm/content", nil) {
		if v["vmid"] == float64(201) {
			t.Errorf("volume %v outlived its container", v["volid"])
		}
	}
}

// PVE's answers to bad calls, on the wire.
func TestErrorShapes(t *testing.T) {
	e := newEnv(t)
	admin := e.client("mcp@pve!admin")
	ro := e.client("mcp@pve!read-only")
	for _, tc := range []struct {
		name   string
		c      *pve.Client
		method string
		path   string
		params url.Values
		status int
		msg    string
		errs   map[string]string
		is     error
	}{
		{"parameter verification", admin, "POST", "/nodes/pve1/qemu/100/status/start", url.Values{"timeout": {"-5"}, "bogus": {"1"}}, 400,
			"Parameter verification failed.", map[string]string{"timeout": "value must have a minimum value of 0", "bogus": "property is not defined in schema"}, pve.ErrParameter},
		{"privilege missing", ro, "POST", "/nodes/pve1/qemu/100/status/stop", nil, 403, "Permission check failed (/vms/100, VM.PowerMgmt)", nil, pve.ErrPermission},
		{"unknown path", admin, "GET", "/nodes/pve1/frobnicate", nil, 501, "Method 'GET /nodes/pve1/frobnicate' not implemented", nil, pve.ErrNotImplemented},
		{"not simulated", admin, "GET", "/nodes/pve1/ceph/osd", nil, 501, "Method 'GET /nodes/{node}/ceph/osd' is not simulated", nil, pve.ErrNotImplemented},
		{"offline node", admin, "GET", "/nodes/pve3/qemu", nil, 595, "Errors during connection establishment, proxy handler: No route to host", nil, pve.ErrProxy},
		{"token not allowed", admin, "PUT", "/access/password", url.Values{"userid": {"mcp@pve"}, "password": {"secret123"}}, 403,
			"Permission check failed (URI '/api2/json/access/password' not available with API token, need proper ticket.)", nil, pve.ErrPermission},
		{"missing guest", admin, "GET", "/nodes/pve1/qemu/555/config", nil, 500, "Configuration file 'nodes/pve1/qemu-server/555.conf' does not exist", nil, pve.ErrServer},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.c.Do(ctx, tc.method, tc.path, tc.params)
			var apiErr *pve.APIError
			if !errors.As(err, &apiErr) {
				t.Fatalf("error %v, want an APIError", err)
			}
			if apiErr.Status != tc.status || !strings.HasPrefix(apiErr.Message, tc.msg) {
				t.Errorf("got %d %q, want %d %q", apiErr.Status, apiErr.Message, tc.status, tc.msg)
			}
			for k, want := range tc.errs {
				if !strings.Contains(apiErr.Errors[k], want) {
					t.Errorf("errors[%s] = %q, want %q", k, apiErr.Errors[k], want)
				}
			}
			if !errors.Is(err, tc.is) {
				t.Errorf("errors.Is(%v, %v) is false", err, tc.is)
			}
		})
	}
}

func TestAuthentication(t *testing.T) {
	e := newEnv(t)
	for _, tc := range []struct {
		name string
		tok  Token
	}{
		{"wrong secret", Token{ID: "mcp@pve!operator", Secret: "00000000-0000-0000-0000-000000000000"}},
		{"unknown token", Token{ID: "mcp@pve!nobody", Secret: "x"}},
		{"unknown user", Token{ID: "eve@pve!x", Secret: "x"}},
	} {
		_, err := e.clientFor(tc.tok).Do(ctx, "GET", "/version", nil)
		var apiErr *pve.APIError
		if !errors.As(err, &apiErr) || apiErr.Status != 401 || apiErr.Message != "Authentication failed!" || !errors.Is(err, pve.ErrAuthentication) {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
	// A revoked token stops working on the next request.
	c := e.client("mcp@pve!operator")
	getMap(t, c, "/version", nil)
	e.sim.RevokeToken("mcp@pve!operator")
	if _, err := c.Do(ctx, "GET", "/version", nil); !errors.Is(err, pve.ErrAuthentication) {
		t.Errorf("revoked token: %v", err)
	}
}

// Privilege separation: the read-only token sees everything but changes
// nothing; a token granted PVEVMUser on one VM sees only that VM.
func TestPermissions(t *testing.T) {
	e := newEnv(t)
	ro := e.client("mcp@pve!read-only")
	if n := len(getList(t, ro, "/cluster/resources", url.Values{"type": {"vm"}})); n != 6 {
		t.Errorf("read-only token sees %d guests, want 6", n)
	}
	tok, err := e.sim.AddToken("alice@pve!agent", true)
	if err != nil {
		t.Fatal(err)
	}
	// alice herself may do everything on /vms/100; her token only what it is granted.
	if err := e.sim.Grant("/vms", "alice@pve", "PVEVMAdmin", true); err != nil {
		t.Fatal(err)
	}
	if err := e.sim.Grant("/vms/100", "alice@pve!agent", "PVEVMUser", false); err != nil {
		t.Fatal(err)
	}
	c := e.clientFor(tok)
	vms := getList(t, c, "/cluster/resources", url.Values{"type": {"vm"}})
	if len(vms) != 1 || vms[0]["vmid"] != float64(100) {
		t.Fatalf("alice's token sees %v", vms)
	}
	e.finish(c, post(t, c, "/nodes/pve1/qemu/100/status/shutdown", nil))
	if _, err := c.Do(ctx, "POST", "/nodes/pve1/qemu/101/status/start", nil); !errors.Is(err, pve.ErrPermission) {
		t.Errorf("start of an ungranted VM: %v", err)
	}
	// The token's own grant is capped by its user's privileges.
	if err := e.sim.Grant("/vms/102", "alice@pve!agent", "Administrator", false); err != nil {
		t.Fatal(err)
	}
	perms := getMap(t, c, "/access/permissions", url.Values{"path": {"/vms/102"}})
	privs, _ := perms["/vms/102"].(map[string]any)
	if privs["Sys.PowerMgmt"] != nil || privs["VM.Allocate"] == nil {
		t.Errorf("token privileges on /vms/102 %v: want the user's VM privileges only", privs)
	}
	if err := e.sim.Grant("/", "alice@pve!agent", "NoSuchRole", true); err == nil {
		t.Error("granting an unknown role succeeded")
	}
}

func TestCreateCloneMigrateBackup(t *testing.T) {
	e := newEnv(t)
	c := e.client("mcp@pve!admin")
	next := ""
	if err := c.Get(ctx, "/cluster/nextid", nil, &next); err != nil || next != "103" {
		t.Fatalf("nextid %q, %v", next, err)
	}
	upid := post(t, c, "/nodes/pve2/qemu", url.Values{"vmid": {"103"}, "name": {"api01"}, "memory": {"2048"}, "cores": {"2"},
		"net0": {"virtio,bridge=vmbr0"}, "scsi0": {"local-lvm:16"}, "start": {"1"}})
	if st := e.finish(c, upid); st.ExitStatus != "OK" || st.Type != "qmcreate" {
		t.Fatalf("create: %+v", st)
	}
	conf := getMap(t, c, "/nodes/pve2/qemu/103/config", nil)
	if conf["scsi0"] != "local-lvm:vm-103-disk-0,size=16G" || !strings.HasPrefix(conf["net0"].(string), "virtio=BC:24:11:") {
		t.Errorf("created config %v", conf)
	}
	if status(t, c, "pve2", "qemu", "103") != "running" {
		t.Error("start=1 did not start the VM")
	}
	if _, err := c.Do(ctx, "POST", "/nodes/pve2/qemu", url.Values{"vmid": {"103"}}); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("duplicate create: %v", err)
	}

	// Linked clone of the template, full clone of a VM.
	e.finish(c, post(t, c, "/nodes/pve1/qemu/9000/clone", url.Values{"newid": {"104"}, "name": {"from-template"}}))
	cl := getMap(t, c, "/nodes/pve1/qemu/104/config", nil)
	if cl["name"] != "from-template" || cl["template"] != nil || cl["scsi0"] == getMap(t, c, "/nodes/pve1/qemu/9000/config", nil)["scsi0"] {
		t.Errorf("clone config %v", cl)
	}

	// Migrating a running VM needs online.
	if _, err := c.Do(ctx, "POST", "/nodes/pve1/qemu/100/migrate", url.Values{"target": {"pve2"}}); err == nil || !strings.Contains(err.Error(), "without --online") {
		t.Errorf("offline migration of a running VM: %v", err)
	}
	e.finish(c, post(t, c, "/nodes/pve1/qemu/100/migrate", url.Values{"target": {"pve2"}, "online": {"1"}}))
	if status(t, c, "pve2", "qemu", "100") != "running" {
		t.Error("VM 100 is not running on pve2 after migration")
	}
	if _, err := c.Do(ctx, "POST", "/nodes/pve2/qemu/102/migrate", url.Values{"target": {"pve3"}, "online": {"1"}}); err == nil || !strings.Contains(err.Error(), "not online") {
		t.Errorf("migration to an offline node: %v", err)
	}

	// A backup appears as storage content when its task ends.
	st := e.finish(c, post(t, c, "/nodes/pve2/vzdump", url.Values{"vmid": {"100"}, "storage": {"backup"}, "compress": {"zstd"}, "notes-template": {"{{guestname}} nightly"}}))
	if st.ExitStatus != "OK" || st.Type != "vzdump" || st.ID != "100" {
		t.Fatalf("vzdump %+v", st)
	}
	backups := getList(t, c, "/nodes/pve2/storage/backup/content", url.Values{"content": {"backup"}})
	if len(backups) != 1 || backups[0]["vmid"] != float64(100) || backups[0]["notes"] != "web01 nightly" ||
		!strings.HasPrefix(backups[0]["volid"].(string), "backup:backup/vzdump-qemu-100-2026_11_29-") || !strings.HasSuffix(backups[0]["volid"].(string), ".vma.zst") {
		t.Errorf("backups %v", backups)
	}
	// The shared backup storage shows it on the other node too.
	if n := len(getList(t, c, "/nodes/pve1/storage/backup/content", nil)); n != 1 {
		t.Errorf("shared storage on pve1 lists %d backups", n)
	}
	if _, err := c.Do(ctx, "POST", "/nodes/pve1/vzdump", url.Values{"vmid": {"101"}, "storage": {"local-lvm"}}); err == nil || !strings.Contains(err.Error(), "does not support backup content") {
		t.Errorf("backup to local-lvm: %v", err)
	}
}

func TestConfigDisksAndResize(t *testing.T) {
	e := newEnv(t)
	c := e.client("mcp@pve!admin")
	if _, err := c.Do(ctx, "PUT", "/nodes/pve1/qemu/101/config", url.Values{"scsi1": {"local-lvm:4,discard=on"}}); err != nil {
		t.Fatal(err)
	}
	if v := getMap(t, c, "/nodes/pve1/qemu/101/config", nil)["scsi1"]; v != "local-lvm:vm-101-disk-1,discard=on,size=4G" {
		t.Fatalf("new disk %v", v)
	}
	e.finish(c, mustString(t, c, "PUT", "/nodes/pve1/qemu/101/resize", url.Values{"disk": {"scsi1"}, "size": {"+2G"}}))
	if v := getMap(t, c, "/nodes/pve1/qemu/101/config", nil)["scsi1"]; v != "local-lvm:vm-101-disk-1,discard=on,size=6G" {
		t.Fatalf("resized disk %v", v)
	}
	if _, err := c.Do(ctx, "PUT", "/nodes/pve1/qemu/101/resize", url.Values{"disk": {"scsi1"}, "size": {"1G"}}); err == nil || !strings.Contains(err.Error(), "shrinking disks is not supported") {
		t.Errorf("shrink: %v", err)
	}
	// Deleting the disk keeps it as unused0; deleting unused0 destroys it.
	if _, err := c.Do(ctx, "PUT", "/nodes/pve1/qemu/101/config", url.Values{"delete": {"scsi1"}}); err != nil {
		t.Fatal(err)
	}
	if v := getMap(t, c, "/nodes/pve1/qemu/101/config", nil)["unused0"]; v != "local-lvm:vm-101-disk-1" {
		t.Fatalf("unused0 = %v", v)
	}
	if _, err := c.Do(ctx, "PUT", "/nodes/pve1/qemu/101/config", url.Values{"delete": {"unused0"}}); err != nil {
		t.Fatal(err)
	}
	for _, v := range getList(t, c, "/nodes/pve1/storage/local-lvm/content", url.Values{"vmid": {"101"}}) {
		if v["volid"] == "local-lvm:vm-101-disk-1" {
			t.Error("the deleted unused disk still exists")
		}
	}
	// check_storage_access reads the storage's configuration, which dies.
	if _, err := c.Do(ctx, "PUT", "/nodes/pve1/qemu/101/config", url.Values{"scsi2": {"nosuch:4"}}); err == nil || !strings.Contains(err.Error(), "500 storage 'nosuch' does not exist") {
		t.Errorf("unknown storage: %v", err)
	}
}

func mustString(t *testing.T, c *pve.Client, method, path string, params url.Values) string {
	t.Helper()
	resp, err := c.Do(ctx, method, path, params)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	s, err := resp.String()
	if err != nil {
		t.Fatalf("%s %s: %s", method, path, resp.Data)
	}
	return s
}

func TestTasksAndLogs(t *testing.T) {
	e := newEnv(t)
	c := e.client("mcp@pve!root")
	upid := post(t, c, "/nodes/pve1/services/pveproxy/restart", nil)
	running := getMap(t, c, "/nodes/pve1/tasks/"+url.PathEscape(upid)+"/status", nil)
	if running["status"] != "running" || running["exitstatus"] != nil || running["user"] != "mcp@pve" || running["tokenid"] != "root" {
		t.Errorf("running task status %v", running)
	}
	e.finish(c, upid)
	var lines []pve.LogLine
	resp, err := c.Do(ctx, "GET", "/nodes/pve1/tasks/"+url.PathEscape(upid)+"/log", url.Values{"start": {"0"}, "limit": {"1"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := resp.Decode(&lines); err != nil || len(lines) != 1 || lines[0].N != 1 || resp.Total == nil || *resp.Total != 2 {
		t.Fatalf("first page %v, total %v", lines, resp.Total)
	}
	list := getList(t, c, "/nodes/pve1/tasks", url.Values{"typefilter": {"srvrestart"}})
	if len(list) != 1 || list[0]["status"] != "OK" || list[0]["upid"] != upid {
		t.Errorf("task list %v", list)
	}
	if cl := getList(t, c, "/cluster/tasks", nil); len(cl) == 0 || cl[0]["upid"] != upid {
		t.Errorf("cluster tasks %v", cl)
	}
	// Another token without Sys.Audit cannot read this token's task.
	tok, _ := e.sim.AddToken("bob@pve!t", true)
	e.sim.Grant("/vms", "bob@pve", "PVEVMUser", true)
	e.sim.Grant("/vms", "bob@pve!t", "PVEVMUser", true)
	if _, err := e.clientFor(tok).Do(ctx, "GET", "/nodes/pve1/tasks/"+url.PathEscape(upid)+"/status", nil); !errors.Is(err, pve.ErrPermission) {
		t.Errorf("foreign task status: %v", err)
	}
}

// The same seed gives the same UPIDs, MACs and secrets.
func TestDeterministic(t *testing.T) {
	run := func() (string, string, string) {
		e := newEnv(t)
		c := e.client("mcp@pve!operator")
		upid := post(t, c, "/nodes/pve1/qemu/101/status/start", nil)
		conf := getMap(t, c, "/nodes/pve1/qemu/101/config", nil)
		tok, _ := e.sim.Token("mcp@pve!operator")
		return upid, conf["net0"].(string), tok.Secret
	}
	a1, b1, c1 := run()
	a2, b2, c2 := run()
	if a1 != a2 || b1 != b2 || c1 != c2 {
		t.Errorf("runs differ: %s %s %s / %s %s %s", a1, b1, c1, a2, b2, c2)
	}
}

// Pending values on a running VM: revert drops them, a delete of a
// non-hotpluggable option waits too, and POST …/config applies as a task.
func TestPendingRevertAndAsyncConfig(t *testing.T) {
	e := newEnv(t)
	c := e.client("mcp@pve!admin")
	if _, err := c.Do(ctx, "PUT", "/nodes/pve1/qemu/100/config", url.Values{"cores": {"4"}, "cpu": {"host"}, "delete": {"numa"}}); err != nil {
		t.Fatal(err)
	}
	pending := map[string]map[string]any{}
	for _, p := range getList(t, c, "/nodes/pve1/qemu/100/pending", nil) {
		pending[p["key"].(string)] = p
	}
	if pending["cores"]["pending"] != "4" || pending["cpu"]["pending"] != "host" || pending["numa"]["delete"] != float64(1) {
		t.Fatalf("pending %v", pending)
	}
	if _, err := c.Do(ctx, "PUT", "/nodes/pve1/qemu/100/config", url.Values{"revert": {"cores,numa"}}); err != nil {
		t.Fatal(err)
	}
	conf := getMap(t, c, "/nodes/pve1/qemu/100/config", nil)
	if conf["cores"] != float64(2) || conf["cpu"] != "host" || conf["numa"] != float64(0) {
		t.Errorf("after revert: cores %v cpu %v numa %v", conf["cores"], conf["cpu"], conf["numa"])
	}
	if _, err := c.Do(ctx, "PUT", "/nodes/pve1/qemu/100/config", url.Values{"cores": {"4"}, "revert": {"cores"}}); !errors.Is(err, pve.ErrParameter) {
		t.Errorf("change and revert together: %v", err)
	}
	// A stop applies what is pending.
	e.finish(c, post(t, c, "/nodes/pve1/qemu/100/status/stop", nil))
	for _, p := range getList(t, c, "/nodes/pve1/qemu/100/pending", nil) {
		if p["pending"] != nil || p["delete"] != nil {
			t.Errorf("still pending after the stop: %v", p)
		}
	}
	if cur := getMap(t, c, "/nodes/pve1/qemu/100/config", url.Values{"current": {"1"}}); cur["cpu"] != "host" {
		t.Errorf("the stop did not apply the pending cpu: %v", cur["cpu"])
	}
	// The asynchronous variant changes the config when its task ends.
	upid := post(t, c, "/nodes/pve1/qemu/100/config", url.Values{"memory": {"8192"}})
	if getMap(t, c, "/nodes/pve1/qemu/100/config", nil)["memory"] != "4096" {
		t.Error("POST config applied before its task ended")
	}
	if st := e.finish(c, upid); st.Type != "qmconfig" || st.ExitStatus != "OK" {
		t.Fatalf("qmconfig task %+v", st)
	}
	if m := getMap(t, c, "/nodes/pve1/qemu/100/config", nil)["memory"]; m != "8192" {
		t.Errorf("memory after the task %v", m)
	}
}

// pveproxy checks permissions before the handler validates parameters.
func TestPermissionBeforeValidation(t *testing.T) {
	e := newEnv(t)
	ro := e.client("mcp@pve!read-only")
	_, err := ro.Do(ctx, "POST", "/nodes/pve1/qemu/100/status/start", url.Values{"timeout": {"-1"}})
	if !errors.Is(err, pve.ErrPermission) {
		t.Errorf("unprivileged call with bad parameters: %v, want 403", err)
	}
}

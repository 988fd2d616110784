package sim

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const samples = "../../../shared/fixtures/pve-responses"

// sample reads a real PVE response body.
func sample(t *testing.T, name string) map[string]any {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(samples, name))
	if os.IsNotExist(err) {
		t.Skipf("real PVE response %s is not here: ../shared/fixtures must sit beside the repository", name)
	}
	if err != nil {
		t.Fatal(err)
	}
	var body map[string]any
	if err := json.Unmarshal(raw, &body); err != nil {
		t.Fatal(err)
	}
	return body
}

// rawCall makes a request with the root token and returns status and body.
func (e *env) rawCall(method, path string) (int, string, map[string]any) {
	e.t.Helper()
	tok, _ := e.sim.Token("root@pam!sim")
	req, _ := http.NewRequest(method, e.srv.URL+APIPrefix+path, nil)
	req.Header.Set("Authorization", tok.Header())
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var body map[string]any
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &body); err != nil {
			e.t.Fatalf("%s %s: body is not JSON: %s", method, path, raw)
		}
	}
	return resp.StatusCode, resp.Status, body
}

func kind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case float64:
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}

// dynamicKeys are objects keyed by names that differ from host to host
// (disks, taps, parameters): their values are compared, not their keys.
var dynamicKeys = map[string]bool{"blockstat": true, "nics": true, "errors": true}

// sameShape checks that sim has every key of real with the same JSON type,
// recursively for objects, except the keys excused (with their reason).
func sameShape(t *testing.T, where string, real, sim any, excused map[string]string) {
	t.Helper()
	if kind(real) != kind(sim) {
		t.Errorf("%s: real is %s, simulator gives %s (%v)", where, kind(real), kind(sim), sim)
		return
	}
	ro, ok := real.(map[string]any)
	if !ok {
		return
	}
	so := sim.(map[string]any)
	if dynamicKeys[where[strings.LastIndexByte(where, '.')+1:]] {
		if len(so) == 0 && len(ro) > 0 {
			t.Errorf("%s: empty, real has %d entries", where, len(ro))
		}
		for rk, rv := range ro {
			for sk, sv := range so {
				sameShape(t, where+"["+rk+"~"+sk+"]", rv, sv, nil)
				break
			}
		}
		return
	}
	for k, rv := range ro {
		path := where + "." + k
		if _, ok := excused[k]; ok {
			continue
		}
		sv, ok := so[k]
		if !ok {
			t.Errorf("%s: missing (real value %v)", path, rv)
			continue
		}
		sameShape(t, path, rv, sv, nil)
	}
}

// pick finds the first object of a list whose fields match.
func pick(t *testing.T, list any, match map[string]any) map[string]any {
	t.Helper()
	items, _ := list.([]any)
	for _, it := range items {
		obj, _ := it.(map[string]any)
		ok := true
		for k, v := range match {
			if obj[k] != v {
				ok = false
			}
		}
		if ok {
			return obj
		}
	}
	t.Fatalf("no entry matching %v in %v", match, list)
	return nil
}

// The simulator's answers have the keys and value types of real PVE
// answers for the same endpoints (../shared/fixtures/pve-responses).
func TestShapesMatchRealSamples(t *testing.T) {
	e := newEnv(t)
	simGet := func(path string) any {
		code, line, body := e.rawCall("GET", path)
		if code != 200 {
			t.Fatalf("GET %s: %s", path, line)
		}
		return body["data"]
	}
	for _, tc := range []struct {
		sample string
		path   string
		match  map[string]any // for lists: which real and simulated entries to compare
		simAt  map[string]any // for lists: the simulated entry, when it differs from match
		excuse map[string]string
	}{
		{sample: "version__pve7.2-3__proxmoxer.json", path: "/version"},
		{sample: "nodes_node_version__pve7.4-16__go-proxmox-pve7x.json", path: "/nodes/pve1/version"},
		{sample: "nodes__go-proxmox-pve8x.json", path: "/nodes", match: map[string]any{"status": "online"}},
		{sample: "nodes_node_status__pve9.1.2__pveXport.json", path: "/nodes/pve1/status"},
		{sample: "nodes_node_qemu__community-proxmox.json", path: "/nodes/pve1/qemu", match: map[string]any{"status": "running"}},
		{sample: "nodes_node_qemu__community-proxmox.json", path: "/nodes/pve1/qemu", match: map[string]any{"status": "stopped"}},
		{sample: "nodes_node_lxc__community-proxmox.json", path: "/nodes/pve1/lxc", match: map[string]any{"status": "running"}},
		{sample: "nodes_node_lxc__community-proxmox.json", path: "/nodes/pve2/lxc", match: map[string]any{"status": "stopped"}},
		{sample: "nodes_node_lxc__pve7__go-proxmox-pve7x.json", path: "/nodes/pve1/lxc", match: map[string]any{"status": "running"}},
		{sample: "cluster_resources__go-proxmox-pve8x.json", path: "/cluster/resources", match: map[string]any{"type": "qemu", "status": "running"}},
		{sample: "cluster_resources__go-proxmox-pve8x.json", path: "/cluster/resources", match: map[string]any{"type": "node"}},
		{sample: "cluster_resources__go-proxmox-pve8x.json", path: "/cluster/resources", match: map[string]any{"type": "storage"}},
		{sample: "cluster_resources_type_vm__community-proxmox.json", path: "/cluster/resources?type=vm", match: map[string]any{"type": "lxc"}},
		{sample: "cluster_resources__packer-plugin-proxmox.json", path: "/cluster/resources", match: map[string]any{"type": "qemu", "status": "stopped"}},
		{sample: "qemu_config_100_with_digest__packer-plugin-proxmox.json", path: "/nodes/pve1/qemu/100/config"},
		{sample: "qemu_config_101_with_digest__packer-plugin-proxmox.json", path: "/nodes/pve1/qemu/101/config"},
		{sample: "qemu_config_102_template_with_digest__packer-plugin-proxmox.json", path: "/nodes/pve1/qemu/9000/config"},
		{sample: "lxc_config_with_digest__go-proxmox-pve7x.json", path: "/nodes/pve1/lxc/200/config", excuse: map[string]string{
			"lxc": "raw lxc.* keys exist only where an operator added them by hand",
			"mp0": "the sample container has a bind mount; the simulated ones do not",
		}},
		{sample: "lxc_snapshot_list__go-proxmox-pve7x.json", path: "/nodes/pve1/qemu/100/snapshot", match: map[string]any{"name": "current"}},
		{sample: "qemu_status_current__pve7__go-proxmox-pve7x.json", path: "/nodes/pve1/qemu/100/status/current", excuse: map[string]string{
			"balloon_min": "present only when a minimum balloon size is configured",
		}},
		{sample: "nodes_node_tasks__pve6.4-8__community-proxmox.json", path: "/nodes/pve1/tasks", match: map[string]any{"status": "OK"}},
		{sample: "task_status_running__proxmoxer.json", path: "TASK-RUNNING"},
		{sample: "task_status_stopped_ok__proxmoxer.json", path: "TASK-STOPPED"},
	} {
		name := tc.sample + " " + tc.path
		if tc.match != nil {
			name += fmt.Sprint(tc.match)
		}
		t.Run(name, func(t *testing.T) {
			real := sample(t, tc.sample)["data"]
			var sim any
			switch tc.path {
			case "TASK-RUNNING", "TASK-STOPPED", "/nodes/pve1/tasks":
				c := e.client("root@pam!sim")
				upid := post(t, c, "/nodes/pve1/services/cron/restart", nil)
				if tc.path != "TASK-RUNNING" {
					e.finish(c, upid)
				}
				if tc.path == "/nodes/pve1/tasks" {
					sim = simGet(tc.path)
				} else {
					sim = simGet("/nodes/pve1/tasks/" + upid + "/status")
				}
			default:
				sim = simGet(tc.path)
			}
			if tc.match != nil {
				realEntry := pick(t, real, tc.match)
				m := tc.match
				if tc.simAt != nil {
					m = tc.simAt
				}
				sameShape(t, tc.path, realEntry, pick(t, sim, m), tc.excuse)
				return
			}
			sameShape(t, tc.path, real, sim, tc.excuse)
		})
	}
}

// Error bodies and status lines as PVE sends them.
func TestErrorBodiesMatchRealSamples(t *testing.T) {
	e := newEnv(t)
	code, line, body := e.rawCall("POST", "/nodes/pve1/qemu/100/status/start?timeout=x&vmid=100")
	real := sample(t, "error_400_parameter_verification__body__whmcs-issue92.json")
	if code != 400 || line != "400 Parameter verification failed." {
		t.Errorf("status line %q", line)
	}
	sameShape(t, "400", real, body, nil)
	errs := body["errors"].(map[string]any)
	if msg, _ := errs["timeout"].(string); !strings.HasSuffix(msg, "\n") || !strings.HasPrefix(msg, "type check ('integer') failed") {
		t.Errorf("parameter message %q: PVE ends each with a newline", msg)
	}
	if body["message"] != "Parameter verification failed.\n" {
		t.Errorf("message %q", body["message"])
	}

	tok, _ := e.sim.AddToken("nobody@pve!t", true)
	req, _ := http.NewRequest("POST", e.srv.URL+APIPrefix+"/nodes/pve1/qemu/100/status/stop", nil)
	req.Header.Set("Authorization", tok.Header())
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var body403 map[string]any
	json.Unmarshal(raw, &body403) //nolint:errcheck // checked by shape
	if resp.Status != "403 Permission check failed (/vms/100, VM.PowerMgmt)" {
		t.Errorf("403 status line %q", resp.Status)
	}
	sameShape(t, "403", sample(t, "error_403_permission_check_failed__body__packer-issue213.json"), body403, nil)
	if resp.Header.Get("Server") != "pve-api-daemon/3.0" {
		t.Errorf("Server header %q", resp.Header.Get("Server"))
	}

	req, _ = http.NewRequest("GET", e.srv.URL+APIPrefix+"/version", nil)
	resp, err = e.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.Status != "401 No ticket" || len(raw) != 0 {
		t.Errorf("no credentials: %q with %d bytes", resp.Status, len(raw))
	}
}

// Large answers are gzip-compressed when the client asks, as pveproxy does.
func TestCompressedResponses(t *testing.T) {
	e := newEnv(t)
	tok, _ := e.sim.Token("root@pam!sim")
	req, _ := http.NewRequest("GET", e.srv.URL+APIPrefix+"/nodes/pve1/services", nil)
	req.Header.Set("Authorization", tok.Header())
	req.Header.Set("Accept-Encoding", "gzip")
	tr := e.srv.Client().Transport.(*http.Transport).Clone()
	tr.DisableCompression = true // see the raw encoding
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.Header.Get("Content-Encoding") != "gzip" {
		t.Errorf("Content-Encoding %q", resp.Header.Get("Content-Encoding"))
	}
}

// Every endpoint of the schema answers: a semantic or directory handler,
// or 501 after validating its parameters; none panics.
func TestEveryEndpointAnswers(t *testing.T) {
	e := newEnv(t)
	tok, _ := e.sim.Token("root@pam!sim")
	for _, ep := range registry(t).Endpoints() {
		path := ep.Path
		for _, v := range ep.PathParams {
			val := map[string]string{"node": "pve1", "vmid": "100", "storage": "local", "snapname": "before-upgrade"}[v]
			if val == "" {
				val = "x1"
			}
			path = strings.ReplaceAll(path, "{"+v+"}", val)
		}
		req, _ := http.NewRequest(ep.Method, e.srv.URL+APIPrefix+path, nil)
		req.Header.Set("Authorization", tok.Header())
		resp, err := e.srv.Client().Do(req)
		if err != nil {
			t.Fatalf("%s: %v", ep.Key(), err)
		}
		resp.Body.Close()
		if resp.StatusCode == 0 || resp.StatusCode >= 600 {
			t.Errorf("%s: status %d", ep.Key(), resp.StatusCode)
		}
	}
	cov := e.sim.Coverage()
	if cov.Semantic < 80 || cov.Semantic+cov.Directory+cov.NotSimulated != cov.Endpoints || !slices.Contains(cov.Handled, "POST /nodes/{node}/qemu/{vmid}/status/start") {
		t.Errorf("coverage %+v", cov)
	}
}

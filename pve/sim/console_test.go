package sim

import (
	"encoding/json"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"
)

var reVNCTicket = regexp.MustCompile(`^PVEVNC:[0-9A-F]{8}::[A-Za-z0-9+/]+=*$`)

// A console answers PVE's ticket, port and worker: a VM's VNC password
// also prefixes its ticket; each running proxy holds its own port; the
// worker ends when no connection comes within 10 s.
func TestConsoleProxies(t *testing.T) {
	e := newPermEnv(t)
	var first map[string]any
	for i, tc := range []struct {
		path     string
		password bool
		args     map[string]string
	}{
		{"/nodes/pve1/qemu/100/vncproxy", true, nil},
		{"/nodes/pve1/qemu/100/termproxy", false, nil},
		{"/nodes/pve2/lxc/201/vncproxy", false, nil},
		{"/nodes/pve2/lxc/201/vncproxy", true, map[string]string{"websocket": "1"}},
		{"/nodes/pve2/lxc/201/termproxy", false, nil},
	} {
		args := v()
		for k, val := range tc.args {
			args.Set(k, val)
		}
		a := e.do("mcp@pve!admin", "POST", tc.path, args)
		if a.String() != "ok" {
			t.Fatalf("%s: %s", tc.path, a)
		}
		var got map[string]any
		json.Unmarshal(a.data, &got) //nolint:errcheck // checked below
		ticket, _ := got["ticket"].(string)
		pw, hasPW := got["password"].(string)
		if hasPW != tc.password || (hasPW && (len(pw) != 8 || !strings.HasPrefix(ticket, pw+":"))) {
			t.Errorf("%s: password %q in %v", tc.path, pw, got)
		}
		if !reVNCTicket.MatchString(strings.TrimPrefix(ticket, pw+":")) || got["user"] != "mcp@pve!admin" {
			t.Errorf("%s: ticket %q user %v", tc.path, ticket, got["user"])
		}
		if upid, _ := got["upid"].(string); !strings.Contains(upid, ":vncproxy:") {
			t.Errorf("%s: upid %q", tc.path, upid)
		}
		if i == 0 {
			first = got
		} else if tc.path == "/nodes/pve1/qemu/100/termproxy" && got["port"] == first["port"] {
			t.Errorf("two running proxies on one node share port %v", got["port"])
		}
	}
	if a := e.do("mcp@pve!admin", "POST", "/nodes/pve1/qemu/999/vncproxy", v()); a.status != 500 || !strings.Contains(a.msg, "does not exist") {
		t.Errorf("a VM that does not exist: %s", a)
	}
	e.clock.Advance(11 * time.Second)
	st := e.do("mcp@pve!admin", "GET", "/nodes/pve1/tasks/"+first["upid"].(string)+"/status", v())
	if !strings.Contains(string(st.data), `"exitstatus":"connection timed out"`) {
		t.Errorf("the proxy after 11 s without a connection: %s", st.data)
	}
}

// download-url checks the storage, content and file name as pve-storage
// does; its task leaves the file in the storage and refuses to overwrite.
func TestDownloadURL(t *testing.T) {
	e := newPermEnv(t)
	const path = "/nodes/pve1/storage/local/download-url"
	for _, tc := range []struct {
		args url.Values
		want string
	}{
		{v("url", "https://example.com/x.iso", "content", "iso", "filename", "x.txt"), "400 filename: wrong file extension"},
		{v("url", "https://example.com/x.iso", "content", "import", "filename", "x.iso"), "500 storage 'local' is not configured for content-type 'import'"},
		{v("url", "ftp://example.com/x.iso", "content", "iso", "filename", "x.iso"), "400 url: value does not match the regex pattern"},
	} {
		if got := e.do("mcp@pve!admin", "POST", path, tc.args).String(); got != tc.want {
			t.Errorf("%v: %s, want %s", tc.args, got, tc.want)
		}
	}
	if got := e.do("mcp@pve!admin", "POST", "/nodes/pve1/storage/local-lvm/download-url", v("url", "https://example.com/x.iso", "content", "iso", "filename", "x.iso")).String(); got != "500 can't upload to storage type 'lvmthin', not a file based storage!" {
		t.Errorf("an LVM storage: %s", got)
	}
	a := e.do("mcp@pve!admin", "POST", path, v("url", "https://example.com/d 13.iso", "content", "iso", "filename", "../d 13.iso"))
	var upid string
	json.Unmarshal(a.data, &upid) //nolint:errcheck // checked below
	if !strings.Contains(upid, ":download:d_13.iso:") {
		t.Fatalf("download: %s %s", a, a.data)
	}
	e.clock.Advance(21 * time.Second)
	content := e.do("mcp@pve!admin", "GET", "/nodes/pve1/storage/local/content", v("content", "iso"))
	if !strings.Contains(string(content.data), `"local:iso/d_13.iso"`) {
		t.Fatalf("the downloaded file is not in the storage: %s", content.data)
	}
	a = e.do("mcp@pve!admin", "POST", path, v("url", "https://example.com/d.iso", "content", "iso", "filename", "d_13.iso"))
	json.Unmarshal(a.data, &upid) //nolint:errcheck // checked below
	e.clock.Advance(21 * time.Second)
	st := e.do("mcp@pve!admin", "GET", "/nodes/pve1/tasks/"+upid+"/status", v())
	if !strings.Contains(string(st.data), "refusing to override existing file") {
		t.Errorf("a second download of the same name: %s", st.data)
	}
}

// A node's terminal is a login prompt for an API token: get_shell_command
// runs a shell directly only for root@pam.
func TestNodeTermProxy(t *testing.T) {
	e := newPermEnv(t)
	a := e.do("mcp@pve!admin", "POST", "/nodes/pve1/termproxy", v())
	var got map[string]any
	json.Unmarshal(a.data, &got) //nolint:errcheck // checked below
	upid, _ := got["upid"].(string)
	if a.String() != "ok" || !reVNCTicket.MatchString(fmt.Sprint(got["ticket"])) || !strings.Contains(upid, ":vncshell::") {
		t.Fatalf("%s %v", a, got)
	}
	log := e.do("mcp@pve!admin", "GET", "/nodes/pve1/tasks/"+upid+"/log", v())
	if !strings.Contains(string(log.data), "running /bin/login") || strings.Contains(string(log.data), "-f root") {
		t.Errorf("a token's terminal: %s", log.data)
	}
}

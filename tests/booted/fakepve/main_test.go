package main

import (
	"bytes"
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/proxmox-mcp/proxmox-mcp/pve/sim"
	"github.com/proxmox-mcp/proxmox-mcp/schema"
)

type call struct {
	args []string
	code int
	out  string // a substring of stdout, or of stderr when code != 0
}

func pveumRun(t *testing.T, etc string, c call) string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run("pveum", c.args, etc, &stdout, &stderr)
	if code != c.code {
		t.Fatalf("pveum %s: exit %d, want %d\nstdout: %s\nstderr: %s", strings.Join(c.args, " "), code, c.code, &stdout, &stderr)
	}
	seen := stdout.String()
	if code != 0 {
		seen = stderr.String()
	}
	if !strings.Contains(seen, c.out) {
		t.Fatalf("pveum %s: %q lacks %q", strings.Join(c.args, " "), seen, c.out)
	}
	return stdout.String()
}

// TestPveumAsInstallUsesIt runs what proxmox-mcp install runs, with PVE's
// answers, and checks that the simulator reading the same files accepts
// the token with the roles granted.
func TestPveumAsInstallUsesIt(t *testing.T) {
	etc := t.TempDir()
	const user = "proxmox-mcp@pve"
	for _, c := range []call{
		{args: []string{"user", "list", "--output-format", "json"}, out: `"userid":"root@pam"`},
		{args: []string{"user", "add", user, "--comment", "proxmox-mcp: daemon"}},
		{args: []string{"user", "add", user}, code: 255, out: "create user failed: user 'proxmox-mcp@pve' already exists"},
		{args: []string{"role", "add", "PMCPOperator", "--privs", "VM.PowerMgmt,VM.Snapshot"}},
		{args: []string{"role", "add", "PMCPOperator", "--privs", "VM.PowerMgmt"}, code: 255, out: "already exists"},
		{args: []string{"role", "modify", "PMCPOperator", "--privs", "VM.PowerMgmt,VM.Snapshot,VM.Backup"}},
		{args: []string{"role", "add", "Bad", "--privs", "VM.Everything"}, code: 255, out: "invalid privilege 'VM.Everything'"},
		{args: []string{"role", "list", "--output-format", "json"}, out: `{"privs":"VM.Backup,VM.PowerMgmt,VM.Snapshot","roleid":"PMCPOperator","special":0}`},
		{args: []string{"acl", "modify", "/", "--users", user, "--roles", "Administrator", "--propagate", "1"}},
		{args: []string{"acl", "modify", "/", "--tokens", user + "!operator", "--roles", "PVEAuditor"}, code: 255, out: "no such token 'operator'"},
		{args: []string{"user", "token", "list", user, "--output-format", "json"}, out: "[]"},
		{args: []string{"acl", "modify", "/", "--users", user, "--roles", "Nope"}, code: 255, out: "role 'Nope' does not exist"},
		{args: []string{"frobnicate", "x"}, code: 255, out: "unknown command 'pveum frobnicate x'"},
	} {
		pveumRun(t, etc, c)
	}
	out := pveumRun(t, etc, call{args: []string{"user", "token", "add", user, "operator", "--privsep", "1", "--comment", "operator tier", "--output-format", "json"}})
	var tok struct {
		Full  string `json:"full-tokenid"`
		Value string `json:"value"`
		Info  struct {
			Privsep int `json:"privsep"`
		} `json:"info"`
	}
	if err := json.Unmarshal([]byte(out), &tok); err != nil || tok.Full != user+"!operator" || len(tok.Value) != 36 || tok.Info.Privsep != 1 {
		t.Fatalf("token add printed %s (%v)", out, err)
	}
	pveumRun(t, etc, call{args: []string{"user", "token", "add", user, "operator", "--output-format", "json"}, code: 255, out: "Token already exists."})
	pveumRun(t, etc, call{args: []string{"acl", "modify", "/", "--tokens", user + "!operator", "--roles", "PVEAuditor,PMCPOperator", "--propagate", "1"}})
	pveumRun(t, etc, call{args: []string{"acl", "list", "--output-format", "json"}, out: `{"path":"/","propagate":1,"roleid":"PMCPOperator","type":"token","ugid":"proxmox-mcp@pve!operator"}`})
	if data, err := os.ReadFile(filepath.Join(etc, "priv/token.cfg")); err != nil || string(data) != tok.Full+" "+tok.Value+"\n" {
		t.Fatalf("token.cfg = %q, %v", data, err)
	}

	reg, err := schema.Parse(sim.DemoSchema())
	if err != nil {
		t.Fatal(err)
	}
	s, err := sim.New(sim.Options{Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	n, err := sim.OpenNodeDir(s, etc)
	if err != nil {
		t.Fatal(err)
	}
	do := func(method, path string) int {
		req := httptest.NewRequest(method, sim.APIPrefix+path, nil)
		req.Header.Set("Authorization", "PVEAPIToken="+tok.Full+"="+tok.Value)
		rec := httptest.NewRecorder()
		n.ServeHTTP(rec, req)
		return rec.Code
	}
	if code := do("POST", "/nodes/pve1/qemu/101/status/start"); code != 200 {
		t.Errorf("the operator token's start: %d, want 200", code)
	}
	if code := do("DELETE", "/nodes/pve1/qemu/101"); code != 403 {
		t.Errorf("the operator token's destroy: %d, want 403", code)
	}

	// Removal as uninstall --purge does it: the token's ACL, the user (its
	// ACL and tokens with it; PVE leaves token.cfg alone), the role.
	pveumRun(t, etc, call{args: []string{"acl", "delete", "/", "--tokens", user + "!operator", "--roles", "PVEAuditor,PMCPOperator"}})
	pveumRun(t, etc, call{args: []string{"user", "delete", user}})
	pveumRun(t, etc, call{args: []string{"user", "delete", user}, code: 255, out: "no such user ('proxmox-mcp@pve')"})
	pveumRun(t, etc, call{args: []string{"role", "delete", "PMCPOperator"}})
	if code := do("GET", "/version"); code != 401 {
		t.Errorf("the token of a deleted user: %d, want 401", code)
	}
	data, err := os.ReadFile(filepath.Join(etc, "user.cfg"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), "proxmox-mcp") || strings.Contains(string(data), "PMCPOperator") {
		t.Errorf("user.cfg after the removal:\n%s", data)
	}
}

func TestPveversion(t *testing.T) {
	var out bytes.Buffer
	if code := run("pveversion", nil, t.TempDir(), &out, &out); code != 0 || !strings.HasPrefix(out.String(), "pve-manager/9.") {
		t.Fatalf("pveversion: %d %q", code, out.String())
	}
}

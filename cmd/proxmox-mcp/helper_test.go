package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestHelperEndToEnd runs the real binary three ways at once, as on a
// host: `key create` as root (root's copy of the keys), `helper` as root
// on its socket, and `stdio` with the key, which gives up root for the
// state directory's owner and reads and writes a host file through the
// helper. The helper sees the daemon's uid from the kernel and journals
// in its own root-only directory.
func TestHelperEndToEnd(t *testing.T) {
	// The state's owner walks to its files from / (as /var/lib lets the
	// daemon's user), opening each directory.
	work := rootWork(t, "the helper is root's", 0o755)
	// The configuration's directory is refused to the helper (it holds
	// the tokens): its own, beside the host files.
	if err := os.Mkdir(filepath.Join(work, "etc"), 0o755); err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(work, "etc", "cfg.hujson")
	if _, err := simulatorConfig(work, cfgPath, t.Cleanup); err != nil {
		t.Fatal(err)
	}
	srv, sock := filepath.Join(work, "srv"), filepath.Join(work, "helper.sock")
	if err := os.Mkdir(srv, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(srv, "app.conf"), []byte("port = 8080\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := os.ReadFile(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	hostCfg := `"allow_mutations": true,
  "host": {"roots": [{"path": "` + srv + `", "write": true}], "socket": "` + sock + `"},`
	if err := os.WriteFile(cfgPath, []byte(strings.Replace(string(cfg), `"allow_mutations": true,`, hostCfg, 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	chownAll(t, filepath.Join(work, "tokens"), stateUID, stateUID)
	state := filepath.Join(work, "state")
	if err := os.Mkdir(state, 0o750); err != nil {
		t.Fatal(err)
	}
	chownAll(t, state, stateUID, stateUID)
	bin := commandLink(t)

	out, err := runCLI(bin, "key", "create", "--config", cfgPath, "--name", "alice", "--profile", "admin", "--json")
	if err != nil {
		t.Fatalf("key create: %v\n%s", err, out)
	}
	var created struct{ Key string }
	if err := json.Unmarshal(out[strings.IndexByte(string(out), '{'):], &created); err != nil {
		t.Fatalf("key create: %v\n%s", err, out)
	}
	keyFile := filepath.Join(work, "alice.key")
	if err := os.WriteFile(keyFile, []byte(created.Key+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	helper := exec.Command(bin, "helper", "--config", cfgPath, "--socket", sock, "--idle", "0")
	helper.Env = cliEnv()
	var helperErr strings.Builder
	helper.Stderr = &helperErr
	if err := helper.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { helper.Process.Kill(); helper.Wait() }) //nolint:errcheck // ended by the test
	for deadline := time.Now().Add(30 * time.Second); ; {
		if _, err := os.Stat(sock); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the helper made no socket:\n%s", helperErr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	wantOwner(t, sock, 0)

	s := startStdio(t, bin, "--config", cfgPath, "--key-file", keyFile)
	res := s.request(t, "tools/call", map[string]any{"name": "proxmox_host_file_read", "arguments": map[string]any{"path": srv + "/app.conf"}})
	var r struct {
		IsError    bool           `json:"isError"`
		Structured map[string]any `json:"structuredContent"`
	}
	if err := json.Unmarshal(res, &r); err != nil || r.IsError || r.Structured["data"] != "port = 8080\n" {
		t.Fatalf("read through the helper: %v %s\nhelper: %s", err, res, helperErr.String())
	}
	res = s.request(t, "tools/call", map[string]any{"name": "proxmox_host_file_read", "arguments": map[string]any{"path": state + "/keys.json"}})
	if err := json.Unmarshal(res, &r); err != nil || !r.IsError || !strings.Contains(string(res), "not beneath an allowed root") {
		t.Errorf("the daemon's own keys through the helper: %s", res)
	}
	s.close(t)

	// The helper's journal is root's, beside the state directory; it
	// holds the read, by alice.
	hj := state + "-helper"
	wantOwner(t, hj, 0)
	out, err = runCLI(bin, "audit", "tail", "--journal", filepath.Join(hj, "journal.db"), "--json")
	if err != nil || !strings.Contains(string(out), `"tool":"proxmox_host_file_read"`) || !strings.Contains(string(out), `"key_name":"alice"`) {
		t.Errorf("the helper's journal: %v\n%s", err, out)
	}
}

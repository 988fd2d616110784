package tests

import (
	"bufio"
	"context"
	"encoding/json"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/proxmox-mcp/proxmox-mcp/pve"
)

// The built binary runs the simulator over HTTPS; the PVE client, pinning
// the fingerprint it prints, starts a VM and waits for the task, and the
// process stops cleanly on SIGTERM.
func TestSimulatorBinary(t *testing.T) {
	apidoc := fixture(t, "pve-9.1/apidoc.js")
	cmd := exec.Command(binary(t), "sim", "--apidoc", apidoc, "--listen", "127.0.0.1:0", "--json", "--task-duration", "0.05")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	line, err := bufio.NewReader(stdout).ReadBytes('\n')
	if err != nil {
		t.Fatalf("no ready line: %v", err)
	}
	var ready struct {
		URL         string `json:"url"`
		Fingerprint string `json:"fingerprint"`
		Tokens      []struct{ ID, Secret string }
	}
	if err := json.Unmarshal(line, &ready); err != nil {
		t.Fatalf("ready line %s: %v", line, err)
	}
	var secret string
	for _, tok := range ready.Tokens {
		if tok.ID == "mcp@pve!operator" {
			secret = tok.Secret
		}
	}
	c, err := pve.New(pve.Config{BaseURL: ready.URL, Token: pve.Token{ID: "mcp@pve!operator", Secret: pve.Secret(secret)},
		TLS: pve.TLSTrust{Fingerprints: []string{ready.Fingerprint}}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	resp, err := c.Do(ctx, "POST", "/nodes/pve1/qemu/101/status/start", nil)
	if err != nil {
		t.Fatal(err)
	}
	upid, _ := resp.String()
	res, err := c.WaitTask(ctx, upid, pve.WaitOptions{MinInterval: 20 * time.Millisecond})
	if err != nil || res.ExitStatus != "OK" {
		t.Fatalf("start task: %+v, %v", res, err)
	}
	var st map[string]any
	if err := c.Get(ctx, "/nodes/pve1/qemu/101/status/current", nil, &st); err != nil || st["status"] != "running" {
		t.Fatalf("status %v, %v", st["status"], err)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("simulator exit: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the simulator did not stop on SIGTERM")
	}
}

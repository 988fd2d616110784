package daemon

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/proxmox-mcp/proxmox-mcp/breakglass"
	"github.com/proxmox-mcp/proxmox-mcp/host"
	"github.com/proxmox-mcp/proxmox-mcp/journal"
	"github.com/proxmox-mcp/proxmox-mcp/tools"
)

// startTestDemo runs the demo with a key of profile on a temporary state
// directory until the test ends, and returns what it said once ready.
func startTestDemo(t *testing.T, profile string) (DemoInfo, func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	infos, done := make(chan DemoInfo, 1), make(chan error, 1)
	go func() {
		done <- RunDemo(ctx, DemoOptions{Listen: "127.0.0.1:0", Profile: profile, StateDir: t.TempDir(), TaskDuration: 0.01, Logger: quietLogger()},
			func(info DemoInfo) { infos <- info })
	}()
	stopped := false
	stop := func() error {
		if stopped {
			return nil
		}
		stopped = true
		cancel()
		return <-done
	}
	t.Cleanup(func() { stop() }) //nolint:errcheck // the test's end
	select {
	case info := <-infos:
		return info, stop
	case err := <-done:
		stopped = true
		t.Fatalf("the demo ended before it was ready: %v", err)
	case <-time.After(60 * time.Second):
		t.Fatal("the demo was not ready in 60 s")
	}
	return DemoInfo{}, nil
}

// TestDemoBreakglassEndToEnd: in the demo, the demo key (profile root)
// asks to delete a file of the protected demo repository and confirms
// with its phrase; its own key cannot approve; the approver's key reads
// and approves the digest; the demo's runner executes it, the file is
// gone, the status says done, and the helper's journal holds the runner's
// row.
func TestDemoBreakglassEndToEnd(t *testing.T) {
	info, stop := startTestDemo(t, "root")
	if info.ApproverKey == "" || info.ApproverKey == info.Key || info.HostDir == "" {
		t.Fatalf("the demo's info: %+v", info)
	}
	repo := filepath.Join(info.HostDir, "mnt", "model-repo")
	if info.Repository != repo {
		t.Fatalf("the repository is %q, want %q", info.Repository, repo)
	}
	target := filepath.Join(repo, "README.md")
	for _, f := range []string{target, filepath.Join(repo, "llama", "config.json"), filepath.Join(repo, "llama", "weights.bin")} {
		if _, err := os.Stat(f); err != nil {
			t.Fatalf("the demo repository: %v", err)
		}
	}
	agent, agentCtx := connectMCP(t, info.URL, info.Key, nil, "loopback")
	person, personCtx := connectMCP(t, info.URL, info.ApproverKey, nil, "loopback")

	// The host tools reach the demo host through the demo's helper; a
	// direct write to the repository is not how it changes.
	res, out := callTool(t, agent, agentCtx, tools.ToolHostList, map[string]any{"path": filepath.Join(info.HostDir, "var", "log")})
	if res.IsError || !strings.Contains(resultText(res)+toJSON(out), "syslog") {
		t.Fatalf("list the demo host's logs: %s", resultText(res))
	}
	res, _ = callTool(t, agent, agentCtx, tools.ToolHostWrite, map[string]any{"path": target, "content": "replaced\n"})
	if !res.IsError || !strings.Contains(resultText(res), "proxmox_breakglass_request") {
		t.Fatalf("a direct write to the protected repository: %s", resultText(res))
	}
	// srv is the demo host's to write: replacing a file works as the
	// demo's user too (a new one is root's unless uid and gid are given).
	sum := sha256.Sum256([]byte("hello\n"))
	notes := filepath.Join(info.HostDir, "srv", "notes.txt")
	res, _ = callTool(t, agent, agentCtx, tools.ToolHostWrite, map[string]any{"path": notes, "content": "hello\n", "sha256": hex.EncodeToString(sum[:])})
	if got, _ := os.ReadFile(notes); res.IsError || string(got) != "hello\n" {
		t.Fatalf("write srv/notes.txt: %s", resultText(res))
	}

	res, out = callTool(t, agent, agentCtx, tools.ToolBreakglassRequest, map[string]any{"operation": map[string]any{"kind": "delete_file", "path": target}})
	if res.IsError || out["state"] != breakglass.StateAwaitingConfirmation {
		t.Fatalf("request: %s", resultText(res))
	}
	id := out["preview"].(map[string]any)["id"].(string)
	digest, phrase := out["digest"].(string), out["phrase"].(string)
	if res, _ := callTool(t, agent, agentCtx, tools.ToolBreakglassConfirm, map[string]any{"id": id, "phrase": phrase}); res.IsError {
		t.Fatalf("confirm: %s", resultText(res))
	}
	// The requester's own key never approves.
	if res, _ := callTool(t, agent, agentCtx, tools.ToolBreakglassApprove, map[string]any{"id": id, "digest": digest}); !res.IsError || !strings.Contains(resultText(res), "own approver") {
		t.Fatalf("self-approval: %s", resultText(res))
	}
	if _, err := os.Stat(target); err != nil {
		t.Fatalf("the file went before its approval: %v", err)
	}
	res, out = callTool(t, person, personCtx, tools.ToolBreakglassApprove, map[string]any{"id": id, "digest": digest})
	if res.IsError || (out["state"] != breakglass.StateQueued && out["state"] != breakglass.OutcomeDone) {
		t.Fatalf("approve: %s", resultText(res))
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		res, out = callTool(t, agent, agentCtx, tools.ToolBreakglassStatus, map[string]any{"id": id})
		if res.IsError {
			t.Fatalf("status: %s", resultText(res))
		}
		if out["state"] == breakglass.OutcomeDone {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not done in 10 s: %s", resultText(res))
		}
		time.Sleep(100 * time.Millisecond)
	}
	if _, err := os.Stat(target); !os.IsNotExist(err) {
		t.Fatalf("the runner did not delete %s: %v", target, err)
	}

	// The helper's journal, read once the demo has closed it, holds the
	// runner's row by the requester, approved by the approver.
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	j, err := journal.Open(context.Background(), filepath.Join(host.HelperDir(filepath.Join(info.StateDir, "state")), "journal.db"), journal.Options{Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	evs, err := j.Tail(context.Background(), 100)
	if err != nil {
		t.Fatal(err)
	}
	var row *journal.Event
	for i, e := range evs {
		if e.Tool == "breakglass run" && e.JobID == id {
			row = &evs[i]
		}
	}
	switch {
	case row == nil:
		t.Fatalf("no runner's row for %s in the helper's journal", id)
	case row.Outcome != journal.OutcomeOK || row.Principal.KeyName != "demo-root" || !strings.Contains(string(row.Args), "demo-approver"):
		t.Fatalf("the runner's row: %+v %s", row, row.Args)
	}
}

func toJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// TestDemoHostOnlyForAdminAndRoot: an operator's demo has no host (its
// policy reaches none of the host's files), so no approver's key and no
// host or break-glass tool.
func TestDemoHostOnlyForAdminAndRoot(t *testing.T) {
	info, _ := startTestDemo(t, "operator")
	if info.HostDir != "" || info.Repository != "" || info.ApproverKey != "" {
		t.Fatalf("an operator's demo has a host: %+v", info)
	}
	c, ctx := connectMCP(t, info.URL, info.Key, nil, "loopback")
	list, err := c.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range list.Tools {
		if strings.HasPrefix(tl.Name, "proxmox_host_") || strings.HasPrefix(tl.Name, "proxmox_breakglass_") {
			t.Errorf("an operator's demo serves %s", tl.Name)
		}
	}
}

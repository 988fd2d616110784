package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/proxmox-mcp/proxmox-mcp/pve/sim"
)

// agent is a scripted MCP client: it makes the calls a model would make
// for a task and counts them and the bytes of the JSON-RPC messages both
// ways (tools/list, which a session makes once whatever the task, apart).
type agent struct {
	c        *client.Client
	ctx      context.Context
	calls    int
	sent     int // bytes of the requests
	received int // bytes of the answers
	id       int
}

func (a *agent) call(tool string, args map[string]any) (map[string]any, error) {
	req := mcp.CallToolRequest{}
	req.Params.Name, req.Params.Arguments = tool, args
	res, err := a.c.CallTool(a.ctx, req)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", tool, err)
	}
	a.id++
	a.calls++
	a.sent += wireBytes(map[string]any{"jsonrpc": "2.0", "id": a.id, "method": "tools/call", "params": req.Params})
	a.received += wireBytes(map[string]any{"jsonrpc": "2.0", "id": a.id, "result": res})
	if res.IsError {
		return nil, fmt.Errorf("%s %v: %s", tool, args, text(res))
	}
	var content map[string]any
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, &content); err != nil {
		return nil, fmt.Errorf("%s: structured content: %w", tool, err)
	}
	return content, nil
}

func wireBytes(v any) int {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return len(b)
}

// items are the list items of an answer's data.
func items(content map[string]any) []map[string]any {
	list, _ := content["data"].([]any)
	out := make([]map[string]any, 0, len(list))
	for _, it := range list {
		if m, ok := it.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}

func number(v any) float64 {
	f, _ := v.(float64)
	return f
}

// agentTask is one of issue 14's tasks, scripted for one way of working:
// check says whether the answer the agent ends with is right.
type agentTask struct {
	name   string
	way    string // generic: search, describe, get and call only
	script func(a *agent) (any, error)
	check  func(h *harness, result any) error
}

// agentTasks are the tasks an agent was timed on, done the way that uses
// only the generic tools (search → describe → call) and with the
// curated tools.
func agentTasks() []agentTask {
	return []agentTask{
		{name: "inventory", way: "generic", script: inventoryGeneric, check: checkInventory},
		{name: "learn-snapshot", way: "generic", script: learnSnapshotGeneric, check: checkLearnSnapshot},
		{name: "start-and-wait", way: "generic", script: startAndWaitGeneric, check: checkStarted},
		{name: "backup", way: "generic", script: backupGeneric, check: checkBackup},
		{name: "least-free-memory", way: "generic", script: leastFreeGeneric, check: checkLeastFree},
		{name: "last-failed-task", way: "generic", script: lastFailedGeneric, check: checkLastFailed},
		{name: "inventory", way: "curated", script: inventoryCurated, check: checkInventory},
		{name: "learn-snapshot", way: "curated", script: learnSnapshotCurated, check: checkLearnSnapshot},
		{name: "start-and-wait", way: "curated", script: startAndWaitCurated, check: checkStarted},
		{name: "backup", way: "curated", script: backupCurated, check: checkBackup},
		{name: "least-free-memory", way: "curated", script: leastFreeCurated, check: checkLeastFree},
		{name: "last-failed-task", way: "curated", script: lastFailedCurated, check: checkLastFailed},
	}
}

func inventoryCurated(a *agent) (any, error) {
	res, err := a.call(ToolResources, map[string]any{"type": []any{"vm"}, "fields": []any{"node", "vmid", "name", "status", "mem", "maxmem"}})
	if err != nil {
		return nil, err
	}
	return runningPerNode(res), nil
}

// With the curated tools, how to snapshot a VM is in the tool list the
// session began with: no call.
func learnSnapshotCurated(a *agent) (any, error) {
	list, err := a.c.ListTools(a.ctx, mcp.ListToolsRequest{})
	if err != nil {
		return nil, err
	}
	for _, t := range list.Tools {
		if t.Name == "proxmox_snapshot_create" {
			return t, nil
		}
	}
	return nil, fmt.Errorf("no proxmox_snapshot_create in the list")
}

func startAndWaitCurated(a *agent) (any, error) {
	res, err := a.call(ToolResources, map[string]any{"type": []any{"vm"}, "fields": []any{"vmid", "node", "status", "type"}})
	if err != nil {
		return nil, err
	}
	if _, err := stoppedVM(res); err != nil {
		return nil, err
	}
	return a.call(ToolGuestPower, map[string]any{"vmid": startAndWaitVMID, "action": "start", "wait": 60})
}

func backupCurated(a *agent) (any, error) {
	all, err := a.call(ToolResources, map[string]any{"type": []any{"vm", "storage"}, "fields": []any{"type", "node", "vmid", "storage", "content"}})
	if err != nil {
		return nil, err
	}
	_, storage, err := backupTarget(all)
	if err != nil {
		return nil, err
	}
	return a.call("proxmox_backup_create", map[string]any{"vmid": backupVMID, "storage": storage, "mode": "snapshot", "wait": 60})
}

func leastFreeCurated(a *agent) (any, error) {
	res, err := a.call(ToolResources, map[string]any{"type": []any{"node", "vm"}, "fields": []any{"type", "node", "vmid", "status", "mem", "maxmem"}})
	if err != nil {
		return nil, err
	}
	var nodes, guests []map[string]any
	for _, r := range items(res) {
		if r["type"] == "node" {
			nodes = append(nodes, r)
		} else {
			guests = append(guests, r)
		}
	}
	return leastFree(nodes, guests)
}

func lastFailedCurated(a *agent) (any, error) {
	tasks, err := a.call("proxmox_cluster_tasks", map[string]any{"failed": true, "limit": 1, "fields": []any{"upid"}})
	if err != nil {
		return nil, err
	}
	list := items(tasks)
	if len(list) == 0 {
		return nil, fmt.Errorf("no failed task")
	}
	return a.call("proxmox_task_log", map[string]any{"upid": list[0]["upid"]})
}

// Inventory of the running guests per node, with their memory.
func inventoryGeneric(a *agent) (any, error) {
	res, err := a.call(ToolGet, map[string]any{"path": "/cluster/resources", "params": map[string]any{"type": "vm"}, "fields": []any{"node", "vmid", "name", "status", "mem", "maxmem"}})
	if err != nil {
		return nil, err
	}
	return runningPerNode(res), nil
}

// runningPerNode are the running guests of a resources answer by node.
func runningPerNode(res map[string]any) map[string][]string {
	perNode := map[string][]string{}
	for _, g := range items(res) {
		if g["status"] == "running" {
			perNode[g["node"].(string)] = append(perNode[g["node"].(string)], fmt.Sprintf("%v:%v", g["vmid"], g["mem"]))
		}
	}
	return perNode
}

// simGuest is a guest as the simulator has it.
type simGuest struct {
	node, status string
	vmid         int
}

// truth reads the simulator's guests with a root key, a read no task
// counts.
func truth(h *harness) []simGuest {
	c, ctx := h.as("root")
	res, err := (&agent{c: c, ctx: ctx}).call(ToolResources, map[string]any{"type": "vm", "limit": 5000})
	if err != nil {
		h.t.Fatal(err)
	}
	var out []simGuest
	for _, g := range items(res) {
		node, _ := g["node"].(string)
		status, _ := g["status"].(string)
		out = append(out, simGuest{node: node, status: status, vmid: int(number(g["vmid"]))})
	}
	return out
}

func checkInventory(h *harness, result any) error {
	perNode := result.(map[string][]string)
	want := map[string]int{}
	for _, g := range truth(h) {
		if g.status == "running" {
			want[g.node]++
		}
	}
	for node, n := range want {
		if len(perNode[node]) != n {
			return fmt.Errorf("node %s: %d running guests found, %d run there", node, len(perNode[node]), n)
		}
	}
	return nil
}

// Learning how to snapshot a VM: its endpoint and its parameters.
func learnSnapshotGeneric(a *agent) (any, error) {
	res, err := a.call(ToolSearch, map[string]any{"query": "snapshot vm"})
	if err != nil {
		return nil, err
	}
	tool := ""
	for _, r := range res["results"].([]any) {
		m := r.(map[string]any)
		if m["method"] == "POST" && strings.HasSuffix(m["path"].(string), "/qemu/{vmid}/snapshot") {
			tool = m["tool"].(string)
			break
		}
	}
	if tool == "" {
		return nil, fmt.Errorf("search found no snapshot endpoint: %v", res["results"])
	}
	d, err := a.call(ToolDescribe, map[string]any{"tool": tool})
	if err != nil {
		return nil, err
	}
	return d, nil
}

func checkLearnSnapshot(_ *harness, result any) error {
	b, _ := json.Marshal(result)
	if !strings.Contains(string(b), "snapname") {
		return fmt.Errorf("what was learnt names no snapname: %.300s", b)
	}
	return nil
}

// startAndWaitVMID is the stopped VM the start task starts.
const startAndWaitVMID = 101

// Starting a stopped VM and waiting for it.
func startAndWaitGeneric(a *agent) (any, error) {
	tool, err := searchFor(a, "start vm", "POST", "/nodes/{node}/qemu/{vmid}/status/start")
	if err != nil {
		return nil, err
	}
	if _, err := a.call(ToolDescribe, map[string]any{"tool": tool}); err != nil {
		return nil, err
	}
	res, err := a.call(ToolGet, map[string]any{"path": "/cluster/resources", "params": map[string]any{"type": "vm"}, "fields": []any{"vmid", "node", "status", "type"}})
	if err != nil {
		return nil, err
	}
	node, err := stoppedVM(res)
	if err != nil {
		return nil, err
	}
	return a.call(ToolCall, map[string]any{"method": "POST", "path": fmt.Sprintf("/nodes/%s/qemu/%d/status/start", node, startAndWaitVMID), "wait": 60})
}

// stoppedVM is the node of the stopped VM startAndWaitVMID.
func stoppedVM(res map[string]any) (string, error) {
	for _, g := range items(res) {
		if g["status"] == "stopped" && g["type"] == "qemu" && int(number(g["vmid"])) == startAndWaitVMID {
			return g["node"].(string), nil
		}
	}
	return "", fmt.Errorf("VM %d is not a stopped VM", startAndWaitVMID)
}

// searchFor is the tool name of the endpoint a search finds for query.
func searchFor(a *agent, query, method, path string) (string, error) {
	res, err := a.call(ToolSearch, map[string]any{"query": query})
	if err != nil {
		return "", err
	}
	for _, r := range res["results"].([]any) {
		if m := r.(map[string]any); m["path"] == path && m["method"] == method {
			return m["tool"].(string), nil
		}
	}
	return "", fmt.Errorf("a search for %q did not find %s %s: %v", query, method, path, res["results"])
}

func checkStarted(h *harness, _ any) error {
	for _, g := range truth(h) {
		if g.vmid == startAndWaitVMID && g.status != "running" {
			return fmt.Errorf("VM %d is %s", g.vmid, g.status)
		}
	}
	return nil
}

// backupVMID is the guest the backup task backs up.
const backupVMID = 100

// A backup of one VM to a storage that takes backups.
func backupGeneric(a *agent) (any, error) {
	tool, err := searchFor(a, "backup vm", "POST", "/nodes/{node}/vzdump")
	if err != nil {
		return nil, err
	}
	if _, err := a.call(ToolDescribe, map[string]any{"tool": tool}); err != nil {
		return nil, err
	}
	all, err := a.call(ToolGet, map[string]any{"path": "/cluster/resources", "fields": []any{"type", "node", "vmid", "storage", "content"}})
	if err != nil {
		return nil, err
	}
	node, storage, err := backupTarget(all)
	if err != nil {
		return nil, err
	}
	return a.call(ToolCall, map[string]any{"method": "POST", "path": "/nodes/" + node + "/vzdump",
		"params": map[string]any{"vmid": fmt.Sprint(backupVMID), "storage": storage, "mode": "snapshot"}, "wait": 60})
}

// backupTarget is the node of backupVMID and a storage there that takes
// backups, from a resources answer.
func backupTarget(all map[string]any) (node, storage string, err error) {
	for _, r := range items(all) {
		if int(number(r["vmid"])) == backupVMID {
			node = r["node"].(string)
		}
	}
	for _, r := range items(all) {
		if r["type"] == "storage" && r["node"] == node && strings.Contains(fmt.Sprint(r["content"]), "backup") && storage == "" {
			storage = r["storage"].(string)
		}
	}
	if node == "" || storage == "" {
		return "", "", fmt.Errorf("no node (%q) or backup storage (%q) for guest %d", node, storage, backupVMID)
	}
	return node, storage, nil
}

func checkBackup(_ *harness, result any) error {
	task, _ := result.(map[string]any)["task"].(map[string]any)
	if task["status"] != "stopped" || task["exitstatus"] != "OK" {
		return fmt.Errorf("the backup's task: %v", task)
	}
	return nil
}

// The node with the least free memory, and what runs there.
func leastFreeGeneric(a *agent) (any, error) {
	nodes, err := a.call(ToolGet, map[string]any{"path": "/cluster/resources", "params": map[string]any{"type": "node"}, "fields": []any{"node", "mem", "maxmem"}})
	if err != nil {
		return nil, err
	}
	guests, err := a.call(ToolGet, map[string]any{"path": "/cluster/resources", "params": map[string]any{"type": "vm"}, "fields": []any{"node", "vmid", "name", "status"}})
	if err != nil {
		return nil, err
	}
	return leastFree(items(nodes), items(guests))
}

// leastFree is the node with the least free memory and the guests that
// run there.
func leastFree(list, guests []map[string]any) (any, error) {
	if len(list) == 0 {
		return nil, fmt.Errorf("no nodes")
	}
	sort.Slice(list, func(i, j int) bool {
		return number(list[i]["maxmem"])-number(list[i]["mem"]) < number(list[j]["maxmem"])-number(list[j]["mem"])
	})
	node := list[0]["node"].(string)
	var there []int
	for _, g := range guests {
		if g["node"] == node && g["status"] == "running" {
			there = append(there, int(number(g["vmid"])))
		}
	}
	slices.Sort(there)
	return map[string]any{"node": node, "running": there}, nil
}

func checkLeastFree(h *harness, result any) error {
	node := result.(map[string]any)["node"].(string)
	var want []int
	for _, g := range truth(h) {
		if g.node == node && g.status == "running" {
			want = append(want, g.vmid)
		}
	}
	slices.Sort(want)
	if got := result.(map[string]any)["running"].([]int); !slices.Equal(got, want) {
		return fmt.Errorf("on %s: found %v, %v run there", node, got, want)
	}
	return nil
}

// The last failed task and its log.
func lastFailedGeneric(a *agent) (any, error) {
	tasks, err := a.call(ToolGet, map[string]any{"path": "/cluster/tasks", "fields": []any{"upid", "node", "type", "status", "endtime"}})
	if err != nil {
		return nil, err
	}
	var failed map[string]any
	for _, t := range items(tasks) {
		if s, _ := t["status"].(string); s != "" && s != "OK" && !strings.HasPrefix(s, "WARNINGS") {
			if failed == nil || number(t["endtime"]) > number(failed["endtime"]) {
				failed = t
			}
		}
	}
	if failed == nil {
		return nil, fmt.Errorf("no failed task in %d", len(items(tasks)))
	}
	return a.call(ToolGet, map[string]any{"path": "/nodes/" + failed["node"].(string) + "/tasks/" + failed["upid"].(string) + "/log"})
}

func checkLastFailed(_ *harness, result any) error {
	b, _ := json.Marshal(result)
	if !strings.Contains(string(b), agentFailure) {
		return fmt.Errorf("the log does not say why the task failed: %.300s", b)
	}
	return nil
}

// agentFailure is why the failed task the last task looks for failed.
const agentFailure = "start failed: QEMU exited with code 1"

// agentBed is the simulator a task runs against: an operator key and,
// for the last task, a start that failed.
func agentBed(t testing.TB, text AnswerText) (*harness, *agent) {
	h := newHarness(t, harnessOpts{answerText: text})
	c, ctx := h.as("admin")
	h.sim.InjectTaskFault(sim.TaskFault{Type: "qmstart", Fail: agentFailure})
	if _, err := (&agent{c: c, ctx: ctx}).call(ToolGuestPower, map[string]any{"vmid": startAndWaitVMID, "action": "start", "wait": 30}); err == nil {
		t.Fatal("the start meant to fail did not")
	}
	h.sim.ClearFaults()
	return h, &agent{c: c, ctx: ctx}
}

// TestAgentTasks: each scripted task ends with the right answer, so the
// figures BenchmarkAgentTasks gives are of work that was done.
func TestAgentTasks(t *testing.T) {
	for _, task := range agentTasks() {
		t.Run(task.way+"/"+task.name, func(t *testing.T) {
			h, a := agentBed(t, AnswerJSON)
			result, err := task.script(a)
			if err != nil {
				t.Fatal(err)
			}
			if err := task.check(h, result); err != nil {
				t.Fatal(err)
			}
			t.Logf("%d calls, %d bytes sent, %d received", a.calls, a.sent, a.received)
		})
	}
}

// BenchmarkAgentTasks reports the calls and bytes each task costs an
// agent (calls/op, sent-B/op, received-B/op) on the real PVE 9.1 schema,
// in compact mode, with answers' text as tools.answer_text has it (json:
// the JSON twice; summary: once, for tools with an outputSchema).
func BenchmarkAgentTasks(b *testing.B) {
	for _, task := range agentTasks() {
		for _, text := range []AnswerText{AnswerJSON, AnswerSummary} {
			b.Run(task.way+"/"+task.name+"/text="+string(text), func(b *testing.B) {
				var a *agent
				for b.Loop() {
					b.StopTimer()
					var h *harness
					h, a = agentBed(b, text)
					b.StartTimer()
					result, err := task.script(a)
					if err != nil {
						b.Fatal(err)
					}
					if err := task.check(h, result); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(a.calls), "calls/op")
				b.ReportMetric(float64(a.sent), "sent-B/op")
				b.ReportMetric(float64(a.received), "received-B/op")
			})
		}
	}
}

package tests

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// End-to-end tests of the built binary with the official MCP TypeScript SDK
// clients (npm @modelcontextprotocol/sdk, the v1 line, and the v2
// @modelcontextprotocol/client), over Streamable HTTP (`proxmox-mcp demo`)
// and over stdio (`proxmox-mcp stdio` against `proxmox-mcp sim`), in both
// protocol eras: v1 speaks the legacy handshake (2025-11-25), v2 negotiates
// the modern, stateless 2026-07-28 (auto, and pinned). The client script is
// tests/e2e/node/run.mjs; it reports what it saw and these tests judge it.

// nodeClient is one SDK with one way of choosing the protocol version.
type nodeClient struct {
	name        string
	sdk         string
	negotiation string
	era         string
	version     string
}

var nodeClients = []nodeClient{
	{name: "sdk-v1", sdk: "v1", negotiation: "legacy", era: "legacy", version: "2025-11-25"},
	{name: "sdk-v2-auto", sdk: "v2", negotiation: "auto", era: "modern", version: "2026-07-28"},
	{name: "sdk-v2-pinned", sdk: "v2", negotiation: "2026-07-28", era: "modern", version: "2026-07-28"},
}

// nodeRunner runs tests/e2e/node/run.mjs.
type nodeRunner struct {
	node string
	dir  string
}

// nodeSDKs finds Node (20 or later) and the SDK packages, or skips.
func nodeSDKs(t *testing.T) nodeRunner {
	t.Helper()
	node := lookNode(t, 20)
	nodeModules(t, "e2e/node", "@modelcontextprotocol/sdk", "@modelcontextprotocol/client")
	dir, err := filepath.Abs("e2e/node")
	if err != nil {
		t.Fatal(err)
	}
	return nodeRunner{node: node, dir: dir}
}

type nodeError struct {
	Name       string `json:"name"`
	Message    string `json:"message"`
	Code       any    `json:"code"`
	HTTPStatus int    `json:"httpStatus"`
	Data       struct {
		Text string `json:"text"` // the HTTP body, as v2 reports it
	} `json:"data"`
}

type nodeCall struct {
	IsError       bool           `json:"isError"`
	Structured    map[string]any `json:"structured"`
	Text          string         `json:"text"`
	ProtocolError *nodeError     `json:"protocolError"`
}

type nodeTool struct {
	Name        string `json:"name"`
	Annotations *struct {
		ReadOnly    *bool `json:"readOnlyHint"`
		Destructive *bool `json:"destructiveHint"`
		Idempotent  *bool `json:"idempotentHint"`
		OpenWorld   *bool `json:"openWorldHint"`
	} `json:"annotations"`
	InputSchemaType string `json:"inputSchemaType"`
}

type guestState struct {
	IsError       bool       `json:"isError"`
	ProtocolError *nodeError `json:"protocolError"`
	Status        string     `json:"status"`
}

// nodeResult is the JSON line run.mjs prints.
type nodeResult struct {
	Connected       bool       `json:"connected"`
	ConnectError    *nodeError `json:"connectError"`
	Error           *nodeError `json:"error"`
	Era             string     `json:"era"`
	ProtocolVersion string     `json:"protocolVersion"`
	Server          *struct {
		Name string `json:"name"`
	} `json:"server"`
	Instructions string     `json:"instructions"`
	Tools        []nodeTool `json:"tools"`
	Prompts      []string   `json:"prompts"`
	Search       struct {
		IsError bool     `json:"isError"`
		Tools   []string `json:"tools"`
		Results []struct {
			Tool   string `json:"tool"`
			Method string `json:"method"`
			Risk   string `json:"risk"`
		} `json:"results"`
	} `json:"search"`
	Describe  nodeCall `json:"describe"`
	Resources struct {
		IsError       bool       `json:"isError"`
		ProtocolError *nodeError `json:"protocolError"`
		Guests        []struct {
			VMID   int    `json:"vmid"`
			Type   string `json:"type"`
			Node   string `json:"node"`
			Status string `json:"status"`
		} `json:"guests"`
	} `json:"resources"`
	Before   guestState       `json:"before"`
	Start    nodeCall         `json:"start"`
	Wait     nodeCall         `json:"wait"`
	Progress []map[string]any `json:"progress"`
	After    guestState       `json:"after"`
	Prompt   string           `json:"prompt"`
	Power    nodeCall         `json:"power"`
	APICall  nodeCall         `json:"apiCall"`
	// ServerStderr is what a stdio server printed before a failed connect.
	ServerStderr string `json:"serverStderr"`
	// Attempts are the connections of the refused scenario over HTTP.
	Attempts []struct {
		Name         string     `json:"name"`
		Connected    bool       `json:"connected"`
		ConnectError *nodeError `json:"connectError"`
		Tools        []string   `json:"tools"`
	} `json:"attempts"`

	// Curated are the curated reads and the jobs list, by tool.
	Curated map[string]struct {
		IsError       bool       `json:"isError"`
		ProtocolError *nodeError `json:"protocolError"`
		Text          string     `json:"text"`
		Keys          []string   `json:"keys"`
	} `json:"curated"`

	// Templates, Guest and Completion are the resources' part.
	Templates  []string       `json:"templates"`
	Guest      map[string]any `json:"guest"`
	Completion []string       `json:"completion"`
}

// run starts run.mjs with the key in $PMCP_KEY and decodes its result.
func (r nodeRunner) run(t *testing.T, key string, args ...string) nodeResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	argv := append([]string{r.node, "run.mjs"}, args...)
	out, _ := run(ctx, t, environ(map[string]string{"PMCP_KEY": key}), r.dir, argv...)
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	var res nodeResult
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &res); err != nil {
		t.Fatalf("run.mjs %s printed no result: %v\n%s", strings.Join(args, " "), err, out)
	}
	if res.Error != nil {
		t.Fatalf("run.mjs %s failed: %s: %s\n%s", strings.Join(args, " "), res.Error.Name, res.Error.Message, out)
	}
	return res
}

func (c nodeClient) args(transport string, scenario string) []string {
	return []string{"--sdk", c.sdk, "--negotiation", c.negotiation, "--transport", transport, "--scenario", scenario}
}

func httpArgs(url string) []string { return []string{"--url", url} }

func stdioArgs(argv []string) []string {
	out := []string{"--command", argv[0]}
	for _, a := range argv[1:] {
		out = append(out, "--arg="+a)
	}
	return out
}

// TestNodeSDKOperatorHTTP: each client connects to the demo over HTTP with an
// operator key and does an operator's work, ending with VM 101 running.
func TestNodeSDKOperatorHTTP(t *testing.T) {
	r := nodeSDKs(t)
	for _, c := range nodeClients {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			d := startDemo(t, "operator") // each client starts VM 101 on its own cluster
			res := r.run(t, d.Key, append(c.args("http", "operator"), httpArgs(d.URL)...)...)
			checkOperator(t, c, res, "demo-operator")
		})
	}
}

// TestNodeSDKOperatorStdio: the same over stdio, `proxmox-mcp stdio` started
// by the SDK's stdio transport with the key in $PMCP_KEY.
func TestNodeSDKOperatorStdio(t *testing.T) {
	r := nodeSDKs(t)
	for _, c := range nodeClients {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			h := startStdioHost(t)
			key := h.key(t, "stdio-operator", "operator")
			res := r.run(t, key, append(c.args("stdio", "operator"), stdioArgs(h.command(t))...)...)
			checkOperator(t, c, res, "stdio-operator")
		})
	}
}

// TestNodeSDKReadOnly: a read-only key sees no write tool, cannot call the
// hidden power tool, and is refused a write through the generic call tool;
// the VM stays stopped. Over HTTP and over stdio.
func TestNodeSDKReadOnly(t *testing.T) {
	r := nodeSDKs(t)
	d := startDemo(t, "read-only")
	h := startStdioHost(t)
	key := h.key(t, "stdio-read-only", "read-only")
	for _, c := range nodeClients {
		t.Run(c.name+"/http", func(t *testing.T) {
			t.Parallel()
			checkReadOnly(t, c, r.run(t, d.Key, append(c.args("http", "read-only"), httpArgs(d.URL)...)...))
		})
		t.Run(c.name+"/stdio", func(t *testing.T) {
			t.Parallel()
			checkReadOnly(t, c, r.run(t, key, append(c.args("stdio", "read-only"), stdioArgs(h.command(t))...)...))
		})
	}
}

// TestNodeSDKRefused: over HTTP a bad key and a missing key get 401 and a
// foreign Origin gets 403, before any MCP exchange; each client reports the
// status to its user.
func TestNodeSDKRefused(t *testing.T) {
	r := nodeSDKs(t)
	d := startDemo(t, "operator")
	type attempt struct {
		Name   string `json:"name"`
		Key    string `json:"key,omitempty"`
		NoKey  bool   `json:"noKey,omitempty"`
		Origin string `json:"origin,omitempty"`
	}
	cases := []struct {
		attempt
		status int
		reason string
	}{
		{attempt{Name: "bad-key", Key: d.Key[:len(d.Key)-4] + "AAAA"}, 401, "the key was not accepted"},
		{attempt{Name: "unknown-key", Key: "pmcp_aaaaaaaaaaaaaaaa_" + strings.Repeat("A", 43)}, 401, "the key was not accepted"},
		{attempt{Name: "no-key", NoKey: true}, 401, "Authorization: Bearer"},
		{attempt{Name: "evil-origin", Origin: "http://evil.example"}, 403, `Origin \"http://evil.example\" is not allowed`},
	}
	var list []attempt
	for _, tc := range cases {
		list = append(list, tc.attempt)
	}
	attempts, err := json.Marshal(list)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range nodeClients {
		t.Run(c.name+"/http", func(t *testing.T) {
			t.Parallel()
			// One client process makes every attempt; the valid key (for
			// the Origin case) comes from $PMCP_KEY.
			res := r.run(t, d.Key, append(append(c.args("http", "refused"), httpArgs(d.URL)...), "--attempts", string(attempts))...)
			if len(res.Attempts) != len(cases) {
				t.Fatalf("%d attempts reported, want %d", len(res.Attempts), len(cases))
			}
			for i, tc := range cases {
				a := res.Attempts[i]
				switch {
				case a.Name != tc.Name:
					t.Errorf("attempt %d is %s, want %s", i, a.Name, tc.Name)
				case a.Connected:
					t.Errorf("%s: connected, and was offered %v", tc.Name, a.Tools)
				case a.ConnectError == nil || a.ConnectError.HTTPStatus != tc.status:
					t.Errorf("%s: connect error %+v, want HTTP %d", tc.Name, a.ConnectError, tc.status)
				default:
					if seen := a.ConnectError.Message + a.ConnectError.Data.Text; !strings.Contains(seen, tc.reason) {
						t.Errorf("%s: the client's error %q does not carry the daemon's reason %q", tc.Name, seen, tc.reason)
					}
				}
			}
		})
	}
	// A stdio server started with a bad key never serves: it says why on
	// stderr and exits, and the client's connect fails. (In pinned mode the
	// v2 SDK probes on a sibling process whose stderr it discards and then
	// gives up, so only the failure itself can be seen.)
	h := startStdioHost(t)
	h.key(t, "someone", "operator")
	for _, c := range nodeClients {
		t.Run(c.name+"/stdio-bad-key", func(t *testing.T) {
			t.Parallel()
			res := r.run(t, "pmcp_aaaaaaaaaaaaaaaa_"+strings.Repeat("A", 43), append(c.args("stdio", "refused"), stdioArgs(h.command(t))...)...)
			if res.Connected {
				t.Fatalf("connected over stdio with a bad key, offered %d tools", len(res.Tools))
			}
			if res.ConnectError == nil {
				t.Fatal("no connect error reported")
			}
			if c.negotiation != "2026-07-28" && !strings.Contains(res.ServerStderr, "the key was not accepted") {
				t.Errorf("the server's stderr does not say the key was refused:\n%s", res.ServerStderr)
			}
		})
	}
}

// compactTools are the compact mode's tools every operator key sees, and
// their four annotations (readOnly, destructive, idempotent, openWorld).
var compactTools = map[string][4]bool{
	"proxmox_api_call":          {false, true, false, true},
	"proxmox_api_describe":      {true, false, true, false},
	"proxmox_api_get":           {true, false, true, true},
	"proxmox_api_search":        {true, false, true, false},
	"proxmox_cluster_resources": {true, false, true, false},
	"proxmox_guest_power":       {false, true, false, false},
	"proxmox_guest_status":      {true, false, true, false},
	"proxmox_schema_status":     {true, false, true, false},
	"proxmox_task_wait":         {true, false, true, false},
}

func checkEra(t *testing.T, c nodeClient, res nodeResult) {
	t.Helper()
	if !res.Connected {
		t.Fatalf("did not connect: %+v", res.ConnectError)
	}
	if res.Era != c.era || res.ProtocolVersion != c.version {
		t.Errorf("negotiated %s %s, want %s %s", res.Era, res.ProtocolVersion, c.era, c.version)
	}
}

// checkTools checks that the listed tools include want and none of hidden,
// and that every tool sets all four annotations (the documented values for
// the tools of compactTools) and has an object input schema. Tools beyond
// these are allowed: the surface grows.
func checkTools(t *testing.T, tools []nodeTool, want, hidden []string) {
	t.Helper()
	var names []string
	for _, tl := range tools {
		names = append(names, tl.Name)
		a := tl.Annotations
		if a == nil || a.ReadOnly == nil || a.Destructive == nil || a.Idempotent == nil || a.OpenWorld == nil {
			t.Errorf("%s: not all four annotations are set: %+v", tl.Name, a)
			continue
		}
		if w, ok := compactTools[tl.Name]; ok {
			if got := [4]bool{*a.ReadOnly, *a.Destructive, *a.Idempotent, *a.OpenWorld}; got != w {
				t.Errorf("%s: annotations (readOnly, destructive, idempotent, openWorld) = %v, want %v", tl.Name, got, w)
			}
		}
		if tl.InputSchemaType != "object" {
			t.Errorf("%s: input schema type %q, want object", tl.Name, tl.InputSchemaType)
		}
	}
	for _, w := range want {
		if !slices.Contains(names, w) {
			t.Errorf("tools %v lack %s", names, w)
		}
	}
	for _, h := range hidden {
		if slices.Contains(names, h) {
			t.Errorf("tools %v include %s", names, h)
		}
	}
}

func checkOperator(t *testing.T, c nodeClient, res nodeResult, keyName string) {
	t.Helper()
	checkEra(t, c, res)
	if res.Server == nil || res.Server.Name != "proxmox-mcp" {
		t.Errorf("server %+v, want proxmox-mcp", res.Server)
	}
	if !strings.Contains(res.Instructions, "proxmox_api_search") {
		t.Errorf("instructions %q do not say how to start", res.Instructions)
	}
	var all []string
	for name := range compactTools {
		all = append(all, name)
	}
	checkTools(t, res.Tools, all, nil)
	if !slices.Contains(res.Prompts, "proxmox_onboarding") {
		t.Errorf("prompts %v lack proxmox_onboarding", res.Prompts)
	}

	if res.Search.IsError || len(res.Search.Tools) == 0 || !slices.Contains(res.Search.Tools[:min(3, len(res.Search.Tools))], "post_nodes_qemu_status_start") {
		t.Errorf("search \"start vm\": %v, want post_nodes_qemu_status_start among the first three", res.Search.Tools)
	}

	desc := res.Describe
	if desc.IsError || desc.ProtocolError != nil {
		t.Errorf("describe failed: %s %+v", desc.Text, desc.ProtocolError)
	} else {
		if desc.Structured["method"] != "POST" || desc.Structured["path"] != "/nodes/{node}/qemu/{vmid}/status/start" {
			t.Errorf("describe: %v %v, want POST /nodes/{node}/qemu/{vmid}/status/start", desc.Structured["method"], desc.Structured["path"])
		}
		req, _ := desc.Structured["required"].([]any)
		if !slices.Contains(req, any("node")) || !slices.Contains(req, any("vmid")) {
			t.Errorf("describe: required %v, want node and vmid", req)
		}
	}

	if res.Resources.IsError || res.Resources.ProtocolError != nil {
		t.Errorf("cluster resources failed: %+v", res.Resources)
	}
	want := map[int]string{100: "qemu pve1 running", 101: "qemu pve1 stopped", 102: "qemu pve2 running", 200: "lxc pve1 running", 201: "lxc pve2 stopped"}
	seen := map[int]string{}
	for _, g := range res.Resources.Guests {
		seen[g.VMID] = g.Type + " " + g.Node + " " + g.Status
	}
	for id, w := range want {
		if seen[id] != w {
			t.Errorf("cluster resources: guest %d is %q, want %q", id, seen[id], w)
		}
	}

	if res.Before.Status != "stopped" {
		t.Errorf("VM 101 before the start: %+v, want stopped", res.Before)
	}
	upid, _ := res.Start.Structured["upid"].(string)
	if res.Start.IsError || res.Start.ProtocolError != nil || !strings.HasPrefix(upid, "UPID:pve1:") || !strings.Contains(upid, ":qmstart:101:") {
		t.Fatalf("start VM 101: error=%v %+v upid=%q text=%s", res.Start.IsError, res.Start.ProtocolError, upid, res.Start.Text)
	}
	task, _ := res.Wait.Structured["task"].(map[string]any)
	if res.Wait.IsError || task["exitstatus"] != "OK" || task["status"] != "stopped" {
		t.Errorf("task wait: error=%v task=%v text=%s", res.Wait.IsError, task, res.Wait.Text)
	}
	// Progress arrives while the task runs; the very last notification may be
	// lost to mcp-go's race with the response (golibs.md §1.5), so only
	// "some progress" is a promise.
	if len(res.Progress) == 0 {
		t.Errorf("no progress notification while waiting for the task")
	}
	for _, p := range res.Progress {
		if msg, _ := p["message"].(string); !strings.Contains(msg, "qmstart") {
			t.Errorf("progress %v does not name the task", p)
		}
	}
	if res.After.Status != "running" {
		t.Errorf("VM 101 after the task: %+v, want running", res.After)
	}

	for _, w := range []string{`key "` + keyName + `"`, "profile operator", "operator-tier API token"} {
		if !strings.Contains(res.Prompt, w) {
			t.Errorf("onboarding prompt lacks %q:\n%s", w, res.Prompt)
		}
	}

	// Each curated read answers, and its structured content passes the
	// SDK's check against the tool's output schema; the jobs list holds
	// the start's job.
	if len(res.Curated) != 10 {
		t.Errorf("curated reads: %d answers, want 10", len(res.Curated))
	}
	for name, r := range res.Curated {
		if r.ProtocolError != nil || r.IsError || !slices.Contains(r.Keys, "data") && name != "proxmox_jobs" {
			t.Errorf("%s through the SDK: error %v, protocol error %+v, keys %v: %s", name, r.IsError, r.ProtocolError, r.Keys, r.Text)
		}
	}
	if jobs := res.Curated["proxmox_jobs"]; !strings.Contains(jobs.Text, "qmstart") {
		t.Errorf("proxmox_jobs after the start: %s", jobs.Text)
	}

	if !slices.Contains(res.Templates, "proxmox://guests/{vmid}") || !slices.Contains(res.Templates, "proxmox://nodes/{node}") {
		t.Errorf("resource templates %v lack the guest and node summaries", res.Templates)
	}
	if res.Guest["status"] != "running" || res.Guest["node"] != "pve1" || res.Guest["type"] != "qemu" {
		t.Errorf("resource proxmox://guests/101: %v, want VM 101 running on pve1", res.Guest)
	}
	if want := []string{"100", "101", "102"}; !slices.Equal(res.Completion, want) {
		t.Errorf("completion of vmid 10: %v, want %v", res.Completion, want)
	}
}

func checkReadOnly(t *testing.T, c nodeClient, res nodeResult) {
	t.Helper()
	checkEra(t, c, res)
	var visible []string
	for name := range compactTools {
		if name != "proxmox_guest_power" {
			visible = append(visible, name)
		}
	}
	checkTools(t, res.Tools, visible, []string{"proxmox_guest_power"})
	for _, tl := range res.Tools {
		// The generic call tool stays (it still takes GET), and the
		// policy refuses its writes (below); reads have proxmox_api_get.
		if tl.Name != "proxmox_api_call" && tl.Annotations != nil && tl.Annotations.ReadOnly != nil && !*tl.Annotations.ReadOnly {
			t.Errorf("a read-only key is shown the write tool %s", tl.Name)
		}
	}
	if res.Search.IsError || len(res.Search.Results) == 0 {
		t.Errorf("search failed or found nothing: %+v", res.Search)
	}
	for _, r := range res.Search.Results {
		if r.Method != "GET" || r.Risk != "read" {
			t.Errorf("search shows a read-only key %s %s (%s)", r.Method, r.Tool, r.Risk)
		}
	}
	if res.Power.ProtocolError == nil || !strings.Contains(res.Power.ProtocolError.Message, "not found") {
		t.Errorf("proxmox_guest_power: %+v, want the call to fail with \"not found\"", res.Power)
	}
	if !res.APICall.IsError || !strings.Contains(res.APICall.Text, "/nodes/pve1/qemu/101/status/start") {
		t.Errorf("POST through proxmox_api_call: error=%v %q, want a refusal naming the path", res.APICall.IsError, res.APICall.Text)
	}
	if res.After.Status != "stopped" {
		t.Errorf("VM 101 after the refused starts: %+v, want stopped", res.After)
	}
}

package booted

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
)

// fakeLVS and fakeLVRemove stand in for LVM's commands where the kernel
// has no device-mapper (these machines' containers): lvs reports the
// volume while its state file exists, lvremove removes it. Their state
// is under /run/lvm, which the runner's unit may write (as LVM's own).
const (
	fakeLVS = `#!/bin/sh
# fake lvs: --reportformat json ... VG/LV
for a; do v=$a; done
f=/run/lvm/fake-$(echo "$v" | tr / -)
if [ ! -e "$f" ]; then echo "  Failed to find logical volume \"$v\"" >&2; exit 5; fi
vg=${v%/*}; lv=${v#*/}
printf '{"report":[{"lv":[{"vg_name":"%s","lv_name":"%s","lv_uuid":"%s","lv_size":"1073741824","lv_attr":"-wi-a-----"}]}]}\n' "$vg" "$lv" "$(cat "$f")"
`
	fakeLVRemove = `#!/bin/sh
# fake lvremove: --yes VG/LV
for a; do v=$a; done
f=/run/lvm/fake-$(echo "$v" | tr / -)
[ -e "$f" ] || { echo "  Failed to find logical volume \"$v\"" >&2; exit 5; }
rm -f "$f" && echo "fake lvremove: Logical volume \"$v\" successfully removed" >&2
`
)

// bgCall calls a break-glass tool and returns its structured answer.
func bgCall(t *testing.T, mc *client.Client, ctx context.Context, name string, args map[string]any) (map[string]any, string, bool) {
	t.Helper()
	res, text := callTool(t, mc, ctx, name, args)
	out := map[string]any{}
	if raw, err := json.Marshal(res.StructuredContent); err == nil {
		json.Unmarshal(raw, &out) //nolint:errcheck // an error answer has none
	}
	return out, text, res.IsError
}

// TestBootedBreakglass: the protocol as installed on systemd 257. A root
// key's agent stages content and asks to write it into the protected
// repository, confirms, and another person's key approves the digest:
// the helper signs and queues it, proxmox-mcp-breakglass.path starts the
// runner, which writes the file; a directory is deleted on root's
// approval at the host's command line; an LV is removed (by a fake
// lvremove where the kernel has no device-mapper, which the output says).
// The requester never approves its own request, and an ordinary write
// to the repository is refused with the way to do it.
func TestBootedBreakglass(t *testing.T) {
	t.Parallel()
	c, b := node(t)
	lvm := "real LVM"
	if !c.Exists("/usr/sbin/lvremove") {
		c.WriteFile("/usr/sbin/lvs", []byte(fakeLVS), 0o755)
		c.WriteFile("/usr/sbin/lvremove", []byte(fakeLVRemove), 0o755)
		// /run is the booted system's tmpfs: written from inside.
		c.MustIn(t, "sh", "-c", "mkdir -p /run/lvm && echo Xq3r1T-aaaa-bbbb-cccc-dddd-eeee-ffffff > /run/lvm/fake-vgmodels-models")
		lvm = "a fake lvs and lvremove (no lvm2 and no device-mapper in this container)"
	}
	t.Logf("booted: the LV removal runs against %s", lvm)
	c.MustIn(t, "mkdir", "-p", "/srv/model-repo/llama", "/srv/model-repo/old")
	c.WriteFile("/srv/model-repo/llama/weights.bin", []byte("old weights"), 0o644)
	c.WriteFile("/srv/model-repo/old/a.bin", []byte("a"), 0o644)
	c.WriteFile("/srv/model-repo/old/b.bin", []byte("b"), 0o644)
	installHost(t, c, b, `"host": {"roots": [{"path": "/var/log"}, {"path": "/srv", "write": true}]},
	"protected": {"paths": ["/srv/model-repo"], "volumes": ["vgmodels/models"]},`)
	for _, u := range []string{"proxmox-mcp-breakglass.path"} {
		if st := strings.TrimSpace(c.MustIn(t, "systemctl", "is-active", u)); st != "active" {
			t.Fatalf("%s is %s after install", u, st)
		}
	}
	if res := c.Run(context.Background(), "stat", "-c", "%U %a", "/var/lib/proxmox-mcp-helper/breakglass/signing.key"); !res.OK() || strings.TrimSpace(res.Stdout) != "root 600" {
		t.Fatalf("the signing key: %s", res)
	}
	var key InitialKeyFile
	raw, err := c.ReadFile("/root/proxmox-mcp-initial-key.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &key); err != nil {
		t.Fatal(err)
	}
	var carol struct {
		Key string `json:"key"`
	}
	if err := json.Unmarshal([]byte(c.MustIn(t, "proxmox-mcp", "key", "create", "--name", "carol", "--profile", "root", "--json")), &carol); err != nil {
		t.Fatal(err)
	}
	c.MustIn(t, "systemctl", "reload", unit)
	rc, rctx := mcpClient(t, c, key.Endpoints.Loopback, key.Key)
	cc, cctx := mcpClient(t, c, key.Endpoints.Loopback, carol.Key)

	// waitDone polls the request's status until the runner has taken it.
	waitDone := func(id string) map[string]any {
		t.Helper()
		start := time.Now()
		deadline := start.Add(90 * time.Second)
		for {
			out, text, isErr := bgCall(t, cc, cctx, "proxmox_breakglass_status", map[string]any{"id": id})
			if isErr {
				t.Fatalf("status of %s: %s", id, text)
			}
			if st := out["state"]; st != "queued" {
				t.Logf("booted: %s is %v %s after its approval (the path unit, the runner, the status polled every 300 ms)", id, st, time.Since(start).Round(time.Millisecond))
				return out
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s still queued after 90 s; the runner:\n%s", id, c.Journal("-u", "proxmox-mcp-breakglass.service", "-u", "proxmox-mcp-breakglass.path", "-n", "40"))
			}
			time.Sleep(300 * time.Millisecond)
		}
	}
	request := func(op map[string]any) (id, digest string) {
		t.Helper()
		out, text, isErr := bgCall(t, rc, rctx, "proxmox_breakglass_request", map[string]any{"operation": op})
		if isErr {
			t.Fatalf("request %v: %s", op, text)
		}
		p := out["preview"].(map[string]any)
		id, digest = p["id"].(string), out["digest"].(string)
		if _, text, isErr := bgCall(t, rc, rctx, "proxmox_breakglass_confirm", map[string]any{"id": id, "phrase": out["phrase"]}); isErr {
			t.Fatalf("confirm %s: %s", id, text)
		}
		return id, digest
	}

	t.Run("an ordinary write is refused", func(t *testing.T) {
		isErr, text := callText(t, rc, rctx, "proxmox_host_file_write", map[string]any{"path": "/srv/model-repo/x", "content": "x", "sha256": hexSum("x")})
		if !isErr || !strings.Contains(text, "proxmox_breakglass_request") {
			t.Fatalf("a write into the repository: %s", text)
		}
	})

	t.Run("put_file approved by another key", func(t *testing.T) {
		content := []byte(strings.Repeat("new weights ", 1000))
		sha := hexSum(string(content))
		if out, text, isErr := bgCall(t, rc, rctx, "proxmox_breakglass_stage", map[string]any{"sha256": sha, "size": len(content), "offset": 0, "content": base64.StdEncoding.EncodeToString(content)}); isErr || out["complete"] != true {
			t.Fatalf("stage: %s", text)
		}
		id, digest := request(map[string]any{"kind": "put_file", "path": "/srv/model-repo/llama/weights.bin", "sha256": sha, "size": len(content)})
		if _, text, isErr := bgCall(t, rc, rctx, "proxmox_breakglass_approve", map[string]any{"id": id, "digest": digest}); !isErr || !strings.Contains(text, "own approver") {
			t.Fatalf("the requester approves itself: %s", text)
		}
		if _, text, isErr := bgCall(t, cc, cctx, "proxmox_breakglass_approve", map[string]any{"id": id, "digest": digest}); isErr {
			t.Fatalf("carol approves: %s", text)
		}
		if out := waitDone(id); out["state"] != "done" {
			t.Fatalf("the runner: %v", out)
		}
		got, err := c.ReadFile("/srv/model-repo/llama/weights.bin")
		if err != nil || string(got) != string(content) {
			t.Fatalf("the file after the run: %d bytes, %v", len(got), err)
		}
		if j, ok := c.JournalUntil(saying(id+" done"), "-u", "proxmox-mcp-breakglass.service"); !ok {
			t.Errorf("the runner's journal does not say it ran %s:\n%s", id, tailOf(j, 2000))
		}
	})

	t.Run("delete_directory approved at the host", func(t *testing.T) {
		id, digest := request(map[string]any{"kind": "delete_directory", "path": "/srv/model-repo/old"})
		show := c.MustIn(t, "proxmox-mcp", "breakglass", "show", id)
		if !strings.Contains(show, "2 files and 0 directories") || !strings.Contains(show, digest) {
			t.Fatalf("breakglass show:\n%s", show)
		}
		c.MustIn(t, "proxmox-mcp", "breakglass", "approve", id, "--digest", digest)
		if out := waitDone(id); out["state"] != "done" {
			t.Fatalf("the runner: %v", out)
		}
		if c.Exists("/srv/model-repo/old") {
			t.Fatal("/srv/model-repo/old is still there")
		}
	})

	t.Run("delete_volume", func(t *testing.T) {
		id, digest := request(map[string]any{"kind": "delete_volume", "volume": "vgmodels/models"})
		if _, text, isErr := bgCall(t, cc, cctx, "proxmox_breakglass_approve", map[string]any{"id": id, "digest": digest}); isErr {
			t.Fatalf("carol approves: %s", text)
		}
		out := waitDone(id)
		if out["state"] != "done" {
			t.Fatalf("the runner: %v\n%s", out, c.Journal("-u", "proxmox-mcp-breakglass.service", "-n", "30"))
		}
		if lvm != "real LVM" && c.Run(context.Background(), "test", "-e", "/run/lvm/fake-vgmodels-models").OK() {
			t.Fatal("the fake LV is still there")
		}
		t.Logf("booted: vgmodels/models removed through %s", lvm)
	})
}

func hexSum(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

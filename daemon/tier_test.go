package daemon

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/proxmox-mcp/proxmox-mcp/policy"
	"github.com/proxmox-mcp/proxmox-mcp/tools"
)

// Reproduces: the tier of a key bound to a custom policy was read from
// disk and parsed on every request (policy.Store.Tier read the active
// version each time). It now comes from the compiled policy: with the
// active version's file gone after the first request, later requests
// still get the tier, and activating a new version changes it.
func TestTierOfReadsTheActiveVersionOncePerChange(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	// An hour ahead: the index is not "just written", as on a host where
	// the policy was activated a while ago.
	s, err := policy.NewStore(dir, func() time.Time { return time.Now().Add(time.Hour) })
	if err != nil {
		t.Fatal(err)
	}
	const tests = "package proxmox_mcp.policy_test\n\ntest_nothing if true\n"
	src := func(tier string) []byte {
		return []byte("package proxmox_mcp.policy\n\nimport data.proxmox_mcp.lib\n\ntier := \"" + tier + "\"\n\ndecision := lib.allow(\"x\") if input.method != \"\"\n")
	}
	activate := func(tier string) {
		t.Helper()
		res, err := s.Draft(ctx, "ops", src(tier), []byte(tests))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Activate(ctx, "ops", res.Digest); err != nil {
			t.Fatal(err)
		}
	}
	activate("operator")
	e, err := policy.NewEngine(ctx, s, policy.EngineOptions{})
	if err != nil {
		t.Fatal(err)
	}
	d := &Daemon{pstore: s, engine: e}
	b := policy.Binding{Policy: "ops"}
	if tier, err := d.tierOf(ctx, b); err != nil || tier != tools.TierOperator {
		t.Fatalf("tierOf = %q, %v", tier, err)
	}
	if err := os.Remove(filepath.Join(dir, "policies", "ops", "v1.rego")); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if tier, err := d.tierOf(ctx, b); err != nil || tier != tools.TierOperator {
			t.Fatalf("tierOf after the first request = %q, %v: the active version was read again", tier, err)
		}
	}
	activate("admin")
	if tier, err := d.tierOf(ctx, b); err != nil || tier != tools.TierAdmin {
		t.Fatalf("tierOf after activating v2 = %q, %v; want admin", tier, err)
	}
	if tier, err := d.tierOf(ctx, policy.Binding{Profile: policy.ReadOnly}); err != nil || tier != tools.TierReadOnly {
		t.Fatalf("tierOf(read-only) = %q, %v", tier, err)
	}
}

package policy

import (
	"context"
	"strings"
	"testing"

	"github.com/proxmox-mcp/proxmox-mcp/schema"
)

func hostInput(op, path string, risk schema.Risk) *Input {
	return &Input{
		Principal: Principal{KeyID: "abcdefghijklmnop", Name: "alice", Transport: "loopback"},
		Tool:      "proxmox_host_file_read", Risk: risk,
		Guard: Guard{Evaluated: true},
		Host:  &HostOp{Op: op, Path: path, Root: "/var/log"},
	}
}

// Only host_decision decides a host operation: a custom policy written
// for API calls, whose decision allows every read, denies host reads.
func TestHostOperationsNeedHostDecision(t *testing.T) {
	ctx := context.Background()
	allReads := []byte(`package proxmox_mcp.policy

import rego.v1

default decision := {"effect": "deny", "reasons": ["no"], "obligations": []}

decision := {"effect": "allow", "reasons": ["reads are fine"], "obligations": []} if input.risk == "read"
`)
	c, err := CompileCustom(ctx, "reads@1", allReads)
	if err != nil {
		t.Fatal(err)
	}
	if c.DecidesHost() {
		t.Fatal("a policy without host_decision says it decides host operations")
	}
	d := c.DecideHost(ctx, hostInput("file.read", "/var/log/syslog", schema.RiskRead), 0)
	if d.Effect != Deny || !strings.Contains(strings.Join(d.Reasons, " "), "no host_decision rule") {
		t.Errorf("a host read under an API-only policy: %+v; want a deny naming host_decision", d)
	}
	// Nor does its decision rule decide one, whoever asks.
	if d := c.Decide(ctx, hostInput("file.read", "/var/log/syslog", schema.RiskRead), 0); d.Effect != Deny {
		t.Errorf("Decide of a host operation: %+v; want a deny", d)
	}

	withHost := append(allReads, []byte(`
default host_decision := {"effect": "deny", "reasons": ["only /srv/app"], "obligations": []}

host_decision := {"effect": "allow", "reasons": ["the app's files"], "obligations": []} if {
	startswith(input.host.path, "/srv/app/")
}
`)...)
	c, err = CompileCustom(ctx, "app@1", withHost)
	if err != nil {
		t.Fatal(err)
	}
	if d := c.DecideHost(ctx, hostInput("file.read", "/srv/app/config.yaml", schema.RiskRead), 0); d.Effect != Allow {
		t.Errorf("host_decision allowing /srv/app: %+v", d)
	}
	if d := c.DecideHost(ctx, hostInput("file.read", "/var/log/syslog", schema.RiskRead), 0); d.Effect != Deny || d.Reasons[0] != "only /srv/app" {
		t.Errorf("host_decision elsewhere: %+v", d)
	}
	// A write with guard hits is still refused: the guard applies over
	// every policy.
	in := hostInput("file.write", "/srv/app/x", schema.RiskWrite)
	in.Guard = Guard{Evaluated: false}
	if d := c.DecideHost(ctx, in, 0); d.Effect != Deny || !strings.Contains(d.Reasons[len(d.Reasons)-1], "guard did not run") {
		t.Errorf("a host write the guard did not see: %+v", d)
	}
}

func TestProfilesDecideHostOperations(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		profile string
		in      *Input
		want    Effect
	}{
		{ReadOnly, hostInput("file.read", "/var/log/syslog", schema.RiskRead), Allow},
		{ReadOnly, hostInput("file.read", "/etc/hosts", schema.RiskRead), Deny},
		{Operator, hostInput("file.write", "/var/log/x", schema.RiskWrite), Deny},
		{Admin, hostInput("file.write", "/etc/default/grub", schema.RiskWrite), Allow},
		{Root, hostInput("file.write", "/etc/network/interfaces", schema.RiskWrite), Allow},
	} {
		c, err := CompileBuiltin(ctx, tc.profile)
		if err != nil {
			t.Fatal(err)
		}
		if d := c.DecideHost(ctx, tc.in, 0); d.Effect != tc.want {
			t.Errorf("%s %s %s: %s (%v); want %s", tc.profile, tc.in.Host.Op, tc.in.Host.Path, d.Effect, d.Reasons, tc.want)
		}
	}
}

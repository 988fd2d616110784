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

// A command that runs other programs (a shell, an interpreter, a
// launcher) runs only where the allowing decision names its path: a
// policy that allows every command allows no shell, and the root profile
// none either.
func TestCommandsThatRunOthersMustBeNamed(t *testing.T) {
	ctx := context.Background()
	everything := []byte(`package proxmox_mcp.policy

import rego.v1

default decision := {"effect": "deny", "reasons": ["no"], "obligations": []}

default host_decision := {"effect": "allow", "reasons": ["any command"], "obligations": []}

host_decision := {"effect": "allow", "reasons": ["alice may run /usr/bin/bash"], "obligations": []} if {
	input.host.command.path == "/usr/bin/bash"
	input.principal.name == "alice"
}
`)
	c, err := CompileCustom(ctx, "everything@1", everything)
	if err != nil {
		t.Fatal(err)
	}
	cmd := func(name, path, class string) *Input {
		in := hostInput("command.exec", "", schema.RiskDestructive)
		in.Principal.Name = name
		in.Host = &HostOp{Op: "command.exec", Command: &Command{Path: path, Argv: []string{path}, Cwd: "/", Class: class, TimeoutSec: 60}}
		return in
	}
	for _, tc := range []struct {
		name, who, path, class string
		want                   Effect
	}{
		{"a plain program", "bob", "/usr/bin/df", "", Allow},
		{"a shell the policy names for alice", "alice", "/usr/bin/bash", "shell", Allow},
		{"the same shell for bob", "bob", "/usr/bin/bash", "shell", Deny},
		{"a shell the policy never named", "alice", "/usr/bin/dash", "shell", Deny},
		{"an interpreter", "alice", "/usr/bin/python3.13", "interpreter", Deny},
		{"a launcher", "alice", "/usr/bin/env", "launcher", Deny},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := c.DecideHost(ctx, cmd(tc.who, tc.path, tc.class), 0)
			if d.Effect != tc.want {
				t.Fatalf("%+v; want %s", d, tc.want)
			}
			if tc.want == Deny && !strings.Contains(d.Reasons[0], "runs only when a policy names it") {
				t.Errorf("reason %q does not say why", d.Reasons[0])
			}
		})
	}
	eng := profileEngine(t)
	if d := eng.DecideHost(ctx, Binding{Profile: "root"}, cmd("alice", "/usr/bin/bash", "shell")); d.Effect != Deny {
		t.Errorf("the root profile on a shell: %+v; want a deny", d)
	}
	if d := eng.DecideHost(ctx, Binding{Profile: "root"}, cmd("alice", "/usr/bin/df", "")); d.Effect != Allow {
		t.Errorf("the root profile on df: %+v; want an allow", d)
	}
}

// A reason names a program only as a word of its own: a bare name such as
// "at" inside "confirmation", or /usr/bin/bash inside /usr/bin/bash5, lets
// nothing run (it did before: "needs confirmation" let the launcher at
// run).
func TestNamesPathIsAWord(t *testing.T) {
	for _, tc := range []struct {
		reason, path string
		want         bool
	}{
		{"running a command inside lxc guest 200 needs confirmation", "at", false},
		{"root keys may do anything on the host but what is always refused", "at", false},
		{"alice may run /usr/bin/bash5", "/usr/bin/bash", false},
		{"alice may run /usr/bin/bash", "/usr/bin/bash", true},
		{"alice may run /usr/bin/bash.", "/usr/bin/bash", true},
		{"alice may run /usr/bin/bash, nothing else", "/usr/bin/bash", true},
		{"the sandbox test may run /usr/bin/dash", "/usr/bin/dash", true},
		{"at may run inside 200", "at", true},
		{"run (at) in 200", "at", true},
		{"x/usr/bin/bash", "/usr/bin/bash", false},
		{"", "at", false},
		{"anything", "", false},
	} {
		if got := namesPath(tc.reason, tc.path); got != tc.want {
			t.Errorf("namesPath(%q, %q) = %v; want %v", tc.reason, tc.path, got, tc.want)
		}
	}
	ctx := context.Background()
	eng := profileEngine(t)
	in := hostInput("guest.exec", "", schema.RiskDestructive)
	in.Host = &HostOp{Op: "guest.exec", Guest: &GuestRef{VMID: 200, Type: "lxc", Node: "pve1"},
		Command: &Command{Path: "at", Argv: []string{"at", "now"}, Cwd: "/", Class: "launcher", TimeoutSec: 60}}
	for _, profile := range []string{"operator", "admin", "root"} {
		if d := eng.DecideHost(ctx, Binding{Profile: profile}, in); d.Effect != Deny {
			t.Errorf("%s on the launcher at inside a guest: %+v; want a deny", profile, d)
		}
	}
}

// profileEngine is an engine with the built-in profiles only.
func profileEngine(t *testing.T) *Engine {
	t.Helper()
	s, err := NewStore(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	eng, err := NewEngine(context.Background(), s, EngineOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return eng
}

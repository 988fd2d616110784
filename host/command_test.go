package host

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/proxmox-mcp/proxmox-mcp/journal"
)

func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		path string
		argv []string
		want string
	}{
		{"/usr/bin/df", []string{"df", "-h"}, ""},
		{"/usr/bin/dash", []string{"sh", "-c", "id"}, ClassShell},
		{"/usr/bin/bash", []string{"/bin/bash"}, ClassShell},
		// A multi-call binary is what argv[0] says.
		{"/usr/bin/busybox", []string{"ls"}, ClassShell},
		{"/usr/bin/python3.13", []string{"python3"}, ClassInterpreter},
		{"/usr/bin/perl5.40.1", []string{"perl"}, ClassInterpreter},
		{"/usr/bin/mawk", []string{"awk", "BEGIN{system(\"id\")}"}, ClassInterpreter},
		{"/usr/bin/sed", []string{"sed", "e id"}, ClassInterpreter},
		{"/usr/bin/env", []string{"env", "id"}, ClassLauncher},
		{"/usr/bin/nsenter", []string{"nsenter", "-t", "1", "-a"}, ClassLauncher},
		{"/usr/bin/systemd-run", []string{"systemd-run", "id"}, ClassLauncher},
		{"/usr/bin/find", []string{"find", "/", "-name", "x"}, ""},
		{"/usr/bin/find", []string{"find", "/", "-exec", "id", ";"}, ClassLauncher},
		{"/usr/bin/find", []string{"find", "/", "-okdir", "id", ";"}, ClassLauncher},
		{"/usr/bin/tar", []string{"tar", "-cf", "/dev/null", "--to-command=id", "/etc"}, ClassLauncher},
		{"/usr/bin/tar", []string{"tar", "-tf", "x.tar"}, ""},
		{"/usr/bin/ip", []string{"ip", "-j", "addr"}, ""},
		{"/usr/bin/ip", []string{"ip", "netns", "exec", "x", "id"}, ClassLauncher},
		{"/usr/sbin/pct", []string{"pct", "list"}, ""},
		{"/usr/sbin/pct", []string{"pct", "exec", "100", "--", "id"}, ClassLauncher},
		{"/usr/sbin/qm", []string{"qm", "guest", "exec", "100", "id"}, ClassLauncher},
		{"/usr/bin/pvesh", []string{"pvesh", "get", "/version"}, ClassLauncher},
	} {
		if got := Classify(tc.path, tc.argv); got != tc.want {
			t.Errorf("Classify(%s, %q) = %q; want %q", tc.path, tc.argv, got, tc.want)
		}
	}
}

func TestCheckArgv(t *testing.T) {
	long := strings.Repeat("a", MaxArgBytes+1)
	many := make([]string, MaxArgs+1)
	for i := range many {
		many[i] = "x"
	}
	for _, tc := range []struct {
		argv []string
		says string
	}{
		{nil, "at least the program"},
		{[]string{""}, "argv[0]: must name the program"},
		{[]string{"ls", "a\x00b"}, "argv[1]: holds a NUL byte"},
		{[]string{"ls", long}, "argv[1]: is 4097 bytes"},
		{many, "holds 257 arguments"},
		{[]string{"ls\n"}, "argv[0]"},
	} {
		err := CheckArgv("argv", tc.argv)
		if err == nil || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("CheckArgv(%q) = %v; want it to say %q", tc.argv, err, tc.says)
		}
	}
	if err := CheckArgv("argv", []string{"ls", "-la", "/"}); err != nil {
		t.Errorf("ls -la /: %v", err)
	}
}

// The helper runs only what root alone controls: a program in a directory
// another user may write is refused, whatever its name or link.
func TestResolveExecutable(t *testing.T) {
	needRoot(t)
	if p, err := ResolveExecutable("argv[0]", "true", true); err != nil || !strings.HasSuffix(p, "/true") || !filepath.IsAbs(p) {
		t.Errorf("true: %q, %v", p, err)
	}
	// sh is a link on Debian (to dash): the policy sees the real program.
	if p, err := ResolveExecutable("argv[0]", "/bin/sh", true); err != nil || p == "/bin/sh" && isLink("/bin/sh") {
		t.Errorf("/bin/sh resolved to %q, %v", p, err)
	}
	dir := t.TempDir()
	open := filepath.Join(dir, "open")
	must(t, os.Mkdir(open, 0o777))
	must(t, os.Chmod(open, 0o777))
	prog := filepath.Join(open, "prog")
	must(t, os.WriteFile(prog, []byte("#!/bin/true\n"), 0o755))
	link := filepath.Join(dir, "link")
	must(t, os.Symlink(prog, link))
	for _, tc := range []struct{ name, says string }{
		{prog, "someone other than root may change"},
		{link, "someone other than root may change"},
		{"no-such-program-here", "is not an executable in"},
		{"./true", "absolute"},
		{"/etc", "not an executable file"},
		{"..", "not a program name"},
	} {
		if _, err := ResolveExecutable("argv[0]", tc.name, true); err == nil || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("ResolveExecutable(%q) = %v; want it to say %q", tc.name, err, tc.says)
		}
	}
	// The daemon's early resolution does not check owners.
	if p, err := ResolveExecutable("argv[0]", prog, false); err != nil || p != prog {
		t.Errorf("untrusted resolution of %s: %q, %v", prog, p, err)
	}
}

func isLink(p string) bool {
	fi, err := os.Lstat(p)
	return err == nil && fi.Mode()&os.ModeSymlink != 0
}

func TestCappedOutput(t *testing.T) {
	c := &capped{max: 5}
	c.Write([]byte("héllo world"))
	o := c.output()
	// "hé" is 3 bytes, "hél" 4, "héll" 5: five bytes end on a character.
	if o.Data != "héll\n[proxmox-mcp: output truncated: 5 of 12 bytes shown]\n" || !o.Truncated || o.Bytes != 12 || o.Encoding != "utf-8" {
		t.Errorf("%+v", o)
	}
	c = &capped{max: 2}
	c.Write([]byte("é!"))
	// The cap cuts é's second byte: the partial character is dropped.
	if o := c.output(); !strings.HasPrefix(o.Data, "\n[proxmox-mcp: output truncated: 0 of 3") && !strings.HasPrefix(o.Data, "é") {
		t.Errorf("%+v", o)
	}
	c = &capped{max: 10}
	c.Write([]byte{0xff, 0xfe, 0x00})
	if o := c.output(); o.Encoding != "base64" || o.Data != "//4A" || o.Truncated {
		t.Errorf("binary: %+v", o)
	}
}

// A daemon that lies about a command is refused by the helper, before
// anything runs: the helper resolves the program, the working directory
// and the writable paths itself.
func TestHelperRefusesCommandsItCannotVouchFor(t *testing.T) {
	h := newHelperBed(t)
	opts := h.srv.opts
	opts.Services = &Services{}
	srv, err := NewServer(opts)
	must(t, err)
	ctx := context.Background()
	must(t, os.Symlink("/etc", filepath.Join(h.root, "etc-link")))
	open := filepath.Join(h.dir, "open")
	must(t, os.Mkdir(open, 0o777))
	must(t, os.Chmod(open, 0o777))
	must(t, os.WriteFile(filepath.Join(open, "tool"), []byte("#!/bin/true\n"), 0o755))
	exec := func(args map[string]any) map[string]any { return args }
	for _, tc := range []struct {
		name string
		key  string
		args map[string]any
		code string
		says string
	}{
		{"a program another user may replace", h.rootKey, exec(map[string]any{"argv": []string{filepath.Join(open, "tool")}}), "bad_request", "someone other than root"},
		{"a relative program", h.rootKey, exec(map[string]any{"argv": []string{"./tool"}}), "bad_request", "absolute"},
		{"a shell under the root profile", h.rootKey, exec(map[string]any{"argv": []string{"sh", "-c", "id"}}), "denied", "runs only when a policy names it"},
		{"find -exec under the root profile", h.rootKey, exec(map[string]any{"argv": []string{"find", "/", "-exec", "id", ";"}}), "denied", "launcher"},
		{"a working directory through a link", h.rootKey, exec(map[string]any{"argv": []string{"true"}, "cwd": filepath.Join(h.root, "etc-link")}), "bad_request", "symbolic link"},
		{"a working directory outside the roots", h.rootKey, exec(map[string]any{"argv": []string{"true"}, "cwd": "/etc"}), "bad_request", "not beneath an allowed root"},
		{"a writable path in a read-only root", h.rootKey, exec(map[string]any{"argv": []string{"true"}, "writable": []string{h.ro}}), "bad_request", "allows no writes"},
		{"a writable refused file", h.rootKey, exec(map[string]any{"argv": []string{"true"}, "writable": []string{filepath.Join(h.root, "sub", "node.key")}}), "refused", "whatever the policy"},
		{"a writable repository", h.rootKey, exec(map[string]any{"argv": []string{"true"}, "writable": []string{h.protected}}), "denied", "break-glass"},
		{"a writable root above the repository", h.rootKey, exec(map[string]any{"argv": []string{"true"}, "writable": []string{h.root}}), "denied", "break-glass"},
		{"a timeout too long", h.rootKey, exec(map[string]any{"argv": []string{"true"}, "timeout_sec": MaxTimeout + 1}), "bad_request", "timeout_sec"},
		{"stdin too big", h.rootKey, exec(map[string]any{"argv": []string{"cat"}, "stdin": strings.Repeat("x", MaxStdin+1)}), "bad_request", "stdin is"},
		{"an environment", h.rootKey, exec(map[string]any{"argv": []string{"true"}, "env": []string{"LD_PRELOAD=/tmp/x.so"}}), "bad_request", `unknown field "env"`},
		{"a command the read-only profile has not reviewed", h.readOnly, exec(map[string]any{"argv": []string{"rm", "-rf", h.root}}), "denied", "reviewed diagnostic"},
		{"a reviewed program with another shape", h.readOnly, exec(map[string]any{"argv": []string{"df", "--output=source", "-h"}}), "denied", "reviewed diagnostic"},
		{"guest: a VMID out of range", h.rootKey, exec(map[string]any{"op": "guest.exec", "vmid": 5, "argv": []string{"id"}}), "bad_request", "vmid 5: must be 100"},
		{"guest: a container of no node here", h.rootKey, exec(map[string]any{"op": "guest.exec", "vmid": 4242, "argv": []string{"id"}}), "not_found", "is not a container of this node"},
		{"guest: an argv with a NUL", h.rootKey, exec(map[string]any{"op": "guest.exec", "vmid": 4242, "argv": []string{"id", "a\x00"}}), "bad_request", "NUL"},
		{"guest: a launcher named bare", h.rootKey, exec(map[string]any{"op": "guest.exec", "vmid": 4242, "argv": []string{"at", "now"}}), "bad_request", "absolute path"},
		{"guest: a working directory it does not take", h.rootKey, exec(map[string]any{"op": "guest.exec", "vmid": 4242, "argv": []string{"id"}, "cwd": "/"}), "bad_request", `unknown field "cwd"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before, err := h.j.Tail(ctx, 1000)
			must(t, err)
			op := "command.exec"
			if o, ok := tc.args["op"].(string); ok {
				op = o
				delete(tc.args, "op")
			}
			resp := srv.Handle(ctx, daemon, request(t, tc.key, op, tc.args))
			if resp.OK || resp.Error == nil || resp.Error.Code != tc.code || !strings.Contains(resp.Error.Message, tc.says) {
				t.Fatalf("answer %+v; want %s saying %q", resp.Error, tc.code, tc.says)
			}
			after, err := h.j.Tail(ctx, 1000)
			must(t, err)
			if len(after) != len(before)+1 || after[len(after)-1].Outcome == journal.OutcomeOK {
				t.Errorf("the refusal was not journaled as one refused row")
			}
		})
	}
}

// The sandbox of a command: the refused paths, the system bus, systemd's
// sockets, the helper's socket and the protected devices inaccessible, the
// repository read-only, only the asked paths writable.
func TestSandboxOfACommand(t *testing.T) {
	h := newHelperBed(t)
	opts := h.srv.opts
	opts.Socket = "/run/proxmox-mcp-helper/helper.sock"
	opts.ProtectedDevices = []string{"/dev/null-protected-test"}
	srv, err := NewServer(opts)
	must(t, err)
	sb := srv.sandbox([]string{h.root + "/sub"})
	for _, want := range []string{"-" + h.secretDir, "-" + h.secretFile, "-/run/dbus", "-/run/systemd/private", "-/run/proxmox-mcp-helper", "-/dev/null-protected-test"} {
		if !contains(sb.Inaccessible, want) {
			t.Errorf("Inaccessible %q lacks %s", sb.Inaccessible, want)
		}
	}
	if len(sb.ReadOnly) != 1 || sb.ReadOnly[0] != "-"+h.protected {
		t.Errorf("ReadOnly %q", sb.ReadOnly)
	}
	if len(sb.Writable) != 1 || sb.Writable[0] != h.root+"/sub" {
		t.Errorf("Writable %q", sb.Writable)
	}
	props := ExecSpec{Path: "/usr/bin/true", Argv: []string{"true"}, Cwd: "/", Sandbox: sb}.properties(-1, 1, 2)
	names := map[string]bool{}
	values := map[string]any{}
	for _, p := range props {
		names[p.Name] = true
		values[p.Name] = p.Value.Value()
	}
	for _, want := range []string{"Type", "ProtectSystem", "NoNewPrivileges", "CapabilityBoundingSet", "PrivateTmp", "PrivatePIDs", "RestrictNamespaces", "RuntimeMaxUSec", "MemoryMax", "TasksMax", "InaccessiblePaths", "ReadOnlyPaths", "ReadWritePaths"} {
		if !names[want] {
			t.Errorf("the unit lacks %s", want)
		}
	}
	// Type=simple with PrivatePIDs=yes (a string in systemd 257): with
	// Type=exec, systemd 257 lost the exit status of a command that
	// exited at once (TestBootedExecStartRace).
	if values["Type"] != "simple" || values["PrivatePIDs"] != "yes" {
		t.Errorf("the unit has Type=%v, PrivatePIDs=%v; want simple and yes", values["Type"], values["PrivatePIDs"])
	}
	if names["StandardInputFileDescriptor"] {
		t.Error("a command without stdin gets a stdin pipe")
	}
	if m := capabilityMask(); m&(1<<21) != 0 || m&(1<<19) != 0 || m&(1<<27) != 0 {
		t.Errorf("the bounding set %#x holds CAP_SYS_ADMIN, CAP_SYS_PTRACE or CAP_MKNOD", m)
	}
}

func contains(list []string, s string) bool {
	for _, e := range list {
		if e == s {
			return true
		}
	}
	return false
}

// The arguments of a command as the helper decodes them: strictly, and
// an argument vector CheckArgv accepts holds to every rule; classifying
// it never fails.
func FuzzExecArgs(f *testing.F) {
	f.Add([]byte(`{"argv":["zpool","status"],"timeout_sec":5}`))
	f.Add([]byte(`{"argv":["find","/","-exec","id",";"],"cwd":"/srv","writable":["/srv/a"]}`))
	f.Add([]byte(`{"argv":["sh\u0000","-c"],"stdin":"eA==","stdin_encoding":"base64"}`))
	f.Add([]byte(`{"argv":[]}`))
	f.Fuzz(func(t *testing.T, args []byte) {
		if len(args) > 64<<10 {
			// The argument rules are about sizes the envelope bounds;
			// huge inputs only slow the smoke run past its deadline.
			t.Skip()
		}
		op, err := parseOp("command.exec", args)
		if err != nil {
			if asWire(err).Code != "bad_request" {
				t.Fatalf("decoding %q: %v is not a bad_request", args, err)
			}
			return
		}
		e := op.(*execOp)
		if err := CheckArgv("argv", e.Argv); err != nil {
			var pe *PathError
			if !errors.As(err, &pe) || !strings.HasPrefix(pe.Field, "argv") {
				t.Fatalf("CheckArgv(%q): %v names no argv field", e.Argv, err)
			}
			return
		}
		size := 0
		for _, a := range e.Argv {
			size += len(a)
			if strings.IndexByte(a, 0) >= 0 || len(a) > MaxArgBytes {
				t.Fatalf("accepted %q", a)
			}
		}
		if len(e.Argv) == 0 || len(e.Argv) > MaxArgs || size > MaxArgvSize || e.Argv[0] == "" {
			t.Fatalf("accepted argv %q", e.Argv)
		}
		switch c := Classify("/usr/bin/"+filepath.Base(e.Argv[0]), e.Argv); c {
		case "", ClassShell, ClassInterpreter, ClassLauncher:
		default:
			t.Fatalf("class %q", c)
		}
	})
}

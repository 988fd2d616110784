package host

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/proxmox-mcp/proxmox-mcp/authority"
	"github.com/proxmox-mcp/proxmox-mcp/journal"
	"github.com/proxmox-mcp/proxmox-mcp/keys"
	"github.com/proxmox-mcp/proxmox-mcp/policy"
)

const daemonUID = 64124

// helperBed is a helper as installed: a state directory owned by the
// daemon's user, root's copy of the keys beside it, keys made through
// that copy, a tree with one writable root and one protected path in it,
// the helper's own journal.
type helperBed struct {
	*bed
	srv                      *Server
	j                        *journal.Journal
	stateDir                 string
	admin, readOnly, rootKey string
	protected                string
}

var fastParams = keys.Params{N: 1 << 10, R: 8, P: 1}

// builtinProfiles are the built-in profiles compiled once for the
// package's helpers (each compiling its own cost 0.4 s under -race).
var builtinProfiles = sync.OnceValues(func() (*policy.CompiledProfiles, error) {
	return policy.CompileProfiles(context.Background())
})

func newHelperBed(t testing.TB) *helperBed {
	t.Helper()
	needRoot(t)
	ctx := context.Background()
	b := newBed(t)
	h := &helperBed{bed: b, stateDir: filepath.Join(b.dir, "daemon-state"), protected: filepath.Join(b.root, "model-repo")}
	must(t, os.Mkdir(h.stateDir, 0o750))
	must(t, os.Chown(h.stateDir, daemonUID, daemonUID))
	must(t, os.Mkdir(h.protected, 0o755))
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	auth := authority.New(h.stateDir, log, nil)
	ks, err := keys.Open(h.stateDir, keys.Options{Params: fastParams, Shared: auth})
	must(t, err)
	for _, k := range []struct {
		name, profile string
		out           *string
	}{{"alice", "admin", &h.admin}, {"bob", "read-only", &h.readOnly}, {"root", "root", &h.rootKey}} {
		c, err := ks.Create(ctx, keys.CreateRequest{Name: k.name, Binding: keys.Binding{Profile: k.profile}})
		must(t, err)
		*k.out = c.Key.Reveal()
	}
	// What the helper trusts: root's copy.
	rootKeys, err := keys.Open(auth.Dir(), keys.Options{Params: fastParams})
	must(t, err)
	v, err := keys.NewVerifier(rootKeys, keys.VerifierOptions{})
	must(t, err)
	ps, err := policy.NewStore(auth.Dir(), nil)
	must(t, err)
	profiles, err := builtinProfiles()
	must(t, err)
	eng, err := policy.NewEngine(ctx, ps, policy.EngineOptions{Logger: log, Profiles: profiles})
	must(t, err)
	h.j, err = journal.Open(ctx, filepath.Join(b.dir, "helper-journal.db"), journal.Options{Logger: log})
	must(t, err)
	t.Cleanup(func() { h.j.Close() })
	h.srv, err = NewServer(ServerOptions{Tree: b.tree, Keys: v, Policies: eng, Journal: h.j,
		PeerUIDs: []int{daemonUID, 0}, Protected: []string{h.protected}, Logger: log})
	must(t, err)
	return h
}

func request(t *testing.T, key, op string, args any) []byte {
	t.Helper()
	a, err := json.Marshal(args)
	must(t, err)
	b, err := json.Marshal(Request{V: WireVersion, ID: "call-1", Key: key, Source: "127.0.0.1", Op: op, Args: a})
	must(t, err)
	return b
}

var daemon = Peer{PID: 4242, UID: daemonUID, GID: daemonUID}

func TestHelperAllowsWhatThePolicyAllows(t *testing.T) {
	h := newHelperBed(t)
	ctx := context.Background()
	resp := h.srv.Handle(ctx, daemon, request(t, h.admin, "file.read", map[string]any{"path": h.root + "/syslog"}))
	if !resp.OK || resp.Error != nil || resp.ID != "call-1" {
		t.Fatalf("an admin's read: %+v", resp)
	}
	var c Content
	must(t, json.Unmarshal(resp.Result, &c))
	if c.Data != "line one\nline two\n" || c.SHA256 == "" {
		t.Errorf("the content: %+v", c)
	}

	data := "key = value\n"
	resp = h.srv.Handle(ctx, daemon, request(t, h.admin, "file.write", map[string]any{"path": h.root + "/sub/app.conf", "content": data, "sha256": sum([]byte(data))}))
	if !resp.OK {
		t.Fatalf("an admin's write: %+v", resp.Error)
	}
	if got, _ := os.ReadFile(h.root + "/sub/app.conf"); string(got) != data {
		t.Errorf("the file holds %q", got)
	}
	// The helper's journal: a read row, then the write's intent and
	// receipt, by the verified key, with the daemon's id beside the
	// helper's own.
	evs, err := h.j.Tail(ctx, 10)
	must(t, err)
	var kinds []string
	for _, e := range evs {
		kinds = append(kinds, string(e.Kind)+":"+e.Tool+":"+e.Principal.KeyName+":"+string(e.Outcome))
		if e.Principal.Transport != "helper" || e.Kind != journal.KindReceipt && !strings.Contains(string(e.Args), `"daemon_id":"call-1"`) {
			t.Errorf("row %d: transport %q, args %s", e.ID, e.Principal.Transport, e.Args)
		}
	}
	want := "call:proxmox_host_file_read:alice:ok intent:proxmox_host_file_write:alice:pending receipt:proxmox_host_file_write:alice:ok"
	if got := strings.Join(kinds, " "); got != want {
		t.Errorf("journal rows:\n%s\nwant\n%s", got, want)
	}
}

// A daemon that lies is refused every time, and every refusal is
// journaled.
func TestHelperRefusesALyingDaemon(t *testing.T) {
	h := newHelperBed(t)
	ctx := context.Background()
	// A key the daemon's uid wrote into its own state directory, which
	// root's copy never held.
	forged, err := keys.Open(h.stateDir, keys.Options{Params: fastParams})
	must(t, err)
	c, err := forged.Create(ctx, keys.CreateRequest{Name: "intruder", Binding: keys.Binding{Profile: "root"}})
	must(t, err)
	read := map[string]any{"path": h.root + "/syslog"}
	for _, tc := range []struct {
		name string
		peer Peer
		body []byte
		code string
		says string
	}{
		{"another uid", Peer{UID: 1000}, request(t, h.admin, "file.read", read), "refused", "uid 1000 may not use the helper"},
		{"a key root never made", daemon, request(t, c.Key.Reveal(), "file.read", read), "unauthenticated", "root's copy of the keys"},
		{"a made-up key", daemon, request(t, "pmcp_aaaaaaaaaaaaaaaa_bbbb", "file.read", read), "unauthenticated", ""},
		{"a decision handed over", daemon, []byte(strings.Replace(string(request(t, h.readOnly, "file.read", read)), `"op"`, `"decision":"allow","op"`, 1)), "bad_request", `unknown field "decision"`},
		{"an argument the op does not take", daemon, request(t, h.admin, "file.read", map[string]any{"path": h.root + "/syslog", "follow": true}), "bad_request", `unknown field "follow"`},
		{"a path outside the roots", daemon, request(t, h.rootKey, "file.read", map[string]any{"path": "/etc/shadow"}), "bad_request", "not beneath an allowed root"},
		{"a path not canonical", daemon, request(t, h.rootKey, "file.read", map[string]any{"path": h.root + "/../shadow"}), "bad_request", `the element ".."`},
		{"a refused file", daemon, request(t, h.rootKey, "file.read", map[string]any{"path": h.root + "/sub/node.key"}), "refused", "whatever the policy"},
		{"the policy says no", daemon, request(t, h.readOnly, "file.read", read), "denied", "only read files under /var/log"},
		{"a write to the repository by admin", daemon, request(t, h.admin, "file.write", map[string]any{"path": h.protected + "/m.bin", "content": "x", "sha256": sum([]byte("x"))}), "denied", "cannot request break-glass"},
		{"a write to the repository by root", daemon, request(t, h.rootKey, "file.write", map[string]any{"path": h.protected + "/m.bin", "content": "x", "sha256": sum([]byte("x"))}), "denied", "proxmox_breakglass_request"},
		{"an unknown op", daemon, request(t, h.rootKey, "file.chmod", read), "bad_request", "knows breakglass.approve, breakglass.confirm, breakglass.deny, breakglass.request, breakglass.stage, breakglass.status, command.exec, file.list, file.read, file.stat, file.write, guest.exec, service.control"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before, err := h.j.Tail(ctx, 1000)
			must(t, err)
			resp := h.srv.Handle(ctx, tc.peer, tc.body)
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
	if _, err := os.Stat(h.protected + "/m.bin"); !os.IsNotExist(err) {
		t.Errorf("a refused write left a file: %v", err)
	}
}

// Over a real socket, with the peer's credentials from the kernel; the
// helper exits when idle.
func TestHelperServesASocket(t *testing.T) {
	h := newHelperBed(t)
	sock := filepath.Join(h.dir, "helper.sock")
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"})
	must(t, err)
	defer l.Close()
	done := make(chan error, 1)
	go func() { done <- h.srv.Serve(context.Background(), l, 500*time.Millisecond) }()
	a, _ := json.Marshal(map[string]any{"path": h.root})
	resp, err := Call(context.Background(), sock, Request{ID: "list-1", Key: h.admin, Op: "file.list", Args: a}, nil)
	must(t, err)
	if !resp.OK || resp.ID != "list-1" {
		t.Fatalf("list over the socket: %+v", resp)
	}
	var l2 Listing
	must(t, json.Unmarshal(resp.Result, &l2))
	if l2.Total == 0 {
		t.Errorf("listing %+v", l2)
	}
	select {
	case err := <-done:
		must(t, err)
	case <-time.After(30 * time.Second):
		t.Fatal("the helper did not exit when idle")
	}
}

// The configuration's switches refuse writes in the helper itself, whatever
// the daemon let through.
func TestHelperAppliesTheSwitches(t *testing.T) {
	h := newHelperBed(t)
	h.srv.opts.RefuseWrites = "the read_only switch is on"
	resp := h.srv.Handle(context.Background(), daemon, request(t, h.rootKey, "file.write", map[string]any{"path": h.root + "/x", "content": "x", "sha256": sum([]byte("x"))}))
	if resp.OK || resp.Error == nil || resp.Error.Code != "refused" || !strings.Contains(resp.Error.Message, "read_only") {
		t.Fatalf("a write under read_only: %+v", resp.Error)
	}
	if _, err := os.Stat(h.root + "/x"); !os.IsNotExist(err) {
		t.Errorf("the refused write left a file: %v", err)
	}
	if resp := h.srv.Handle(context.Background(), daemon, request(t, h.rootKey, "file.read", map[string]any{"path": h.root + "/syslog"})); !resp.OK {
		t.Errorf("a read under read_only: %+v", resp.Error)
	}
}

// SIGTERM (the end of the context) ends a helper waiting for a connection
// at once, not after its idle time: systemd's stop and a host's poweroff
// waited a minute for it.
func TestHelperStopsWhenAsked(t *testing.T) {
	h := newHelperBed(t)
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: filepath.Join(h.dir, "stop.sock"), Net: "unix"})
	must(t, err)
	defer l.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.srv.Serve(ctx, l, time.Hour) }()
	// One request answered: Serve is back waiting for the next.
	a, _ := json.Marshal(map[string]any{"path": h.root})
	if resp, err := Call(context.Background(), l.Addr().String(), Request{ID: "one", Key: h.admin, Op: "file.stat", Args: a}, nil); err != nil || !resp.OK {
		t.Fatalf("a request before the stop: %v %+v", err, resp.Error)
	}
	cancel()
	select {
	case err := <-done:
		must(t, err)
	case <-time.After(20 * time.Second):
		t.Fatal("Serve was still waiting for a connection 20 s after its context ended")
	}
}

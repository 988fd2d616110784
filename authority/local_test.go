package authority

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/proxmox-mcp/proxmox-mcp/keys"
	"github.com/proxmox-mcp/proxmox-mcp/policy"
	"golang.org/x/sys/unix"
)

var fastParams = keys.Params{N: 1 << 10, R: 8, P: 1}

// serviceUID owns the state directory, as the daemon's user does.
const serviceUID = 64123

func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: the authority is root's")
	}
}

// node is a state directory owned by the service user, beside which the
// authority goes.
func node(t *testing.T) (stateDir string) {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	// The service user reaches its directory, as under /var/lib.
	must(t, os.Chmod(filepath.Dir(base), 0o755))
	must(t, os.Chmod(base, 0o755))
	stateDir = filepath.Join(base, "state")
	must(t, os.Mkdir(stateDir, 0o750))
	must(t, os.Chown(stateDir, serviceUID, serviceUID))
	return stateDir
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func names(t *testing.T, dir string) []string {
	t.Helper()
	s, err := keys.Open(dir, keys.Options{Params: fastParams})
	must(t, err)
	recs, err := s.List()
	must(t, err)
	var out []string
	for _, r := range recs {
		out = append(out, r.Name)
	}
	return out
}

func store(t *testing.T, stateDir string, shared keys.Shared) *keys.Store {
	t.Helper()
	s, err := keys.Open(stateDir, keys.Options{Params: fastParams, Shared: shared})
	must(t, err)
	return s
}

// The first change as root adopts what the state directory holds; every
// change is made in the authority and mirrored into the state directory,
// given to the service user.
func TestChangeAdoptsThenMirrors(t *testing.T) {
	needRoot(t)
	ctx := context.Background()
	sd := node(t)
	// Before any authority: a key made directly in the state directory,
	// as older releases did.
	if _, err := store(t, sd, nil).Create(ctx, keys.CreateRequest{Name: "old", Binding: keys.Binding{Profile: "operator"}}); err != nil {
		t.Fatal(err)
	}
	pol, err := policy.NewStore(sd, nil)
	must(t, err)
	src := []byte("package proxmox_mcp.custom.p1\n\nimport rego.v1\n\ndefault decision := {\"effect\": \"deny\", \"reason\": \"no\"}\n")
	if _, err := pol.Draft(ctx, "p1", src, nil); err != nil {
		t.Skipf("drafting a policy: %v", err)
	}

	a := New(sd, nil, nil)
	if _, err := store(t, sd, a).Create(ctx, keys.CreateRequest{Name: "new", Binding: keys.Binding{Profile: "read-only"}}); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(names(t, a.Dir()), ","); got != "old,new" {
		t.Errorf("the authority holds %s; want old,new (adopted, then created)", got)
	}
	if got := strings.Join(names(t, sd), ","); got != "old,new" {
		t.Errorf("the state directory holds %s; want the authority's old,new", got)
	}
	var st unix.Stat_t
	must(t, unix.Stat(a.Dir(), &st))
	if st.Uid != 0 || st.Mode&0o777 != 0o700 {
		t.Errorf("the authority is %d %04o; want root's, 0700", st.Uid, st.Mode&0o777)
	}
	must(t, unix.Stat(filepath.Join(sd, keys.FileName), &st))
	if st.Uid != serviceUID {
		t.Errorf("the mirrored keys.json belongs to %d; want the service user %d", st.Uid, serviceUID)
	}
	rec, err := os.ReadFile(filepath.Join(a.Dir(), recordName))
	must(t, err)
	if !strings.Contains(string(rec), `"adopted_keys": 1`) || !strings.Contains(string(rec), sd) {
		t.Errorf("the record does not say what was adopted from where:\n%s", rec)
	}
	if _, err := os.Stat(filepath.Join(a.Dir(), "policies", "index.json")); err != nil {
		t.Errorf("the draft policy was not adopted: %v", err)
	}
}

// What the service user writes into the state directory after the
// authority exists never reaches it, and the next mirror undoes it: a key
// the daemon's uid adds for itself is not a key the helper knows.
func TestServiceUserEditsDoNotReachTheAuthority(t *testing.T) {
	needRoot(t)
	ctx := context.Background()
	sd := node(t)
	a := New(sd, nil, nil)
	if _, err := store(t, sd, a).Create(ctx, keys.CreateRequest{Name: "alice", Binding: keys.Binding{Profile: "operator"}}); err != nil {
		t.Fatal(err)
	}
	// The daemon's uid adds a root key in its own directory.
	if _, err := store(t, sd, nil).Create(ctx, keys.CreateRequest{Name: "intruder", Binding: keys.Binding{Profile: "root"}}); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(names(t, a.Dir()), ","); got != "alice" {
		t.Errorf("the authority holds %s; want alice alone", got)
	}
	must(t, a.Mirror(ctx))
	if got := strings.Join(names(t, sd), ","); got != "alice" {
		t.Errorf("after the mirror the state directory holds %s; want alice alone", got)
	}
}

// An authority anyone but root could write is refused, and nothing is
// changed.
func TestChangeRefusesForeignAuthority(t *testing.T) {
	needRoot(t)
	for _, tc := range []struct {
		name string
		fix  func(dir string) error
	}{
		{"owned by the service user", func(dir string) error { return os.Chown(dir, serviceUID, serviceUID) }},
		{"group-writable", func(dir string) error { return os.Chmod(dir, 0o770) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sd := node(t)
			a := New(sd, nil, nil)
			must(t, os.Mkdir(a.Dir(), 0o700))
			must(t, tc.fix(a.Dir()))
			called := false
			err := a.Change(context.Background(), func(string) error { called = true; return nil })
			if err == nil || !strings.Contains(err.Error(), "must be root's alone") || called {
				t.Fatalf("Change = %v (fn called: %v); want a refusal before anything runs", err, called)
			}
		})
	}
}

// A policy whose text no longer matches the index is not adopted.
func TestReadTreeRefusesAlteredPolicies(t *testing.T) {
	needRoot(t)
	ctx := context.Background()
	sd := node(t)
	pol, err := policy.NewStore(sd, nil)
	must(t, err)
	src := []byte("package proxmox_mcp.custom.p1\n\nimport rego.v1\n\ndefault decision := {\"effect\": \"deny\", \"reason\": \"no\"}\n")
	res, err := pol.Draft(ctx, "p1", src, nil)
	if err != nil {
		t.Skipf("drafting a policy: %v", err)
	}
	if _, err := pol.Activate(ctx, "p1", res.Digest); err != nil {
		t.Fatal(err)
	}
	must(t, os.WriteFile(filepath.Join(sd, "policies", "p1", "v1.rego"), []byte("package evil\n"), 0o600))
	a := New(sd, nil, nil)
	err = a.Change(ctx, func(string) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "cannot be adopted") {
		t.Fatalf("Change = %v; want the adoption refused", err)
	}
}

// Without root: with no authority the change is made in the state
// directory (a node that never had one); with one it is refused.
func TestChangeWithoutRoot(t *testing.T) {
	if os.Getenv("AUTHORITY_CHILD") != "" {
		a := New(os.Getenv("AUTHORITY_STATE"), nil, nil)
		err := a.Change(context.Background(), func(dir string) error { fmt.Println("fn ran on", dir); return nil })
		fmt.Println("err:", err, errors.Is(err, ErrNeedRoot))
		return
	}
	needRoot(t)
	sd := node(t)
	// The test binary, where the service user may run it.
	self, err := os.ReadFile(os.Args[0])
	must(t, err)
	bin := filepath.Join(filepath.Dir(sd), "authority.test")
	must(t, os.WriteFile(bin, self, 0o755))
	run := func() string {
		cmd := exec.Command(bin, "-test.run=^TestChangeWithoutRoot$")
		cmd.Env = append(os.Environ(), "AUTHORITY_CHILD=1", "AUTHORITY_STATE="+sd)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: serviceUID, Gid: serviceUID}}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("the child: %v\n%s", err, out)
		}
		return string(out)
	}
	if out := run(); !strings.Contains(out, "fn ran on "+sd) || !strings.Contains(out, "err: <nil>") {
		t.Errorf("without an authority: %s; want fn run on the state directory", out)
	}
	must(t, New(sd, nil, nil).Change(context.Background(), func(string) error { return nil }))
	if out := run(); strings.Contains(out, "fn ran") || !strings.Contains(out, "kept by root") || !strings.Contains(out, "true") {
		t.Errorf("with an authority: %s; want ErrNeedRoot and fn not run", out)
	}
}

package host

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// The repository's other names come from the mount table: its own file
// system mounted again, a directory above it bind-mounted, a part of it
// bind-mounted; unrelated mounts of the same device are not aliases.
func TestProtectedAliases(t *testing.T) {
	info := []byte(`22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw
30 22 253:3 / /mnt/model-repo rw shared:2 - xfs /dev/mapper/vg-repo rw
31 22 253:3 / /srv/second\040mount rw shared:2 - xfs /dev/mapper/vg-repo rw
32 22 253:3 /weights /srv/weights rw shared:2 - xfs /dev/mapper/vg-repo rw
33 22 8:1 /var/lib/data /srv/data rw shared:1 - ext4 /dev/sda1 rw
34 22 8:1 /mnt /srv/mnt-bind rw shared:1 - ext4 /dev/sda1 rw
malformed
`)
	entries := parseMountinfo(info)
	if len(entries) != 6 || entries[2].point != "/srv/second mount" {
		t.Fatalf("parsed %+v", entries)
	}
	got := protectedAliases(entries, []string{"/mnt/model-repo"})
	want := []string{"/srv/second mount", "/srv/weights"}
	if !slices.Equal(got, want) {
		t.Errorf("aliases of the repository on its own LV: %q; want %q", got, want)
	}
	// A repository that is a directory of the root file system: a bind
	// mount of a directory above it shows it under another name.
	got = protectedAliases(entries, []string{"/mnt/notes"})
	if want := []string{"/srv/mnt-bind/notes"}; !slices.Equal(got, want) {
		t.Errorf("aliases of a directory of the root file system: %q; want %q", got, want)
	}
}

// A daemon that writes into the repository through a bind mount of it, or
// asks a command to write above such a mount, gets the guard's refusal:
// the helper sees the mount table, not only the configured path.
func TestHelperGuardsTheRepositoryUnderEveryName(t *testing.T) {
	h := newHelperBed(t)
	// The repository on its own file system, outside every root.
	repo := filepath.Join(h.dir, "model-repo")
	must(t, os.Mkdir(repo, 0o755))
	if err := unix.Mount("pmcp-repo", repo, "tmpfs", 0, "size=1m"); err != nil {
		t.Skipf("mount a tmpfs: %v", err)
	}
	t.Cleanup(func() { unix.Unmount(repo, unix.MNT_DETACH) })
	alias := filepath.Join(h.root, "alias")
	must(t, os.Mkdir(alias, 0o755))
	must(t, unix.Mount(repo, alias, "", unix.MS_BIND, ""))
	t.Cleanup(func() { unix.Unmount(alias, unix.MNT_DETACH) })
	if got := ProtectedPaths([]string{repo}); !slices.Contains(got, alias) {
		t.Errorf("ProtectedPaths %q lacks the bind mount %s", got, alias)
	}
	opts := h.srv.opts
	opts.Services = &Services{}
	opts.Protected = []string{repo}
	srv, err := NewServer(opts)
	must(t, err)
	ctx := context.Background()
	for _, tc := range []struct {
		op         string
		args       map[string]any
		code, says string
	}{
		{"file.write", map[string]any{"path": alias + "/m.bin", "content": "x", "sha256": sum([]byte("x"))}, "denied", "break-glass"},
		// systemd would make the bind mount writable with the root.
		{"command.exec", map[string]any{"argv": []string{"true"}, "writable": []string{h.root}}, "denied", "break-glass"},
		// The mount itself is refused by the root before any guard.
		{"command.exec", map[string]any{"argv": []string{"true"}, "writable": []string{alias}}, "bad_request", "crosses a mount point"},
	} {
		resp := srv.Handle(ctx, daemon, request(t, h.rootKey, tc.op, tc.args))
		if resp.OK || resp.Error == nil || resp.Error.Code != tc.code || !strings.Contains(resp.Error.Message, tc.says) || !strings.Contains(resp.Error.Message, alias) {
			t.Errorf("%s %v: %+v; want %s saying %q and naming %s", tc.op, tc.args, resp.Error, tc.code, tc.says, alias)
		}
	}
	sb := srv.sandbox(nil)
	if !slices.Contains(sb.ReadOnly, "-"+alias) {
		t.Errorf("the sandbox's read-only paths %q lack the alias", sb.ReadOnly)
	}
	if _, err := os.Stat(filepath.Join(repo, "m.bin")); !os.IsNotExist(err) {
		t.Errorf("a refused write reached the repository: %v", err)
	}
}

package host

import (
	"bufio"
	"bytes"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
)

// The protected repository in the host's view: a path is reached under
// other names through bind mounts (the repository's file system mounted a
// second time, or a directory of it bind-mounted elsewhere). The helper
// finds every such name in the mount table, so that a write or a writable
// path under an alias is the same guard hit as under the configured path,
// and the sandbox makes each alias read-only too.

// mountEntry is one line of /proc/self/mountinfo: the device, the path
// within its file system that is mounted (root), and where (point).
type mountEntry struct {
	dev, root, point string
}

// parseMountinfo reads mountinfo's lines (proc(5)): ID, parent ID,
// major:minor, root, mount point, ...; paths with their octal escapes
// (\040 for a space) decoded. Malformed lines are skipped.
func parseMountinfo(data []byte) []mountEntry {
	var out []mountEntry
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 5 || !strings.Contains(f[2], ":") {
			continue
		}
		out = append(out, mountEntry{dev: f[2], root: unescapeMount(f[3]), point: unescapeMount(f[4])})
	}
	return out
}

// unescapeMount decodes the kernel's \ooo escapes of space, tab, newline
// and backslash.
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// protectedAliases are the other names of the protected paths in the
// mount table: for each path, the mount holding it (the longest mount
// point above it) tells which file system and which path within it the
// repository is; every other mount of that file system that shows the
// repository, or a part of it, gives a name: its mount point, with the
// rest of the path appended where the mount shows a directory above the
// repository.
func protectedAliases(entries []mountEntry, protected []string) []string {
	var out []string
	for _, p := range protected {
		holder, ok := mountHolding(entries, p)
		if !ok {
			continue
		}
		inFS := path.Join(holder.root, relative(p, holder.point))
		for _, e := range entries {
			if e.dev != holder.dev {
				continue
			}
			var alias string
			switch {
			case beneath(e.root, inFS): // a part of the repository, mounted at e.point
				alias = e.point
			case beneath(inFS, e.root): // a directory above it, mounted at e.point
				alias = path.Join(e.point, relative(inFS, e.root))
			default:
				continue
			}
			if alias != p && !slices.Contains(protected, alias) {
				out = append(out, alias)
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// mountHolding is the mount whose mount point is the longest at or above
// p (the last such in the table, as the kernel stacks them).
func mountHolding(entries []mountEntry, p string) (mountEntry, bool) {
	var best mountEntry
	found := false
	for _, e := range entries {
		if beneath(p, e.point) && (!found || len(e.point) >= len(best.point)) {
			best, found = e, true
		}
	}
	return best, found
}

// ProtectedPaths are the protected paths with their aliases in this
// process's mount table now.
func ProtectedPaths(protected []string) []string {
	if len(protected) == 0 {
		return nil
	}
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return slices.Clone(protected)
	}
	return append(slices.Clone(protected), protectedAliases(parseMountinfo(data), protected)...)
}

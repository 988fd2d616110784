// Package breakglass owns the protected model repository: the guard that
// finds every ordinary call touching it (so the policy refuses it), and, in
// time, the two-confirmation protocol and the signed one-shot runner that
// change it on purpose.
package breakglass

import (
	"context"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/proxmox-mcp/proxmox-mcp/policy"
	"github.com/proxmox-mcp/proxmox-mcp/schema"
)

// Protected is what the guard protects.
type Protected struct {
	// Paths are directories or files; everything below a path is protected.
	Paths []string
	// Volumes are storage volume IDs (storage:name) or LVs (vg/lv).
	Volumes []string
	// Devices are block devices; their symlinks resolve to them.
	Devices []string
}

// Guard inspects calls for references to the protected repository.
type Guard struct {
	paths   []string
	volumes []string
	devices []string
	resolve func(string) (string, error)
}

// NewGuard prepares a guard. Device paths are resolved through symlinks at
// start and again for every device a call names, so /dev/disk/by-id/… and
// /dev/dm-N spellings of a protected device are caught.
func NewGuard(p Protected) *Guard {
	g := &Guard{resolve: filepath.EvalSymlinks}
	for _, path := range p.Paths {
		g.paths = append(g.paths, filepath.Clean(path))
	}
	g.volumes = slices.Clone(p.Volumes)
	for _, d := range p.Devices {
		g.devices = append(g.devices, filepath.Clean(d))
		if real, err := g.resolve(d); err == nil && real != d {
			g.devices = append(g.devices, real)
		}
	}
	for _, v := range p.Volumes {
		// An LV vg/lv is also /dev/vg/lv and /dev/mapper/vg-lv.
		if vg, lv, ok := strings.Cut(v, "/"); ok && !strings.Contains(v, ":") {
			g.devices = append(g.devices, "/dev/"+vg+"/"+lv, "/dev/mapper/"+strings.ReplaceAll(vg, "-", "--")+"-"+strings.ReplaceAll(lv, "-", "--"))
		}
	}
	return g
}

// Empty reports whether nothing is protected.
func (g *Guard) Empty() bool { return len(g.paths)+len(g.volumes)+len(g.devices) == 0 }

// Check looks at every value a call names (path variables, arguments,
// items of lists and fields of property strings) and reports each reference
// to the protected repository. It always reports that it ran.
func (g *Guard) Check(_ context.Context, _ *schema.Endpoint, vars map[string]string, args map[string]any) policy.Guard {
	out := policy.Guard{Evaluated: true}
	if g.Empty() {
		return out
	}
	seen := map[policy.GuardHit]bool{}
	add := func(h policy.GuardHit) {
		if !seen[h] {
			seen[h] = true
			out.Hits = append(out.Hits, h)
		}
	}
	for name, v := range vars {
		g.inspect(name, v, add)
	}
	for name, v := range args {
		g.walk(name, v, add)
	}
	sort.Slice(out.Hits, func(i, j int) bool {
		a, b := out.Hits[i], out.Hits[j]
		return a.Param+a.Kind+a.Value < b.Param+b.Kind+b.Value
	})
	return out
}

func (g *Guard) walk(param string, v any, add func(policy.GuardHit)) {
	switch x := v.(type) {
	case string:
		g.inspect(param, x, add)
	case []any:
		for _, it := range x {
			g.walk(param, it, add)
		}
	case map[string]any:
		for k, it := range x {
			g.walk(param+"."+k, it, add)
		}
	}
}

// inspect checks one string and the pieces a property string or a list is
// made of.
func (g *Guard) inspect(param, value string, add func(policy.GuardHit)) {
	pieces := []string{value}
	for _, part := range strings.FieldsFunc(value, func(r rune) bool { return r == ',' || r == ';' || r == ' ' || r == '\n' }) {
		pieces = append(pieces, part)
		if _, v, ok := strings.Cut(part, "="); ok {
			pieces = append(pieces, v)
		}
	}
	for _, p := range pieces {
		g.inspectPiece(param, strings.TrimSpace(p), add)
	}
}

func (g *Guard) inspectPiece(param, v string, add func(policy.GuardHit)) {
	if v == "" {
		return
	}
	if strings.HasPrefix(v, "/") {
		// A path is checked as written and, when it exists, as it resolves:
		// a symlink to the repository or a /dev/disk/by-id name of a
		// protected device is the same object.
		candidates := []string{filepath.Clean(v)}
		if real, err := g.resolve(v); err == nil && real != candidates[0] {
			candidates = append(candidates, real)
		}
		for _, c := range candidates {
			for _, p := range g.paths {
				if c == p || strings.HasPrefix(c, p+"/") || strings.HasPrefix(p, c+"/") && c != "/" {
					add(policy.GuardHit{Kind: "path", Value: p, Param: param})
				}
			}
			if slices.Contains(g.devices, c) {
				add(policy.GuardHit{Kind: "device", Value: c, Param: param})
			}
		}
	}
	for _, vol := range g.volumes {
		if v == vol || strings.HasSuffix(v, "/"+vol) || strings.HasSuffix(v, ":"+vol) {
			add(policy.GuardHit{Kind: "volume", Value: vol, Param: param})
		}
	}
}

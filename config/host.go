package config

import (
	"fmt"
	"path"
	"strings"
)

// DefaultHelperSocket is where the root helper's socket unit listens.
const DefaultHelperSocket = "/run/proxmox-mcp-helper/helper.sock"

// Host configures the root helper's host operations (docs/host.md).
type Host struct {
	// Roots are the directories file operations may reach; [/var/log]
	// (read only) when empty.
	Roots []HostRoot `json:"roots,omitempty"`
	// Socket is the helper's Unix socket (DefaultHelperSocket).
	Socket string `json:"socket,omitempty"`
}

// HostRoot is one allowed root.
type HostRoot struct {
	// Path is the directory's real path (no symbolic link on the way).
	Path string `json:"path"`
	// Write allows writes beneath it.
	Write bool `json:"write,omitempty"`
	// CrossMounts allows paths that cross a mount point beneath it.
	CrossMounts bool `json:"cross_mounts,omitempty"`
}

// HostRoots are the configured roots, or the default.
func (h Host) HostRoots() []HostRoot {
	if len(h.Roots) == 0 {
		return []HostRoot{{Path: "/var/log"}}
	}
	return h.Roots
}

// HelperSocket is the configured socket, or the default.
func (h Host) HelperSocket() string {
	if h.Socket == "" {
		return DefaultHelperSocket
	}
	return h.Socket
}

func (h Host) check() error {
	seen := map[string]bool{}
	for i, r := range h.Roots {
		field := fmt.Sprintf("field \"host.roots[%d].path\"", i)
		switch {
		case !path.IsAbs(r.Path) || path.Clean(r.Path) != r.Path:
			return fmt.Errorf("%s: %q must be an absolute, clean path", field, r.Path)
		case strings.ContainsAny(r.Path, " \t\n\"'\\$%;"):
			return fmt.Errorf("%s: %q must hold no spaces, quotes or specifiers (it goes into the helper's unit)", field, r.Path)
		case seen[r.Path]:
			return fmt.Errorf("%s: %q is listed twice", field, r.Path)
		case r.Path == "/" && r.Write:
			return fmt.Errorf("%s: \"/\" may be a root for reading, not for writing: name the directories to write", field)
		}
		seen[r.Path] = true
	}
	if h.Socket != "" && (!path.IsAbs(h.Socket) || path.Clean(h.Socket) != h.Socket || !strings.HasSuffix(h.Socket, ".sock")) {
		return fmt.Errorf("field \"host.socket\": %q must be an absolute, clean path ending in .sock", h.Socket)
	}
	return nil
}

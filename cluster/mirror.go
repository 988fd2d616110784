package cluster

import (
	"context"
	"fmt"
	"os"

	"github.com/proxmox-mcp/proxmox-mcp/atomicfile"
	"github.com/proxmox-mcp/proxmox-mcp/authority"
	"github.com/proxmox-mcp/proxmox-mcp/keys"
)

// policiesLock is the policy store's lock file, which is not a policy.
const policiesLock = "policies.lock"

// mirror writes a state into the state directory, where the daemon's
// stores read it, and into root's copy beside it (package authority),
// which the root helper reads: the policies first (texts, then the index, then what
// the index no longer names is removed), the keys last, so that a key
// bound to a new policy never appears before the policy. It writes only
// what differs from what it last wrote (force: everything, as the first
// refresh of a process does, which also undoes any edit made there
// meanwhile). Everything goes through atomicfile: the state directory
// belongs to the service user, and nothing in it is followed or read
// back.
func mirror(ctx context.Context, stateDir string, st *state, last mirrored, force bool) (mirrored, bool, error) {
	recs, err := st.records()
	if err != nil {
		return last, false, err
	}
	keyData, err := keys.EncodeFile(recs)
	if err != nil {
		return last, false, err
	}
	pol := st.policyFiles()
	now := mirrored{Keys: digest(map[string][]byte{keys.FileName: keyData}, ""), Policies: digest(pol, "")}
	if !force && now == last {
		return last, false, nil
	}
	sd, err := atomicfile.OpenDir(stateDir)
	if err != nil {
		return last, false, fmt.Errorf("cluster: the state directory: %w", err)
	}
	defer sd.Close()
	if force || now.Policies != last.Policies {
		if err := authority.MirrorPolicies(ctx, sd, pol); err != nil {
			return last, false, fmt.Errorf("cluster: %w", err)
		}
	}
	if force || now.Keys != last.Keys {
		if err := authority.MirrorKeys(ctx, sd, keyData); err != nil {
			return last, false, fmt.Errorf("cluster: %w", err)
		}
	}
	// Root's copy, which the root helper trusts: the same state, beside
	// the state directory where the service user cannot write. Without
	// root (a developer's run) there is none, and the helper refuses.
	if os.Geteuid() == 0 {
		if err := authority.New(stateDir, nil, nil).Replace(ctx, pol, keyData, "pmxcfs"); err != nil {
			return last, false, fmt.Errorf("cluster: root's copy for the helper: %w", err)
		}
	}
	return now, true, nil
}

package cluster

import (
	"context"
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"

	"github.com/proxmox-mcp/proxmox-mcp/atomicfile"
	"github.com/proxmox-mcp/proxmox-mcp/keys"
	"github.com/proxmox-mcp/proxmox-mcp/policy"
)

// The state directory's own files, which the mirror writes.
const (
	keysLock     = "keys.lock"
	policiesLock = "policies.lock"
)

// mirror writes a state into the state directory, where the daemon's
// stores read it: the policies first (texts, then the index, then what
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
		if err := mirrorPolicies(ctx, sd, pol); err != nil {
			return last, false, err
		}
	}
	if force || now.Keys != last.Keys {
		unlock, err := sd.Lock(ctx, keysLock)
		if err != nil {
			return last, false, fmt.Errorf("cluster: %w", err)
		}
		err = sd.WriteFile(keys.FileName, keyData, 0o600)
		unlock()
		if err != nil {
			return last, false, fmt.Errorf("cluster: mirror the keys: %w", err)
		}
	}
	return now, true, nil
}

func mirrorPolicies(ctx context.Context, sd *atomicfile.Dir, files map[string][]byte) error {
	pd, err := sd.Mkdir("policies", 0o700)
	if err != nil {
		return fmt.Errorf("cluster: mirror the policies: %w", err)
	}
	defer pd.Close()
	unlock, err := pd.Lock(ctx, policiesLock)
	if err != nil {
		return fmt.Errorf("cluster: %w", err)
	}
	defer unlock()
	names := slices.Sorted(maps.Keys(files))
	// The index last: it never names a text not yet written.
	names = append(slices.DeleteFunc(names, func(p string) bool { return p == policy.IndexFile }), policy.IndexFile)
	for _, p := range names {
		data, ok := files[p]
		if !ok {
			continue
		}
		if err := writeUnder(pd, p, data); err != nil {
			return fmt.Errorf("cluster: mirror policies/%s: %w", p, err)
		}
	}
	if err := removeOthers(pd, "", files); err != nil {
		return fmt.Errorf("cluster: mirror the policies: %w", err)
	}
	return nil
}

// writeUnder writes rel (slash-separated) under d, making its directories.
func writeUnder(d *atomicfile.Dir, rel string, data []byte) error {
	elems := strings.Split(rel, "/")
	cur := d
	for _, name := range elems[:len(elems)-1] {
		next, err := cur.Mkdir(name, 0o700)
		if cur != d {
			cur.Close()
		}
		if err != nil {
			return err
		}
		cur = next
	}
	if cur != d {
		defer cur.Close()
	}
	return cur.WriteFile(elems[len(elems)-1], data, 0o600)
}

// removeOthers removes the files under d (at prefix) that keep does not
// name, the lock and directories aside.
func removeOthers(d *atomicfile.Dir, prefix string, keep map[string][]byte) error {
	names, err := d.ReadDirNames()
	if err != nil {
		return err
	}
	for _, name := range names {
		rel := path.Join(prefix, name)
		if rel == policiesLock {
			continue
		}
		fi, err := d.Lstat(name)
		if err != nil {
			continue // gone meanwhile
		}
		if fi.IsDir() {
			sub, err := d.OpenDir(name)
			if err != nil {
				return err
			}
			err = removeOthers(sub, rel, keep)
			sub.Close()
			if err != nil {
				return err
			}
			continue
		}
		if _, ok := keep[rel]; !ok {
			if _, err := d.Remove(name); err != nil {
				return err
			}
		}
	}
	return nil
}

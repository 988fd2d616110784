package policy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"path"
	"regexp"
	"slices"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/proxmox-mcp/proxmox-mcp/atomicfile"
)

// Shared is a copy of the policies that several nodes share: a cluster's
// (package cluster keeps it on pmxcfs). Change runs fn, under the shared
// copy's lock, on a state directory that holds the shared policies under
// policies/ (and the shared keys), stores what fn left there in the shared
// copy, and refreshes this node's mirror before it returns. When fn fails,
// or the shared copy cannot be changed (a node without quorum), nothing is
// stored and the error says why.
type Shared interface {
	Change(ctx context.Context, fn func(stateDir string) error) error
}

// NewSharedStore is NewStore in cluster mode: drafts and activations are
// made through shared, and the state directory's policies/ is read as the
// node's mirror of the shared ones.
func NewSharedStore(stateDir string, now func() time.Time, shared Shared) (*Store, error) {
	s, err := NewStore(stateDir, now)
	if err != nil {
		return nil, err
	}
	s.shared = shared
	return s, nil
}

// readIn reads sub/name of the open policies directory pd, never through
// a symbolic link.
func readIn(pd *atomicfile.Dir, sub []string, name string) ([]byte, error) {
	d := pd
	for _, n := range sub {
		next, err := d.OpenDir(n)
		if d != pd {
			d.Close()
		}
		if err != nil {
			return nil, err
		}
		d = next
	}
	if d != pd {
		defer d.Close()
	}
	return d.ReadFile(name)
}

var hexDigest = regexp.MustCompile(`^[0-9a-f]{64}$`)

// The names of a store's files, relative to policies/ with slashes, as
// CheckTree takes them.
const (
	// IndexFile is the index.
	IndexFile = indexName
)

// CheckTree checks a copy of a store's files (cluster mode: the shared
// policies, before a node mirrors them). files maps paths relative to
// policies/, with slashes ("index.json", "<id>/v1.rego",
// "drafts/<id>/<digest>.rego"), to their content. It returns the files the
// index names, each checked: the index itself, every version's text
// (against the digest recorded at activation) and its tests when present,
// every draft's text (against its digest) and tests. An error names the
// first file that is missing, malformed or altered; files the index does
// not name are left out. An empty tree (no index) is an empty store.
func CheckTree(files map[string][]byte) (map[string][]byte, error) {
	out := map[string][]byte{}
	data, ok := files[indexName]
	if !ok {
		return out, nil
	}
	ix, err := decodeIndex(data)
	if err != nil {
		return nil, fmt.Errorf("policy: %s: %w", indexName, err)
	}
	out[indexName] = data
	need := func(p, digest string) error {
		b, ok := files[p]
		if !ok {
			return fmt.Errorf("policy: %s: the index names it but it is missing", p)
		}
		if digest != "" && Digest(b) != digest {
			return fmt.Errorf("policy: %s: its digest is %s, the index records %s", p, Digest(b), digest)
		}
		out[p] = b
		return nil
	}
	for id, e := range ix.Policies {
		for i, ve := range e.Versions {
			if ve == nil || ve.Version != i+1 || !hexDigest.MatchString(ve.Digest) {
				return nil, fmt.Errorf("policy: %s: policy %s: version %d: want number %d and a sha256 digest", indexName, id, i+1, i+1)
			}
			if err := need(path.Join(id, versionName(i+1)), ve.Digest); err != nil {
				return nil, err
			}
			if b, ok := files[path.Join(id, versionTestName(i+1))]; ok {
				out[path.Join(id, versionTestName(i+1))] = b
			}
		}
	}
	for id, drafts := range ix.Drafts {
		if !idRE.MatchString(id) {
			return nil, fmt.Errorf("policy: %s: draft id %q: want 1 to 64 characters of [a-z0-9._-]", indexName, id)
		}
		for _, d := range drafts {
			if d == nil || !hexDigest.MatchString(d.Digest) {
				return nil, fmt.Errorf("policy: %s: a draft of %s has no sha256 digest", indexName, id)
			}
			dir := path.Join(draftDir(id)...)
			if err := need(path.Join(dir, draftName(d.Digest)), d.Digest); err != nil {
				return nil, err
			}
			if err := need(path.Join(dir, draftTestName(d.Digest)), ""); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// MergeTrees merges two checked copies of a store's files (CheckTree's
// results): the policies of both, and the drafts of both. A policy both
// have must have the same versions, the same active version and the same
// files; otherwise it is a conflict, and every conflict is named in the
// error. The merged index is written as the Store writes it.
func MergeTrees(a, b map[string][]byte) (map[string][]byte, error) {
	ixa, err := treeIndex(a)
	if err != nil {
		return nil, err
	}
	ixb, err := treeIndex(b)
	if err != nil {
		return nil, err
	}
	var conflicts []error
	for id, eb := range ixb.Policies {
		ea, ok := ixa.Policies[id]
		if !ok {
			ixa.Policies[id] = eb
			continue
		}
		if !sameEntry(ea, eb) {
			conflicts = append(conflicts, fmt.Errorf("policy %s: active version %d of %d here, %d of %d there, with other digests", id, eb.Active, len(eb.Versions), ea.Active, len(ea.Versions)))
		}
	}
	for id, drafts := range ixb.Drafts {
		for _, d := range drafts {
			if !slices.ContainsFunc(ixa.Drafts[id], func(x *Draft) bool { return x.Digest == d.Digest }) {
				ixa.Drafts[id] = append(ixa.Drafts[id], d)
			}
		}
		slices.SortStableFunc(ixa.Drafts[id], func(x, y *Draft) int { return x.Created.Compare(y.Created) })
	}
	out := maps.Clone(a)
	for p, data := range b {
		if p == indexName {
			continue
		}
		if have, ok := out[p]; ok && !bytes.Equal(have, data) {
			conflicts = append(conflicts, fmt.Errorf("%s differs", p))
			continue
		}
		out[p] = data
	}
	if len(conflicts) > 0 {
		return nil, fmt.Errorf("policy: the stores conflict: %w", errors.Join(conflicts...))
	}
	if len(ixa.Policies) == 0 && len(ixa.Drafts) == 0 {
		delete(out, indexName)
		return out, nil
	}
	data, err := json.Marshal(ixa, json.Deterministic(true), jsontext.Multiline(true), jsontext.WithIndent("  "))
	if err != nil {
		return nil, fmt.Errorf("policy: encode index: %w", err)
	}
	out[indexName] = append(data, '\n')
	return CheckTree(out)
}

// treeIndex is a checked tree's index (empty when it has none).
func treeIndex(files map[string][]byte) (*index, error) {
	data, ok := files[indexName]
	if !ok {
		return &index{Version: 1, Policies: map[string]*Entry{}, Drafts: map[string][]*Draft{}}, nil
	}
	ix, err := decodeIndex(data)
	if err != nil {
		return nil, fmt.Errorf("policy: %s: %w", indexName, err)
	}
	return ix, nil
}

func sameEntry(a, b *Entry) bool {
	return a.Active == b.Active && slices.EqualFunc(a.Versions, b.Versions, func(x, y *VersionEntry) bool { return x.Digest == y.Digest })
}

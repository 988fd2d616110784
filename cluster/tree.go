package cluster

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/proxmox-mcp/proxmox-mcp/keys"
	"github.com/proxmox-mcp/proxmox-mcp/policy"
)

// The shared files, relative to pmxcfs's root.
const (
	// SharedDir holds everything proxmox-mcp shares: under priv/, so that
	// only root reads it (pmxcfs's path_is_private).
	SharedDir      = "priv/proxmox-mcp"
	generationFile = "cluster.json"
	keysDir        = "keys"
	policiesDir    = "policies"
	nodesDir       = "nodes"
)

// generation is cluster.json: the counter every change increments, last,
// under the cluster lock. Nodes poll it; it is the version `cluster
// status` shows.
type generation struct {
	Format     int       `json:"format"`
	Generation uint64    `json:"generation"`
	Changed    time.Time `json:"changed"`
	Node       string    `json:"node"`
	// Paths are the files the change wrote or removed (relative to
	// SharedDir): a node that applied the generation before reads only
	// those.
	Paths []string `json:"paths,omitempty"`
}

const formatVersion = 1

func decodeGeneration(data []byte) (generation, error) {
	var g generation
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&g); err != nil {
		return g, err
	}
	if g.Format != formatVersion {
		return g, fmt.Errorf("format %d is not supported (this build reads %d)", g.Format, formatVersion)
	}
	return g, nil
}

// Problem is a shared file that failed its checks. Kept says its last
// good content stays in force.
type Problem struct {
	Path string `json:"path"`
	Err  string `json:"error"`
	Kept bool   `json:"kept"`
}

func (p Problem) String() string {
	if p.Kept {
		return p.Path + ": " + p.Err + " (its last good content stays)"
	}
	return p.Path + ": " + p.Err + " (ignored; no good content was ever seen)"
}

// state is the good shared state: the files of keys/ and policies/ (paths
// relative to SharedDir) that passed their checks, or their last good
// content where they did not.
type state struct {
	Generation uint64            `json:"generation"`
	Changed    time.Time         `json:"changed"`
	ChangedBy  string            `json:"changed_by"`
	Files      map[string][]byte `json:"files"`
	// Problems are not part of the state proper; they say what was kept.
	Problems []Problem `json:"-"`
	// recs are the key files' records as check decoded them, by path.
	recs map[string]keys.Record
}

// memo remembers the records of key files by their content's hash, so
// that a refresh decodes only the files that changed.
type memo map[[sha256.Size]byte]keys.Record

// checkKey is checkKeyFile through a memo; next collects what this
// refresh used.
func (m memo) checkKey(name string, data []byte, next memo) (keys.Record, error) {
	h := sha256.Sum256(append([]byte(name+"\x00"), data...))
	if r, ok := m[h]; ok {
		next[h] = r
		return r, nil
	}
	r, err := checkKeyFile(name, data)
	if err == nil {
		next[h] = r
	}
	return r, err
}

// digest identifies the files of a tree (those under prefix, all when
// empty): SHA-256 over each path and content, in path order.
func digest(files map[string][]byte, prefix string) string {
	h := sha256.New()
	for _, p := range slices.Sorted(maps.Keys(files)) {
		if !strings.HasPrefix(p, prefix) {
			continue
		}
		fmt.Fprintf(h, "%d:%s\n%d:", len(p), p, len(files[p]))
		h.Write(files[p])
	}
	return hex.EncodeToString(h.Sum(nil))
}

func sub(files map[string][]byte, prefix string) map[string][]byte {
	out := map[string][]byte{}
	for p, b := range files {
		if rest, ok := strings.CutPrefix(p, prefix); ok {
			out[rest] = b
		}
	}
	return out
}

// keyFileName is the file of a key id.
func keyFileName(id string) string { return path.Join(keysDir, id+".json") }

// checkKeyFile checks keys/<name>: the keys.json format with exactly the
// one record its name says.
func checkKeyFile(name string, data []byte) (keys.Record, error) {
	id, ok := strings.CutSuffix(name, ".json")
	if !ok || !keys.IsID(id) {
		return keys.Record{}, errors.New("not the file of a key id (<16 characters of base32>.json)")
	}
	recs, err := keys.DecodeFile(data)
	if err != nil {
		return keys.Record{}, err
	}
	if len(recs) != 1 || recs[0].ID != id {
		return keys.Record{}, fmt.Errorf("holds %d records; a key file holds the one record of key %s", len(recs), id)
	}
	return recs[0], nil
}

// encodeKey is the file of one record.
func encodeKey(r keys.Record) ([]byte, error) { return keys.EncodeFile([]keys.Record{r}) }

// readShared reads the shared files: cluster.json, keys/*.json and the
// policies/ tree (writers' temporary files aside). Files that cannot be
// read are problems, as unreadable as malformed ones.
func readShared(f *FS) (gen []byte, files map[string][]byte, problems []Problem, err error) {
	files = map[string][]byte{}
	gen, err = f.ReadFile(path.Join(SharedDir, generationFile))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		problems = append(problems, Problem{Path: generationFile, Err: err.Error()})
	}
	var walk func(rel string) error
	walk = func(rel string) error {
		ents, err := f.ReadDir(path.Join(SharedDir, rel))
		if err != nil {
			return fmt.Errorf("cluster: %w", err)
		}
		for _, e := range ents {
			p := path.Join(rel, e.Name())
			switch {
			case isTemp(e.Name()):
			case e.IsDir():
				if err := walk(p); err != nil {
					return err
				}
			default:
				data, err := f.ReadFile(path.Join(SharedDir, p))
				if err != nil {
					problems = append(problems, Problem{Path: p, Err: err.Error()})
					continue
				}
				files[p] = data
			}
		}
		return nil
	}
	for _, d := range []string{keysDir, policiesDir} {
		if err := walk(d); err != nil {
			return nil, nil, nil, err
		}
	}
	return gen, files, problems, nil
}

// readPaths is an incremental read: the files of base with paths read
// again (a missing one removed), and the problems of base that concern
// other paths.
func readPaths(f *FS, base map[string][]byte, baseProblems []Problem, paths []string) (map[string][]byte, []Problem) {
	files := maps.Clone(base)
	var problems []Problem
	for _, p := range baseProblems {
		if !slices.Contains(paths, p.Path) && p.Path != generationFile {
			problems = append(problems, p)
		}
	}
	for _, p := range paths {
		data, err := f.ReadFile(path.Join(SharedDir, p))
		switch {
		case errors.Is(err, fs.ErrNotExist):
			delete(files, p)
		case err != nil:
			delete(files, p)
			problems = append(problems, Problem{Path: p, Err: err.Error()})
		default:
			files[p] = data
		}
	}
	return files, problems
}

// check builds the good state from what readShared read and the last good
// state: a key file that fails its checks keeps its last good content (or
// is left out when it never had any); a policies tree that fails its
// checks is replaced as a whole by its last good one, since its files
// depend on one another. An unreadable cluster.json keeps the last good
// generation.
func check(gen []byte, files map[string][]byte, readProblems []Problem, last *state) *state {
	st, _ := checkMemo(gen, files, readProblems, last, nil)
	return st
}

// checkMemo is check with a memo of decoded key files; it returns the
// memo of this state's files.
func checkMemo(gen []byte, files map[string][]byte, readProblems []Problem, last *state, m memo) (*state, memo) {
	next := memo{}
	st := &state{Files: map[string][]byte{}, recs: map[string]keys.Record{}}
	if last != nil {
		st.Generation, st.Changed, st.ChangedBy = last.Generation, last.Changed, last.ChangedBy
	}
	problems := map[string]Problem{}
	for _, p := range readProblems {
		problems[p.Path] = p
	}
	if gen != nil {
		if g, err := decodeGeneration(gen); err != nil {
			problems[generationFile] = Problem{Path: generationFile, Err: err.Error()}
		} else {
			st.Generation, st.Changed, st.ChangedBy = g.Generation, g.Changed, g.Node
		}
	}
	if p, ok := problems[generationFile]; ok {
		p.Kept = last != nil
		problems[generationFile] = p
	}
	lastFiles := map[string][]byte{}
	if last != nil {
		lastFiles = last.Files
	}
	// Keys, file by file. A file that could not be read keeps its last
	// good content like a malformed one.
	seen := map[string]bool{}
	for p, data := range files {
		name, ok := strings.CutPrefix(p, keysDir+"/")
		if !ok {
			continue
		}
		seen[p] = true
		r, err := m.checkKey(name, data, next)
		if err != nil {
			problems[p] = Problem{Path: p, Err: err.Error()}
			continue
		}
		st.Files[p] = data
		st.recs[p] = r
	}
	for p, pr := range problems {
		if !strings.HasPrefix(p, keysDir+"/") {
			continue
		}
		if good, ok := lastFiles[p]; ok {
			st.Files[p] = good
			pr.Kept = true
			problems[p] = pr
		}
	}
	// Policies, as one tree.
	pol := sub(files, policiesDir+"/")
	var polErr error
	for p := range problems {
		if strings.HasPrefix(p, policiesDir+"/") {
			polErr = fmt.Errorf("%s could not be read", p)
		}
	}
	good, err := policy.CheckTree(pol)
	if polErr == nil && err != nil {
		polErr = err
	}
	if polErr == nil {
		for p, b := range good {
			st.Files[path.Join(policiesDir, p)] = b
		}
	} else {
		kept := false
		for p, b := range lastFiles {
			if strings.HasPrefix(p, policiesDir+"/") {
				st.Files[p] = b
				kept = true
			}
		}
		problems[policiesDir] = Problem{Path: policiesDir, Err: polErr.Error(), Kept: kept || last != nil}
		for p := range problems {
			if p != policiesDir && strings.HasPrefix(p, policiesDir+"/") {
				delete(problems, p)
			}
		}
	}
	for _, p := range slices.Sorted(maps.Keys(problems)) {
		st.Problems = append(st.Problems, problems[p])
	}
	return st, next
}

// records are the key records of a state's files, in creation order (the
// order keys.json keeps).
func (st *state) records() ([]keys.Record, error) {
	var recs []keys.Record
	for p, data := range st.Files {
		name, ok := strings.CutPrefix(p, keysDir+"/")
		if !ok {
			continue
		}
		r, ok := st.recs[p]
		if !ok {
			var err error
			if r, err = checkKeyFile(name, data); err != nil {
				return nil, fmt.Errorf("cluster: %s: %w", p, err)
			}
		}
		recs = append(recs, r)
	}
	slices.SortFunc(recs, func(a, b keys.Record) int {
		return cmp.Or(a.Created.Compare(b.Created), cmp.Compare(a.ID, b.ID))
	})
	return recs, nil
}

// policyFiles are a state's policies/ files, relative to policies/.
func (st *state) policyFiles() map[string][]byte { return sub(st.Files, policiesDir+"/") }

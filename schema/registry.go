package schema

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"
	"sync"
)

// Registry is an immutable, validated set of endpoints built from one
// apidoc.js. Lookups by method+path and by tool name are O(1). A Registry is
// safe for concurrent use; a newer one replaces it as a whole (see Source).
type Registry struct {
	endpoints []*Endpoint
	byKey     map[endpointKey]*Endpoint
	byTool    map[string]*Endpoint
	routes    *route
	paths     int
	sha256    string
	size      int

	searchOnce sync.Once
	search     *searchIndex
}

// Parse extracts and normalizes an apidoc.js file held in memory. It either
// returns a complete registry or an error; never a partial registry.
func Parse(data []byte) (*Registry, error) {
	// Hash on the other core while the schema is decoded.
	sum := make(chan string, 1)
	go func() { sum <- sha256Hex(data) }()
	defer func() {
		select {
		case <-sum:
		default:
		}
	}()
	return parse(data, sum)
}

// parseHashed is Parse of bytes whose hex SHA-256 the caller has already
// computed (a reload hashes the file to see whether it changed), so that
// the file is hashed once per check.
func parseHashed(data []byte, sha string) (*Registry, error) {
	sum := make(chan string, 1)
	sum <- sha
	return parse(data, sum)
}

// parse builds the registry; sum yields the bytes' hex SHA-256.
func parse(data []byte, sum <-chan string) (*Registry, error) {
	nodes, err := extract(data)
	if err != nil {
		return nil, err
	}
	norm, err := normalize(nodes)
	if err != nil {
		return nil, err
	}
	rules, err := defaultRiskRules()
	if err != nil {
		return nil, fmt.Errorf("risk table: %w", err)
	}
	r := &Registry{
		endpoints: norm.endpoints,
		byKey:     make(map[endpointKey]*Endpoint, len(norm.endpoints)),
		paths:     norm.paths,
		sha256:    <-sum,
		size:      len(data),
		routes:    newRoute(),
	}
	for _, ep := range r.endpoints {
		ep.rules = rules.candidates(ep.Method, ep.Path)
		ep.Risk = maxRisk(ep.rules)
		r.byKey[endpointKey{ep.Method, ep.Path}] = ep
		r.routes.add(ep)
	}
	byTool, err := assignToolNames(r.endpoints)
	if err != nil {
		return nil, err
	}
	r.byTool = byTool
	r.computeFacts()
	markCommonProse(r.endpoints)
	return r, nil
}

func sha256Hex(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// ReadFile reads an apidoc.js file, refusing files over MaxFileSize before
// reading them whole.
func ReadFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	// The buffer is the file's size (and room to see the end) from the
	// start, as os.ReadFile does: io.ReadAll's doublings left 8–12 MiB of
	// garbage for every read of PVE 9.1's 3.9 MB, at each start and each
	// check of the file.
	size := 0
	if st, err := f.Stat(); err == nil {
		if st.Size() > MaxFileSize {
			return nil, fmt.Errorf("%s is %d bytes, over the %d-byte limit for an API schema", path, st.Size(), MaxFileSize)
		}
		size = int(st.Size())
	}
	data := make([]byte, 0, size+512)
	r := io.LimitReader(f, MaxFileSize+1)
	for {
		if len(data) == cap(data) {
			data = append(data, 0)[:len(data)] // the file grew while read
		}
		n, err := r.Read(data[len(data):cap(data)])
		data = data[:len(data)+n]
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	if len(data) > MaxFileSize {
		return nil, fmt.Errorf("%s grew over the %d-byte limit for an API schema", path, MaxFileSize)
	}
	return data, nil
}

// ParseFile reads and parses an apidoc.js file.
func ParseFile(path string) (*Registry, error) {
	data, err := ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read schema: %w", err)
	}
	r, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("parse %s: %w", path, err)
	}
	return r, nil
}

// Endpoints returns every endpoint in the order of the schema tree. The
// slice is shared: callers must not modify it.
func (r *Registry) Endpoints() []*Endpoint { return r.endpoints }

// Methods is the number of endpoints (method+path pairs).
func (r *Registry) Methods() int { return len(r.endpoints) }

// Paths is the number of tree nodes, including pure directory nodes.
func (r *Registry) Paths() int { return r.paths }

// SHA256 is the hex SHA-256 of the file the registry was built from.
func (r *Registry) SHA256() string { return r.sha256 }

// Size is the size in bytes of the file the registry was built from.
func (r *Registry) Size() int { return r.size }

// Lookup finds an endpoint by method and path template.
func (r *Registry) Lookup(method, pathTemplate string) *Endpoint {
	if ep := r.byKey[endpointKey{method, pathTemplate}]; ep != nil {
		return ep
	}
	return r.byKey[endpointKey{strings.ToUpper(method), pathTemplate}]
}

// endpointKey identifies an endpoint without building a string.
type endpointKey struct{ method, path string }

// Tool finds an endpoint by its tool name.
func (r *Registry) Tool(name string) *Endpoint { return r.byTool[name] }

// ErrNoEndpoint is returned by Match when no endpoint serves a path.
var ErrNoEndpoint = errors.New("no such endpoint")

// Match finds the endpoint for a method and a concrete path such as
// /nodes/pve1/qemu/100/status/start, and returns the values of the path
// variables. Each segment is percent-decoded, so a value containing '/'
// (a volume ID) must be sent as %2F, as PVE itself requires. Literal
// segments win over variables, as in PVE's router.
func (r *Registry) Match(method, concrete string) (*Endpoint, map[string]string, error) {
	method = strings.ToUpper(method)
	if !strings.HasPrefix(concrete, "/") {
		return nil, nil, fmt.Errorf("path %q must start with '/'", concrete)
	}
	trimmed := strings.TrimSuffix(strings.TrimPrefix(concrete, "/"), "/")
	var segs []string
	if trimmed != "" {
		for raw := range strings.SplitSeq(trimmed, "/") {
			seg, err := url.PathUnescape(raw)
			if err != nil {
				return nil, nil, fmt.Errorf("path segment %q: %w", raw, err)
			}
			if seg == "" {
				return nil, nil, fmt.Errorf("path %q has an empty segment", concrete)
			}
			segs = append(segs, seg)
		}
	}
	node := r.routes.match(segs)
	if node == nil || len(node.methods) == 0 {
		return nil, nil, fmt.Errorf("%w: %s %s", ErrNoEndpoint, method, concrete)
	}
	ep := node.methods[method]
	if ep == nil {
		return nil, nil, fmt.Errorf("%w: %s %s (the path exists; methods: %s)", ErrNoEndpoint, method, concrete, node.methodList())
	}
	out := make(map[string]string, len(ep.PathParams))
	i := 0
	for seg := range strings.SplitSeq(strings.TrimPrefix(ep.Path, "/"), "/") {
		if name, ok := templateVar(seg); ok {
			out[name] = segs[i]
		}
		i++
	}
	return ep, out, nil
}

// route is a segment trie over path templates.
type route struct {
	literal  map[string]*route
	variable *route
	methods  map[string]*Endpoint
}

func newRoute() *route { return &route{} }

func (rt *route) add(ep *Endpoint) {
	node := rt
	trimmed := strings.TrimPrefix(ep.Path, "/")
	if trimmed != "" {
		for seg := range strings.SplitSeq(trimmed, "/") {
			if _, ok := templateVar(seg); ok {
				if node.variable == nil {
					node.variable = &route{}
				}
				node = node.variable
				continue
			}
			if node.literal == nil {
				node.literal = map[string]*route{}
			}
			next := node.literal[seg]
			if next == nil {
				next = &route{}
				node.literal[seg] = next
			}
			node = next
		}
	}
	if node.methods == nil {
		node.methods = map[string]*Endpoint{}
	}
	node.methods[ep.Method] = ep
}

func (rt *route) match(segs []string) *route {
	if len(segs) == 0 {
		if len(rt.methods) > 0 {
			return rt
		}
		return nil
	}
	if next := rt.literal[segs[0]]; next != nil {
		if found := next.match(segs[1:]); found != nil {
			return found
		}
	}
	if rt.variable != nil {
		if found := rt.variable.match(segs[1:]); found != nil {
			return found
		}
	}
	return nil
}

func (rt *route) methodList() string {
	var ms []string
	for _, m := range []string{"GET", "POST", "PUT", "DELETE"} {
		if rt.methods[m] != nil {
			ms = append(ms, m)
		}
	}
	return strings.Join(ms, ", ")
}

package schema

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// normalizer turns the raw tree into endpoints. It carries the per-load
// cache of compiled patterns (many parameters share one pattern).
type normalizer struct {
	endpoints []*Endpoint
	paths     int
	seenPath  map[string]bool
	// seenShape maps a path with its variables unnamed (/storage/{}) to
	// the first tree node of that shape.
	seenShape map[string]string
	patterns  map[string]*regexp.Regexp
}

func normalize(nodes []*rawNode) (*normalizer, error) {
	n := &normalizer{
		seenPath:  make(map[string]bool, 512),
		seenShape: make(map[string]string, 512),
		patterns:  make(map[string]*regexp.Regexp, 64),
	}
	for i, node := range nodes {
		if node == nil {
			return nil, fmt.Errorf("schema array element %d is null, want a tree node", i)
		}
		if err := n.walk(node); err != nil {
			return nil, err
		}
	}
	if len(n.endpoints) == 0 {
		return nil, fmt.Errorf("schema contains no methods")
	}
	return n, nil
}

func (n *normalizer) walk(node *rawNode) error {
	if err := checkPathTemplate(node.Path); err != nil {
		return fmt.Errorf("tree node %q: %w", node.Path, err)
	}
	if n.seenPath[node.Path] {
		return fmt.Errorf("tree node %q appears twice", node.Path)
	}
	n.seenPath[node.Path] = true
	shape := pathShape(node.Path)
	if first, dup := n.seenShape[shape]; dup {
		return fmt.Errorf("tree nodes %q and %q differ only in the names of their path variables: a call would match both", first, node.Path)
	}
	n.seenShape[shape] = node.Path
	n.paths++
	methods := make([]string, 0, len(node.Info))
	for m := range node.Info {
		methods = append(methods, m)
	}
	slices.Sort(methods) // apidoc.js sorts keys: DELETE, GET, POST, PUT
	for _, m := range methods {
		ep, err := n.endpoint(node.Path, m, node.Info[m])
		if err != nil {
			return fmt.Errorf("%s %s: %w", m, node.Path, err)
		}
		n.endpoints = append(n.endpoints, ep)
	}
	for _, child := range node.Children {
		if child == nil {
			return fmt.Errorf("tree node %q has a null child", node.Path)
		}
		if err := n.walk(child); err != nil {
			return err
		}
	}
	return nil
}

// checkPathTemplate accepts /seg/{var}/seg with non-empty segments.
func checkPathTemplate(p string) error {
	if !strings.HasPrefix(p, "/") {
		return fmt.Errorf("path must start with '/'")
	}
	if p == "/" {
		return nil
	}
	for seg := range strings.SplitSeq(p[1:], "/") {
		if seg == "" {
			return fmt.Errorf("path has an empty segment")
		}
		if strings.ContainsAny(seg, "{}") {
			name, ok := templateVar(seg)
			if !ok || name == "" || strings.ContainsAny(name, "{}") {
				return fmt.Errorf("path segment %q is not a {variable}", seg)
			}
		}
	}
	return nil
}

// pathShape is a path template with its variables unnamed: /storage/{}
// for /storage/{storage}. Two templates of one shape match the same
// concrete paths, so a schema may hold only one of them.
func pathShape(p string) string {
	if !strings.Contains(p, "{") {
		return p
	}
	segs := strings.Split(p, "/")
	for i, seg := range segs {
		if _, ok := templateVar(seg); ok {
			segs[i] = "{}"
		}
	}
	return strings.Join(segs, "/")
}

// templateVar reports the variable name of a {name} segment.
func templateVar(seg string) (string, bool) {
	if len(seg) >= 2 && seg[0] == '{' && seg[len(seg)-1] == '}' {
		return seg[1 : len(seg)-1], true
	}
	return "", false
}

func (n *normalizer) endpoint(path, method string, rm *rawMethod) (*Endpoint, error) {
	switch method {
	case "GET", "POST", "PUT", "DELETE":
	default:
		return nil, fmt.Errorf("unsupported HTTP method %q", method)
	}
	if rm == nil {
		return nil, fmt.Errorf("method entry is null")
	}
	if rm.Method != "" && rm.Method != method {
		return nil, fmt.Errorf("entry says method %q", rm.Method)
	}
	ep := &Endpoint{
		Method:            method,
		Path:              path,
		Handler:           rm.Name,
		Description:       rm.Description,
		Returns:           rm.Returns,
		Permissions:       rm.Permissions,
		Protected:         bool(rm.Protected),
		AllowToken:        rm.AllowToken == nil || bool(*rm.AllowToken),
		DownloadAllowed:   bool(rm.DownloadAllowed),
		ExposeCredentials: bool(rm.ExposeCredentials),
		Unstable:          bool(rm.Unstable),
	}
	if rm.ProxyTo != nil {
		ep.ProxyTo = *rm.ProxyTo
	}
	if len(ep.Returns) > 0 && ep.Returns.Kind() == 'n' {
		ep.Returns = nil
	}
	if rm.Parameters != nil {
		if rm.Parameters.AdditionalProperties != nil {
			ep.AdditionalParams = bool(*rm.Parameters.AdditionalProperties)
		}
		ep.params = make(map[string]*Param, len(rm.Parameters.Properties))
		for name, rp := range rm.Parameters.Properties {
			if rp == nil {
				return nil, fmt.Errorf("parameter %q is null", name)
			}
			p, err := n.param(name, rp)
			if err != nil {
				return nil, fmt.Errorf("parameter %q: %w", name, err)
			}
			ep.params[name] = p
			ep.Params = append(ep.Params, p)
		}
	} else {
		ep.params = map[string]*Param{}
	}
	for seg := range strings.SplitSeq(strings.TrimPrefix(path, "/"), "/") {
		name, ok := templateVar(seg)
		if !ok {
			continue
		}
		ep.PathParams = append(ep.PathParams, name)
		if p := ep.params[name]; p != nil {
			// A value in the path cannot be left out, even where PVE's
			// schema marks it optional ({pos} of the firewall rules).
			p.Optional = false
			continue
		}
		// PVE always declares path variables; should a future schema not,
		// the variable is still a required string.
		p := &Param{Name: name, Type: "string", IndexMax: -1, Description: "Path variable."}
		ep.params[name] = p
		ep.Params = append(ep.Params, p)
	}
	slices.SortFunc(ep.Params, func(a, b *Param) int { return strings.Compare(a.Name, b.Name) })
	for _, p := range ep.Params {
		if p.Indexed {
			ep.indexed = append(ep.indexed, p)
		}
	}
	return ep, nil
}

// Required reports whether a call must give the parameter (or sub-key):
// it is not optional, not an alias (an alias only renames another key, and
// PVE's check_object never asks for one: e1000=… is another spelling of
// model and macaddr), and not a variant that applies only when another
// parameter selects it (oneOf, instance-types).
func (p *Param) Required() bool {
	return !p.Optional && p.Alias == "" && len(p.OneOf) == 0 && len(p.InstanceTypes) == 0
}

// indexedName matches numbered keys such as net[n] or acmedomain[n].
var indexedName = regexp.MustCompile(`^([A-Za-z][A-Za-z0-9_-]*)\[n\]$`)

// indexRange finds the highest index a description states:
// "(n is 0 to 30)" or "(... link0..link7)".
var indexRange = regexp.MustCompile(`n is 0 to (\d+)|\b[a-z]+0\.\.[a-z]+(\d+)\b`)

func matchIndexed(name string) []string {
	if !strings.HasSuffix(name, "[n]") {
		return nil
	}
	return indexedName.FindStringSubmatch(name)
}

// param completes a decoded parameter in place: its name, numbered-key
// form, compiled pattern, and the same for its sub-schemas.
func (n *normalizer) param(name string, p *Param) (*Param, error) {
	p.Name = name
	p.IndexMax = -1
	switch p.Type {
	case "", "string", "integer", "number", "boolean", "array", "object", "null", "any":
	default:
		return nil, fmt.Errorf("unknown type %q", p.Type)
	}
	if m := matchIndexed(name); m != nil {
		p.Indexed = true
		p.Prefix = m[1]
		if r := indexRange.FindStringSubmatch(p.Description); r != nil {
			if v, err := strconv.Atoi(r[1] + r[2]); err == nil {
				p.IndexMax = v
			}
		}
	}
	if p.Pattern != "" {
		p.re = n.compilePattern(p.Pattern)
	}
	if p.Properties != nil {
		if err := n.propertyFormat(p.Properties); err != nil {
			return nil, err
		}
	}
	if p.Items != nil {
		if _, err := n.param(name, p.Items); err != nil {
			return nil, fmt.Errorf("items: %w", err)
		}
	}
	for i, alt := range p.OneOf {
		if alt == nil {
			return nil, fmt.Errorf("oneOf[%d] is null", i)
		}
		if _, err := n.param(name, alt); err != nil {
			return nil, fmt.Errorf("oneOf[%d]: %w", i, err)
		}
	}
	return p, nil
}

func (n *normalizer) propertyFormat(pf *PropertyFormat) error {
	pf.Keys = make([]*Param, 0, len(pf.byName))
	for k, sub := range pf.byName {
		if sub == nil {
			return fmt.Errorf("property-string key %q is null", k)
		}
		if _, err := n.param(k, sub); err != nil {
			return fmt.Errorf("property-string key %q: %w", k, err)
		}
		pf.Keys = append(pf.Keys, sub)
		if sub.DefaultKey {
			pf.defaultKey = sub
		}
	}
	for _, sub := range pf.Keys {
		if sub.Alias != "" && pf.byName[sub.Alias] == nil {
			return fmt.Errorf("property-string key %q is an alias of unknown key %q", sub.Name, sub.Alias)
		}
	}
	slices.SortFunc(pf.Keys, func(a, b *Param) int { return strings.Compare(a.Name, b.Name) })
	return nil
}

// compilePattern translates PVE's Perl pattern to RE2, anchored as PVE
// anchors it (m/^$pattern$/). It returns nil when RE2 cannot express it.
func (n *normalizer) compilePattern(perl string) *regexp.Regexp {
	if re, ok := n.patterns[perl]; ok {
		return re
	}
	re, err := regexp.Compile(`^(?:` + perlToRE2(perl) + `)$`)
	if err != nil {
		re = nil
	}
	n.patterns[perl] = re
	return re
}

// perlQuantifier matches Perl's bounded repetitions {m,n} and {,n}.
var perlQuantifier = regexp.MustCompile(`\{(\d*),(\d+)\}`)

// maxRE2Repeat is the largest count RE2 accepts in a repetition.
const maxRE2Repeat = 1000

// perlToRE2 rewrites the Perl-only constructs found in PVE patterns: the
// (?^flags:...) groups of stringified qr// objects, {,n} (RE2 spells it
// {0,n}), and counts over RE2's limit of 1000, whose upper bound is dropped
// (the check becomes looser, never stricter, than PVE's).
func perlToRE2(p string) string {
	p = strings.ReplaceAll(p, "(?^:", "(?:")
	p = strings.ReplaceAll(p, "(?^i:", "(?i:")
	p = strings.ReplaceAll(p, `\0`, `\x00`)
	if strings.Contains(p, ",") {
		p = perlQuantifier.ReplaceAllStringFunc(p, func(q string) string {
			m := perlQuantifier.FindStringSubmatch(q)
			lo, hi := m[1], m[2]
			if lo == "" {
				lo = "0"
			}
			if n, err := strconv.Atoi(hi); err != nil || n > maxRE2Repeat {
				return "{" + lo + ",}"
			}
			return "{" + lo + "," + hi + "}"
		})
	}
	return p
}

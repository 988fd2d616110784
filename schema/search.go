package schema

import (
	"math"
	"slices"
	"strings"
)

// SearchOptions narrows a search.
type SearchOptions struct {
	// Limit caps the number of results; 0 means 20.
	Limit int
	// Method keeps only endpoints of this HTTP method when set.
	Method string
	// MaxRisk keeps only endpoints whose class is at most this when set.
	MaxRisk *Risk
	// Filter, when set, keeps only endpoints it accepts (for example the
	// tools a caller's policy allows).
	Filter func(*Endpoint) bool
}

// SearchResult is one ranked endpoint.
type SearchResult struct {
	Endpoint *Endpoint
	Score    float64
}

// Field weights of BM25F: names and paths say more than prose.
const (
	weightTool        = 3.0
	weightPath        = 3.0
	weightHandler     = 2.0
	weightDescription = 1.0
	weightMethodHint  = 0.6 // bonus when a query word implies the HTTP method
	weightSubject     = 1.5 // bonus when a query word names the path's last literal segment
	bm25K1            = 1.2
	bm25B             = 0.75
)

// searchIndex is a BM25F index over the endpoints of one registry.
type searchIndex struct {
	postings map[string][]posting
	docLen   []float64
	subject  []string // tokens of each path's last literal segment
	avgLen   float64
	eps      []*Endpoint
}

type posting struct {
	doc int32
	tf  float32
}

func (r *Registry) index() *searchIndex {
	r.searchOnce.Do(func() { r.search = buildSearchIndex(r.endpoints) })
	return r.search
}

func buildSearchIndex(eps []*Endpoint) *searchIndex {
	idx := &searchIndex{
		postings: make(map[string][]posting, 4096),
		docLen:   make([]float64, len(eps)),
		subject:  make([]string, len(eps)),
		eps:      eps,
	}
	total := 0.0
	for i, ep := range eps {
		tf := map[string]float64{}
		add := func(text string, w float64) {
			for _, t := range tokenize(text) {
				tf[t] += w
				idx.docLen[i] += w
			}
		}
		addJoined := func(text string, w float64) {
			add(text, w)
			for _, t := range compounds(text) {
				tf[t] += w
				idx.docLen[i] += w
			}
		}
		add(ep.Tool, weightTool)
		addJoined(literalPath(ep.Path), weightPath)
		add(ep.Handler, weightHandler)
		addJoined(ep.Description, weightDescription)
		idx.subject[i] = pathSubject(ep.Path)
		total += idx.docLen[i]
		for t, f := range tf {
			idx.postings[t] = append(idx.postings[t], posting{doc: int32(i), tf: float32(f)})
		}
	}
	if len(eps) > 0 {
		idx.avgLen = total / float64(len(eps))
	}
	return idx
}

// pathSubject is the last literal segment of a template, tokenized as one
// word: what the endpoint is about (qemu for /nodes/{node}/qemu/{vmid}).
func pathSubject(p string) string {
	segs := strings.Split(p, "/")
	for i := len(segs) - 1; i >= 0; i-- {
		if _, isVar := templateVar(segs[i]); !isVar && segs[i] != "" {
			return stem(strings.ToLower(segs[i]))
		}
	}
	return ""
}

// literalPath keeps the literal segments of a template and the variable
// names, so "qemu" and "vmid" both count.
func literalPath(p string) string {
	return strings.NewReplacer("{", " ", "}", " ", "/", " ").Replace(p)
}

// Search ranks endpoints for a free-text query with BM25F over tool names,
// paths, handler names and descriptions. Common words for PVE objects are
// expanded (vm → qemu, container → lxc, backup → vzdump), and words that
// imply a method ("list", "create", "delete", "set") favour it.
func (r *Registry) Search(query string, opts SearchOptions) []SearchResult {
	idx := r.index()
	limit := opts.Limit
	if limit <= 0 {
		limit = 20
	}
	scores := make(map[int32]float64)
	n := float64(len(idx.eps))
	var methodHints []string
	words := tokenize(query)
	raw := rawWords(query)
	for i, word := range words {
		if m := methodHint(word); m != "" {
			methodHints = append(methodHints, m)
		}
		terms := map[string]float64{word: 1}
		for syn, w := range synonyms(word) {
			terms[syn] = w
		}
		// A word and its neighbour written as one ("cloud init" and
		// "cloud-init" find cloudinit, "move disk" finds move_disk): the
		// joined word is a term of both, so it counts for two words.
		for _, j := range []int{i - 1, i + 1} {
			if j < 0 || j >= len(raw) || len(raw) != len(words) {
				continue
			}
			a, b := raw[min(i, j)], raw[max(i, j)]
			if joined := stem(a + b); len(idx.postings[joined]) > 0 {
				terms[joined] = 1
			}
		}
		// A query word scores once per document, through its best term.
		best := map[int32]float64{}
		for term, qw := range terms {
			plist := idx.postings[term]
			if len(plist) == 0 {
				continue
			}
			df := float64(len(plist))
			idf := math.Log(1 + (n-df+0.5)/(df+0.5))
			for _, p := range plist {
				tf := float64(p.tf)
				norm := tf * (bm25K1 + 1) / (tf + bm25K1*(1-bm25B+bm25B*idx.docLen[p.doc]/idx.avgLen))
				s := qw * idf * norm
				if s > best[p.doc] {
					best[p.doc] = s
				}
			}
		}
		for doc, s := range best {
			if qw, ok := terms[idx.subject[doc]]; ok {
				s += qw * weightSubject
			}
			scores[doc] += s
		}
	}
	results := make([]SearchResult, 0, len(scores))
	for doc, s := range scores {
		ep := idx.eps[doc]
		if !keep(ep, opts) {
			continue
		}
		if slices.Contains(methodHints, ep.Method) || (ep.Method != "GET" && slices.Contains(methodHints, methodAct)) {
			s += weightMethodHint
		}
		results = append(results, SearchResult{Endpoint: ep, Score: s})
	}
	slices.SortFunc(results, func(a, b SearchResult) int {
		switch {
		case a.Score > b.Score:
			return -1
		case a.Score < b.Score:
			return 1
		case len(a.Endpoint.Path) != len(b.Endpoint.Path):
			return len(a.Endpoint.Path) - len(b.Endpoint.Path)
		}
		return strings.Compare(a.Endpoint.Key(), b.Endpoint.Key())
	})
	if len(results) > limit {
		results = results[:limit]
	}
	return results
}

func keep(ep *Endpoint, opts SearchOptions) bool {
	if opts.Method != "" && !strings.EqualFold(opts.Method, ep.Method) {
		return false
	}
	if opts.MaxRisk != nil && ep.Risk > *opts.MaxRisk {
		return false
	}
	return opts.Filter == nil || opts.Filter(ep)
}

// rawWords are the words of a query as tokenize splits them, lower-cased
// but not stemmed (so that two of them can be joined before stemming).
func rawWords(text string) []string {
	return strings.FieldsFunc(strings.ToLower(text), func(c rune) bool {
		return (c < 'a' || c > 'z') && (c < '0' || c > '9')
	})
}

// compounds are the words of text that are written with - or _ between
// two or three parts, joined into one ("cloud-init" → cloudinit,
// "move_disk" → movedisk), so that a query that writes them joined finds
// them.
func compounds(text string) []string {
	var out []string
	for _, chunk := range strings.FieldsFunc(strings.ToLower(text), func(c rune) bool {
		return (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '-' && c != '_'
	}) {
		parts := strings.FieldsFunc(chunk, func(c rune) bool { return c == '-' || c == '_' })
		if len(parts) >= 2 && len(parts) <= 3 {
			out = append(out, stem(strings.Join(parts, "")))
		}
	}
	return out
}

// tokenize lower-cases text, splits it on anything but letters and digits,
// and folds plurals ("snapshots" → "snapshot").
func tokenize(text string) []string {
	var out []string
	start := -1
	lower := strings.ToLower(text)
	flush := func(end int) {
		if start >= 0 {
			out = append(out, stem(lower[start:end]))
			start = -1
		}
	}
	for i := 0; i < len(lower); i++ {
		c := lower[i]
		if (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') {
			if start < 0 {
				start = i
			}
			continue
		}
		flush(i)
	}
	flush(len(lower))
	return out
}

func stem(w string) string {
	switch {
	case len(w) > 4 && strings.HasSuffix(w, "ies"):
		return w[:len(w)-3] + "y"
	case w == "has": // not the plural of "ha" (high availability)
		return w
	case len(w) >= 3 && strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss") && !strings.HasSuffix(w, "us"):
		return w[:len(w)-1]
	}
	return w
}

// synonyms maps everyday words to the words PVE's paths, handler names
// and descriptions use, with the weight each expansion carries. "vm" leans
// on "qemu" because PVE's handler names say vm_start for containers too.
func synonyms(word string) map[string]float64 {
	switch word {
	case "vm", "kvm", "guest", "machine":
		return map[string]float64{"qemu": 1, "vm": 0.4, "virtual": 0.4}
	case "container", "ct":
		return map[string]float64{"lxc": 1, "container": 0.8}
	case "backup":
		return map[string]float64{"vzdump": 1, "backup": 0.8}
	case "list", "all":
		return map[string]float64{"index": 0.8, "list": 0.6}
	case "reboot", "restart":
		return map[string]float64{"reboot": 0.8, "restart": 0.8}
	case "console", "vnc":
		return map[string]float64{"vncproxy": 0.8, "termproxy": 0.8, "console": 0.8}
	case "shell":
		return map[string]float64{"termproxy": 0.8, "vncshell": 0.8}
	case "package", "upgrade":
		return map[string]float64{"apt": 0.8, "update": 0.6}
	case "permission":
		return map[string]float64{"acl": 0.8, "permission": 0.8}
	case "log":
		return map[string]float64{"syslog": 0.7, "journal": 0.7}
	case "disk", "volume":
		return map[string]float64{"disk": 0.7, "volume": 0.7}
	case "ip", "interface", "nic":
		return map[string]float64{"network": 0.7, "iface": 0.7}
	case "job":
		return map[string]float64{"task": 0.7}
	case "task":
		return map[string]float64{"upid": 0.5}
	case "free", "id", "vmid":
		return map[string]float64{"nextid": 0.7}
	}
	return nil
}

// methodAct is the hint of a word that names an action: any method but
// GET, so that the endpoint that acts ranks above its read-only twin
// (POST …/migrate migrates; GET …/migrate only checks the preconditions).
const methodAct = "!GET"

// methodHint maps a query word to the HTTP method it implies.
func methodHint(word string) string {
	switch word {
	case "list", "get", "show", "read", "status", "info", "view", "precondition", "check":
		return "GET"
	case "migrate", "clone", "resize", "rollback", "move", "restore", "template", "convert",
		"shutdown", "reboot", "suspend", "resume", "reset", "regenerate", "apply", "execute":
		return methodAct
	case "create", "add", "new", "start", "stop", "run", "make":
		return "POST"
	case "set", "update", "modify", "change", "edit", "configure":
		return "PUT"
	case "delete", "remove", "destroy", "drop":
		return "DELETE"
	}
	return ""
}

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
	weightSynonym     = 0.7 // a term reached through a synonym counts less
	weightMethodHint  = 0.6 // bonus when a query word implies the HTTP method
	bm25K1            = 1.2
	bm25B             = 0.75
)

// searchIndex is a BM25F index over the endpoints of one registry.
type searchIndex struct {
	postings map[string][]posting
	docLen   []float64
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
		add(ep.Tool, weightTool)
		add(literalPath(ep.Path), weightPath)
		add(ep.Handler, weightHandler)
		add(ep.Description, weightDescription)
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
	for _, word := range tokenize(query) {
		if m := methodHint(word); m != "" {
			methodHints = append(methodHints, m)
		}
		terms := map[string]float64{word: 1}
		for _, syn := range synonyms(word) {
			if _, ok := terms[syn]; !ok {
				terms[syn] = weightSynonym
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
			scores[doc] += s
		}
	}
	results := make([]SearchResult, 0, len(scores))
	for doc, s := range scores {
		ep := idx.eps[doc]
		if !keep(ep, opts) {
			continue
		}
		if slices.Contains(methodHints, ep.Method) {
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
	case len(w) > 3 && strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss") && !strings.HasSuffix(w, "us"):
		return w[:len(w)-1]
	}
	return w
}

// synonyms maps everyday words to the words PVE's paths and descriptions use.
func synonyms(word string) []string {
	switch word {
	case "vm", "kvm", "guest", "machine":
		return []string{"qemu", "vm"}
	case "container", "ct":
		return []string{"lxc", "container"}
	case "backup":
		return []string{"vzdump", "backup"}
	case "reboot", "restart":
		return []string{"reboot", "restart"}
	case "console", "vnc":
		return []string{"vncproxy", "termproxy", "console"}
	case "shell":
		return []string{"termproxy", "vncshell", "shell"}
	case "package", "upgrade":
		return []string{"apt", "update"}
	case "permission", "acl":
		return []string{"acl", "permission"}
	case "log":
		return []string{"log", "syslog", "journal"}
	case "disk", "volume":
		return []string{"disk", "volume"}
	case "ip", "interface", "nic":
		return []string{"network", "iface"}
	case "job":
		return []string{"task", "job"}
	case "task":
		return []string{"task", "upid"}
	case "id":
		return []string{"nextid"}
	}
	return nil
}

// methodHint maps a query word to the HTTP method it implies.
func methodHint(word string) string {
	switch word {
	case "list", "get", "show", "read", "status", "info", "view":
		return "GET"
	case "create", "add", "new", "start", "stop", "run", "make":
		return "POST"
	case "set", "update", "modify", "change", "edit", "configure":
		return "PUT"
	case "delete", "remove", "destroy", "drop":
		return "DELETE"
	}
	return ""
}

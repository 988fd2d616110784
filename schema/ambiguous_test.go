package schema

import (
	"fmt"
	"strings"
	"testing"
)

// apidocTree builds an apidoc.js from nested nodes: each node is a path
// with a GET (and, for paths ending in a variable, a PUT) and its children.
type docNode struct {
	path     string
	children []docNode
}

func (d docNode) json() string {
	methods := `"GET":{"method":"GET","name":"get","description":"Read.","allowtoken":1,"parameters":{"additionalProperties":0},"permissions":{"user":"all"},"returns":{"type":"object"}}`
	var kids []string
	for _, c := range d.children {
		kids = append(kids, c.json())
	}
	out := fmt.Sprintf(`{"path":%q,"text":"x","leaf":%d,"info":{%s}`, d.path, map[bool]int{true: 1, false: 0}[len(kids) == 0], methods)
	if len(kids) > 0 {
		out += `,"children":[` + strings.Join(kids, ",") + `]`
	}
	return out + "}"
}

func apidoc(nodes ...docNode) []byte {
	parts := []string{docNode{path: "/version"}.json()}
	for _, n := range nodes {
		parts = append(parts, n.json())
	}
	return []byte("const apiSchema = [" + strings.Join(parts, ",") + "];\n")
}

// Reproduces the review finding: two sibling templates that differ only in
// the variable name (/storage/{storage} and /storage/{store}) were accepted,
// and a call such as GET /storage/local then matched whichever the router
// kept. Any two paths equal up to variable names are ambiguous, at any depth.
func TestParseRejectsPathsEqualUpToVariableNames(t *testing.T) {
	for _, tc := range []struct {
		name         string
		doc          []byte
		first, other string
	}{
		{"siblings", apidoc(docNode{path: "/storage", children: []docNode{{path: "/storage/{storage}"}, {path: "/storage/{store}"}}}),
			"/storage/{storage}", "/storage/{store}"},
		{"under differently named parents", apidoc(docNode{path: "/nodes", children: []docNode{
			{path: "/nodes/{node}", children: []docNode{{path: "/nodes/{node}/status"}}},
			{path: "/nodes/{name}", children: []docNode{{path: "/nodes/{name}/status"}}},
		}}), "/nodes/{node}", "/nodes/{name}"},
		{"deep, in two subtrees", apidoc(
			docNode{path: "/a", children: []docNode{{path: "/a/{x}", children: []docNode{{path: "/a/{x}/b/{y}"}}}}},
			docNode{path: "/a/{z}/b", children: []docNode{{path: "/a/{z}/b/{w}"}}},
		), "/a/{x}/b/{y}", "/a/{z}/b/{w}"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Parse(tc.doc)
			if err == nil {
				t.Fatalf("Parse accepted an ambiguous schema (%d methods)", r.Methods())
			}
			for _, want := range []string{fmt.Sprintf("%q", tc.first), fmt.Sprintf("%q", tc.other), "differ only in the names of their path variables"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not say %s", err, want)
				}
			}
		})
	}
	// A literal beside a variable is PVE's routing, not an ambiguity.
	ok := apidoc(docNode{path: "/storage", children: []docNode{{path: "/storage/{storage}"}, {path: "/storage/local"}}})
	if _, err := Parse(ok); err != nil {
		t.Errorf("a literal sibling of a variable was refused: %v", err)
	}
}

// An ambiguous apidoc.js arriving on disk is refused like a malformed one:
// the last good registry stays live and the status names both paths.
func TestSourceKeepsRegistryOnAmbiguousSchema(t *testing.T) {
	h := newWatchHarness(t, miniSchema("nodes"))
	h.start()
	live := h.src.Current()
	writeFile(t, h.path, apidoc(docNode{path: "/storage", children: []docNode{{path: "/storage/{storage}"}, {path: "/storage/{store}"}}}))
	ev := h.expect(EventRejected)
	if ev.Err == nil || !strings.Contains(ev.Err.Error(), `"/storage/{store}"`) {
		t.Errorf("rejection error %v does not name the second path", ev.Err)
	}
	if h.src.Current() != live {
		t.Fatal("an ambiguous schema replaced the last good registry")
	}
	st := h.src.Status()
	if st.Healthy() || !strings.Contains(st.LastError, `"/storage/{storage}"`) || !strings.Contains(st.LastError, `"/storage/{store}"`) {
		t.Errorf("status does not show the ambiguity: %+v", st)
	}
	if st.Methods != live.Methods() {
		t.Errorf("status counts %d methods, the live registry has %d", st.Methods, live.Methods())
	}
}

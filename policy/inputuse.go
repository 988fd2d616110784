package policy

import (
	"slices"
	"strconv"
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"
)

// inputUse is what a compiled policy can read of its input document, found
// statically by walking every rule its decision can reach (reachableRules;
// the library's and profiles' included). Tool visibility is computed once
// per class of inputs the policy cannot tell apart: two principals whose
// read fields are equal share one answer, and so do two endpoints whose
// read fields are.
//
// A node of the input is read in one of three ways:
//
//   - not at all (no node): any value gives the same evaluation;
//   - only compared with constants (input.path == "/version", input.method
//     != "GET", input.path in {...}): values that equal none of the
//     constants give the same evaluation, so the class of a value is the
//     constant it equals, or "another value";
//   - in any other way (whole): a reference to the node as a value, a
//     reference with a key that is not a constant string (input[k]), a
//     builtin's argument, a with modifier... The class is the value itself.
//
// A reference to a node's child (input.principal.source) is a use of that
// child; a reference to input itself, or to input with a dynamic key, is a
// whole use of the document.
type inputUse struct {
	whole    bool
	compared bool
	consts   []*ast.Term
	children map[string]*inputUse
	keys     map[string]*ast.Term // the children's keys as terms
}

// child returns the use of the child k of u, creating it.
func (u *inputUse) child(k string) *inputUse {
	if u.children == nil {
		u.children = map[string]*inputUse{}
		u.keys = map[string]*ast.Term{}
	}
	c := u.children[k]
	if c == nil {
		c = &inputUse{}
		u.children[k] = c
		u.keys[k] = ast.StringTerm(k)
	}
	return c
}

// at returns the use of the node at path, creating it.
func (u *inputUse) at(path []string) *inputUse {
	n := u
	for _, k := range path {
		n = n.child(k)
	}
	return n
}

// get returns the use of the child k, nil when k is not read. A whole use
// of u reads every child wholly.
func (u *inputUse) get(k string) *inputUse {
	if u == nil {
		return nil
	}
	if u.whole {
		return u
	}
	return u.children[k]
}

// analyzeInput walks the rules that the query of ref can evaluate, as
// compiled (references resolved, imports expanded, comprehensions and with
// values rewritten).
func analyzeInput(c *ast.Compiler, ref ast.Ref) *inputUse {
	root := &inputUse{}
	vis := ast.NewGenericVisitor(func(x any) bool {
		switch x := x.(type) {
		case *ast.Expr:
			for _, w := range x.With {
				if ref, ok := w.Target.Value.(ast.Ref); ok && ref.HasPrefix(ast.InputRootRef) {
					// The input is replaced for part of the evaluation:
					// what is read then is not what the caller sent.
					root.whole = true
				}
			}
			if path, consts, ok := constComparison(x); ok {
				n := root.at(path)
				n.compared = true
				n.consts = append(n.consts, consts...)
				return true
			}
		case ast.Ref:
			if x.HasPrefix(ast.InputRootRef) {
				// input.a.b, input.a[k]: the deepest node with a constant
				// path is read as a value.
				path, _ := groundPath(x)
				root.at(path).whole = true
			}
		}
		return false
	})
	for _, r := range reachableRules(c, ref) {
		vis.Walk(r)
	}
	return root
}

// reachableRules returns the rules an evaluation of ref can reach: its
// own, and transitively those they depend on (the compiler's dependency
// graph includes every rule a reference with a variable may select). A
// reference to data as a whole, or with a variable for its first key,
// may reach any rule: then every rule of every module is returned.
func reachableRules(c *ast.Compiler, ref ast.Ref) []*ast.Rule {
	seen := map[*ast.Rule]bool{}
	var out, stack []*ast.Rule
	push := func(r *ast.Rule) {
		for ; r != nil; r = r.Else {
			if !seen[r] {
				seen[r] = true
				stack = append(stack, r)
				out = append(out, r)
			}
		}
	}
	for _, r := range c.GetRules(ref) {
		push(r)
	}
	anyData := false
	for len(stack) > 0 && !anyData {
		r := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		ast.WalkRefs(r, func(x ast.Ref) bool {
			if x.HasPrefix(ast.DefaultRootRef) && (len(x) == 1 || !ast.IsConstant(x[1].Value)) {
				anyData = true
			}
			return anyData
		})
		for dep := range c.Graph.Dependencies(r) {
			if d, ok := dep.(*ast.Rule); ok {
				push(d)
			}
		}
	}
	if anyData {
		out = out[:0]
		for _, name := range sortedKeys(c.Modules) {
			ast.WalkRules(c.Modules[name], func(r *ast.Rule) bool {
				out = append(out, r)
				return false
			})
		}
	}
	return out
}

// groundPath returns the constant string keys of an input reference
// (input.principal.source → principal, source), up to the first key that
// is not a constant string; dynamic reports whether there was one.
func groundPath(ref ast.Ref) (path []string, dynamic bool) {
	for _, t := range ref[1:] {
		s, ok := t.Value.(ast.String)
		if !ok {
			return path, true
		}
		path = append(path, string(s))
	}
	return path, false
}

// inputPath is the path of a term that is an input reference with constant
// string keys only.
func inputPath(t *ast.Term) ([]string, bool) {
	ref, ok := t.Value.(ast.Ref)
	if !ok || len(ref) < 2 || !ref.HasPrefix(ast.InputRootRef) {
		return nil, false
	}
	path, dynamic := groundPath(ref)
	return path, !dynamic
}

// constComparison recognizes an expression that only compares an input
// node with constants: ==, !=, = (unification with a constant), and
// membership in a constant collection.
func constComparison(x *ast.Expr) ([]string, []*ast.Term, bool) {
	if len(x.With) > 0 || !x.IsCall() {
		return nil, nil, false
	}
	ops := x.Operands()
	if len(ops) != 2 {
		return nil, nil, false
	}
	switch x.Operator().String() {
	case ast.Equal.Name, ast.NotEqual.Name, ast.Equality.Name:
		for _, pair := range [2][2]*ast.Term{{ops[0], ops[1]}, {ops[1], ops[0]}} {
			if path, ok := inputPath(pair[0]); ok && ast.IsConstant(pair[1].Value) {
				return path, []*ast.Term{pair[1]}, true
			}
		}
	case ast.Member.Name:
		path, ok := inputPath(ops[0])
		if !ok || !ast.IsConstant(ops[1].Value) {
			return nil, nil, false
		}
		var elems []*ast.Term
		switch coll := ops[1].Value.(type) {
		case ast.Set:
			elems = coll.Slice()
		case *ast.Array:
			for i := range coll.Len() {
				elems = append(elems, coll.Elem(i))
			}
		case ast.Object:
			for _, k := range coll.Keys() {
				elems = append(elems, coll.Get(k))
			}
		default:
			return nil, nil, false
		}
		return path, elems, true
	}
	return nil, nil, false
}

// writeClass writes the class of v (nil: absent) under use u, an encoding
// that is equal for two values exactly when the policy cannot tell them
// apart through this node.
func (u *inputUse) writeClass(b *strings.Builder, v *ast.Term) {
	if u == nil {
		return
	}
	if u.whole {
		b.WriteByte('=')
		writeCanonical(b, v)
		return
	}
	if u.compared {
		if v != nil && slices.ContainsFunc(u.consts, func(c *ast.Term) bool { return c.Value.Compare(v.Value) == 0 }) {
			b.WriteByte('=')
			writeCanonical(b, v)
		} else {
			b.WriteString("#other")
		}
	}
	if len(u.children) == 0 {
		return
	}
	obj, _ := valueOf(v).(ast.Object)
	b.WriteByte('{')
	for _, k := range sortedKeys(u.children) {
		b.WriteString(strconv.Quote(k))
		b.WriteByte(':')
		var cv *ast.Term
		if obj != nil {
			cv = obj.Get(u.keys[k])
		}
		u.children[k].writeClass(b, cv)
		b.WriteByte(';')
	}
	b.WriteByte('}')
}

// mask returns the part of v that u reads: the whole value for a node read
// or compared, and for a node read only through its children an object of
// those children. nil when nothing of v is read.
func (u *inputUse) mask(v *ast.Term) *ast.Term {
	if u == nil || v == nil {
		return nil
	}
	if u.whole || u.compared {
		return v
	}
	obj, ok := v.Value.(ast.Object)
	if !ok {
		// A scalar read only through children: every such reference is
		// undefined, whatever the scalar.
		return nil
	}
	out := ast.NewObject()
	for _, k := range sortedKeys(u.children) {
		if m := u.children[k].mask(obj.Get(u.keys[k])); m != nil {
			out.Insert(u.keys[k], m)
		}
	}
	return ast.NewTerm(out)
}

func valueOf(t *ast.Term) ast.Value {
	if t == nil {
		return nil
	}
	return t.Value
}

// writeCanonical writes v with object keys and set elements sorted, so
// that equal values have equal encodings.
func writeCanonical(b *strings.Builder, t *ast.Term) {
	if t == nil {
		b.WriteString("#absent")
		return
	}
	switch v := t.Value.(type) {
	case ast.Object:
		b.WriteByte('{')
		for _, k := range v.Keys() {
			writeCanonical(b, k)
			b.WriteByte(':')
			writeCanonical(b, v.Get(k))
			b.WriteByte(',')
		}
		b.WriteByte('}')
	case ast.Set:
		b.WriteString("set(")
		elems := v.Slice()
		slices.SortFunc(elems, func(a, b *ast.Term) int { return a.Value.Compare(b.Value) })
		for _, e := range elems {
			writeCanonical(b, e)
			b.WriteByte(',')
		}
		b.WriteByte(')')
	case *ast.Array:
		b.WriteByte('[')
		for i := range v.Len() {
			writeCanonical(b, v.Elem(i))
			b.WriteByte(',')
		}
		b.WriteByte(']')
	default:
		b.WriteString(v.String())
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

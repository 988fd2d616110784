package schema

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
)

// EndpointRef names an endpoint in summaries and diffs.
type EndpointRef struct {
	Method string `json:"method"`
	Path   string `json:"path"`
	Tool   string `json:"tool"`
	Risk   Risk   `json:"risk"`
}

func refOf(ep *Endpoint) EndpointRef {
	return EndpointRef{Method: ep.Method, Path: ep.Path, Tool: ep.Tool, Risk: ep.Risk}
}

// Diff is what changed in the API between two schema versions: what an
// operator wants to see after a PVE upgrade.
type Diff struct {
	Old     DiffSide         `json:"old"`
	New     DiffSide         `json:"new"`
	Added   []EndpointRef    `json:"added"`
	Removed []EndpointRef    `json:"removed"`
	Changed []EndpointChange `json:"changed"`
}

// DiffSide identifies one of the compared schemas.
type DiffSide struct {
	SHA256  string `json:"sha256"`
	Paths   int    `json:"paths"`
	Methods int    `json:"methods"`
}

// EndpointChange lists the differences of one endpoint present in both.
type EndpointChange struct {
	EndpointRef
	// Params lists parameter changes, sorted by parameter name.
	Params []ParamChange `json:"params,omitempty"`
	// Permissions says how the permission object changed, if it did.
	Permissions *ValueChange `json:"permissions,omitempty"`
	// Attributes lists other changes: risk, allowtoken, protected, proxyto.
	Attributes []AttributeChange `json:"attributes,omitempty"`
}

// ParamChange is one added, removed or changed parameter.
type ParamChange struct {
	Name   string `json:"name"`
	Change string `json:"change"` // added, removed or changed
	// Details say what changed ("optional: yes → no", "enum +x").
	Details []string `json:"details,omitempty"`
}

// ValueChange holds an old and a new value as text.
type ValueChange struct {
	Old string `json:"old"`
	New string `json:"new"`
}

// AttributeChange is a changed method attribute.
type AttributeChange struct {
	Name string `json:"name"`
	ValueChange
}

// Compare lists the endpoints added, removed and changed from old to new.
// Descriptions are not compared: only what changes how a call is made or
// who may make it.
func Compare(old, new *Registry) Diff {
	d := Diff{
		Old:     DiffSide{SHA256: old.SHA256(), Paths: old.Paths(), Methods: old.Methods()},
		New:     DiffSide{SHA256: new.SHA256(), Paths: new.Paths(), Methods: new.Methods()},
		Added:   []EndpointRef{},
		Removed: []EndpointRef{},
		Changed: []EndpointChange{},
	}
	for _, ep := range new.Endpoints() {
		prev := old.Lookup(ep.Method, ep.Path)
		if prev == nil {
			d.Added = append(d.Added, refOf(ep))
			continue
		}
		if ch, ok := compareEndpoint(prev, ep); ok {
			d.Changed = append(d.Changed, ch)
		}
	}
	for _, ep := range old.Endpoints() {
		if new.Lookup(ep.Method, ep.Path) == nil {
			d.Removed = append(d.Removed, refOf(ep))
		}
	}
	return d
}

func compareEndpoint(a, b *Endpoint) (EndpointChange, bool) {
	ch := EndpointChange{EndpointRef: refOf(b)}
	names := map[string]bool{}
	for _, p := range a.Params {
		names[p.Name] = true
	}
	for _, p := range b.Params {
		names[p.Name] = true
	}
	sorted := make([]string, 0, len(names))
	for n := range names {
		sorted = append(sorted, n)
	}
	slices.Sort(sorted)
	for _, n := range sorted {
		pa, pb := a.Param(n), b.Param(n)
		switch {
		case pa == nil:
			ch.Params = append(ch.Params, ParamChange{Name: n, Change: "added", Details: []string{pb.summary()}})
		case pb == nil:
			ch.Params = append(ch.Params, ParamChange{Name: n, Change: "removed"})
		default:
			if details := compareParam("", pa, pb); len(details) > 0 {
				ch.Params = append(ch.Params, ParamChange{Name: n, Change: "changed", Details: details})
			}
		}
	}
	if pa, pb := permText(a.Permissions), permText(b.Permissions); pa != pb {
		ch.Permissions = &ValueChange{Old: pa, New: pb}
	}
	attr := func(name, x, y string) {
		if x != y {
			ch.Attributes = append(ch.Attributes, AttributeChange{Name: name, ValueChange: ValueChange{Old: x, New: y}})
		}
	}
	attr("risk", a.Risk.String(), b.Risk.String())
	attr("allowtoken", yesNo(a.AllowToken), yesNo(b.AllowToken))
	attr("protected", yesNo(a.Protected), yesNo(b.Protected))
	attr("proxyto", a.ProxyTo, b.ProxyTo)
	attr("additional parameters", yesNo(a.AdditionalParams), yesNo(b.AdditionalParams))
	return ch, len(ch.Params) > 0 || ch.Permissions != nil || len(ch.Attributes) > 0
}

// compareParam lists the differences that matter to a caller.
func compareParam(prefix string, a, b *Param) []string {
	var out []string
	field := func(name, x, y string) {
		if x != y {
			out = append(out, fmt.Sprintf("%s%s: %s → %s", prefix, name, orNone(x), orNone(y)))
		}
	}
	field("type", a.Type, b.Type)
	field("format", a.Format, b.Format)
	field("optional", yesNo(a.Optional), yesNo(b.Optional))
	field("minimum", floatText(a.Minimum), floatText(b.Minimum))
	field("maximum", floatText(a.Maximum), floatText(b.Maximum))
	field("minLength", intText(a.MinLength), intText(b.MinLength))
	field("maxLength", intText(a.MaxLength), intText(b.MaxLength))
	field("pattern", a.Pattern, b.Pattern)
	field("default", string(a.Default), string(b.Default))
	field("requires", a.Requires, b.Requires)
	if added, removed := setDiff(a.Enum, b.Enum); len(added)+len(removed) > 0 {
		out = append(out, prefix+"enum"+signed(added, removed))
	}
	if a.Items != nil && b.Items != nil {
		out = append(out, compareParam(prefix+"items.", a.Items, b.Items)...)
	}
	out = append(out, compareProperties(prefix, a.Properties, b.Properties)...)
	return out
}

func compareProperties(prefix string, a, b *PropertyFormat) []string {
	if a == nil && b == nil {
		return nil
	}
	keysOf := func(f *PropertyFormat) []string {
		if f == nil {
			return nil
		}
		var ks []string
		for _, k := range f.Keys {
			ks = append(ks, k.Name)
		}
		return ks
	}
	var out []string
	if added, removed := setDiff(keysOf(a), keysOf(b)); len(added)+len(removed) > 0 {
		out = append(out, prefix+"property-string keys"+signed(added, removed))
	}
	if a != nil && b != nil {
		for _, kb := range b.Keys {
			if ka := a.Key(kb.Name); ka != nil {
				out = append(out, compareParam(prefix+kb.Name+".", ka, kb)...)
			}
		}
	}
	return out
}

func setDiff(a, b []string) (added, removed []string) {
	for _, x := range b {
		if !slices.Contains(a, x) {
			added = append(added, x)
		}
	}
	for _, x := range a {
		if !slices.Contains(b, x) {
			removed = append(removed, x)
		}
	}
	return added, removed
}

func signed(added, removed []string) string {
	var b strings.Builder
	for _, x := range added {
		b.WriteString(" +" + x)
	}
	for _, x := range removed {
		b.WriteString(" -" + x)
	}
	return b.String()
}

// summary is a one-line description of a parameter's type.
func (p *Param) summary() string {
	var parts []string
	parts = append(parts, orNone(p.Type))
	if p.Format != "" {
		parts = append(parts, "format "+p.Format)
	}
	if p.Properties != nil {
		parts = append(parts, "property string")
	}
	if p.Optional {
		parts = append(parts, "optional")
	} else {
		parts = append(parts, "required")
	}
	return strings.Join(parts, ", ")
}

func permText(p *Permissions) string {
	if p == nil {
		return ""
	}
	var parts []string
	if len(p.Check) > 0 {
		c := p.Check.Clone()
		if err := c.Compact(); err != nil {
			c = p.Check
		}
		parts = append(parts, "check "+string(c))
	}
	if p.User != "" {
		parts = append(parts, "user "+p.User)
	}
	if p.Description != "" && len(p.Check) == 0 && p.User == "" {
		parts = append(parts, "description only")
	}
	return strings.Join(parts, ", ")
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

func floatText(f *float64) string {
	if f == nil {
		return ""
	}
	return formatNumber(*f)
}

func intText(i *int) string {
	if i == nil {
		return ""
	}
	return strconv.Itoa(*i)
}

// WriteText renders the diff for a person reading a terminal.
func (d Diff) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "old: %d paths, %d methods (sha256 %s)\n", d.Old.Paths, d.Old.Methods, d.Old.SHA256)
	fmt.Fprintf(&b, "new: %d paths, %d methods (sha256 %s)\n", d.New.Paths, d.New.Methods, d.New.SHA256)
	fmt.Fprintf(&b, "\nadded: %d\n", len(d.Added))
	for _, e := range d.Added {
		fmt.Fprintf(&b, "  + %-6s %s  (%s, %s)\n", e.Method, e.Path, e.Tool, e.Risk)
	}
	fmt.Fprintf(&b, "\nremoved: %d\n", len(d.Removed))
	for _, e := range d.Removed {
		fmt.Fprintf(&b, "  - %-6s %s  (%s)\n", e.Method, e.Path, e.Tool)
	}
	fmt.Fprintf(&b, "\nchanged: %d\n", len(d.Changed))
	for _, c := range d.Changed {
		fmt.Fprintf(&b, "  ~ %-6s %s\n", c.Method, c.Path)
		for _, p := range c.Params {
			switch p.Change {
			case "added":
				fmt.Fprintf(&b, "      + parameter %s (%s)\n", p.Name, strings.Join(p.Details, "; "))
			case "removed":
				fmt.Fprintf(&b, "      - parameter %s\n", p.Name)
			default:
				for _, d := range p.Details {
					fmt.Fprintf(&b, "      ~ parameter %s: %s\n", p.Name, d)
				}
			}
		}
		if c.Permissions != nil {
			fmt.Fprintf(&b, "      ~ permissions: %s → %s\n", orNone(c.Permissions.Old), orNone(c.Permissions.New))
		}
		for _, a := range c.Attributes {
			fmt.Fprintf(&b, "      ~ %s: %s → %s\n", a.Name, orNone(a.Old), orNone(a.New))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

package schema

import (
	"encoding/json"
	"regexp/syntax"
	"strconv"
	"strings"
	"unicode"
)

// formatExamples are values of PVE's named formats, written as PVE's own
// documentation writes them.
var formatExamples = map[string]string{
	"pve-configid":                   "scsi0",
	"pve-storage-id":                 "local",
	"pve-bridge-id":                  "vmbr0",
	"pve-vmid":                       "100",
	"pve-node":                       "pve1",
	"mac-addr":                       "BC:24:11:2E:5D:01",
	"dns-name":                       "pve1.example.com",
	"pve-iface":                      "eth0",
	"urlencoded":                     "example",
	"ldap-simple-attr":               "uid",
	"pve-tag":                        "production",
	"pve-task-status-type":           "ok",
	"pve-groupid":                    "admins",
	"pve-roleid":                     "PVEAuditor",
	"pve-poolid":                     "production",
	"pve-realm":                      "pve",
	"pve-userid":                     "alice@pve",
	"pve-tokenid":                    "alice@pve!automation",
	"pve-volume-id":                  "local:iso/debian-13.0.0-amd64-netinst.iso",
	"pve-volume-id-or-qm-path":       "local-lvm:vm-100-disk-0",
	"pve-volume-id-or-absolute-path": "local-lvm:vm-100-disk-0",
	"disk-size":                      "32G",
	"email":                          "admin@example.com",
	"email-or-username":              "admin@example.com",
	"pve-ha-resource-id":             "vm:100",
	"pve-ha-resource-or-vm-id":       "vm:100",
	"ipv4":                           "192.0.2.10",
	"ipv6":                           "2001:db8::10",
	"ip":                             "192.0.2.10",
	"address":                        "192.0.2.10",
	"ipv4mask":                       "255.255.255.0",
	"CIDRv4":                         "192.0.2.0/24",
	"CIDRv6":                         "2001:db8::/64",
	"CIDR":                           "192.0.2.0/24",
	"pve-ipv4-config":                "dhcp",
	"pve-ipv6-config":                "auto",
	"pve-vlan-id-or-range":           "100",
	"pve-startup-order":              "order=1,up=30",
	"storage-pair":                   "local-lvm:local-zfs",
	"bridge-pair":                    "vmbr0:vmbr1",
}

// nameExamples are values of parameters whose pattern or type alone
// would give a poor example (a URL of http:// alone, a size of 1).
var nameExamples = map[string]string{
	"url":  "https://example.com/debian-13.0.0-amd64-netinst.iso",
	"size": "+1G",
}

// Example is a value of the parameter that this package's validation of
// it accepts, as PVE receives it (wire text): its default when that is
// valid, else a value of its enum, its named format, its pattern or its
// type within its bounds; a property string gets its default key and
// required keys. ok is false when no value is found (an object, which no
// call can pass as a parameter).
func (p *Param) Example() (string, bool) {
	if len(p.OneOf) > 0 {
		return p.OneOf[0].Example()
	}
	if p.Type == "array" {
		if p.Items == nil {
			return "example", true
		}
		return p.Items.Example()
	}
	for _, c := range p.exampleCandidates() {
		if p.accepts(c) {
			return c, true
		}
	}
	return "", false
}

// ExampleArg is the example as the argument of a call: a JSON member
// named name ({"memory": 512}, {"net0": "virtio,bridge=vmbr0"}), integers
// and numbers as JSON numbers, booleans as true or false, arrays as arrays.
func (p *Param) ExampleArg(name string) (string, bool) {
	ex, ok := p.Example()
	if !ok {
		return "", false
	}
	if len(p.OneOf) > 0 {
		p = p.OneOf[0]
	}
	typ := p.Type
	if typ == "array" && p.Items != nil {
		typ = p.Items.Type
	}
	var v any = ex
	switch typ {
	case "integer", "number":
		v = json.Number(ex)
	case "boolean":
		v = ex == "1"
	}
	if p.Type == "array" {
		v = []any{v}
	}
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(map[string]any{name: v}); err != nil {
		return "", false
	}
	return strings.Replace(strings.TrimSpace(b.String()), ":", ": ", 1), true
}

// accepts reports whether PVE's checks of this parameter pass for text.
func (p *Param) accepts(text string) bool {
	if _, msg := wireText(p.Type, text); msg != "" {
		return false
	}
	if constrain(p, text) != "" {
		return false
	}
	return p.Properties == nil || parsePropertyString(p.Properties, text, p.Name) == nil
}

// exampleCandidates are the values Example tries, best first.
func (p *Param) exampleCandidates() []string {
	var c []string
	if ex, ok := nameExamples[p.Name]; ok {
		c = append(c, ex)
	}
	if p.Properties != nil {
		c = append(c, p.Properties.example()...)
	}
	if p.Type == "boolean" {
		return append(c, "1", "0")
	}
	if d := strings.Trim(string(p.Default), `"`); d != "" {
		c = append(c, d)
	}
	c = append(c, p.Enum...)
	if p.Format != "" {
		base, _ := splitFormat(p.Format)
		if ex, ok := formatExamples[base]; ok {
			c = append(c, ex)
		}
	}
	if p.re != nil {
		if s, ok := patternExample(p.re.String()); ok {
			c = append(c, s)
		}
	}
	switch p.Type {
	case "integer", "number":
		c = append(c, numberCandidates(p)...)
	default:
		c = append(c, "example")
		if p.MinLength != nil {
			c = append(c, strings.Repeat("a", *p.MinLength))
		}
		c = append(c, "a", "1")
	}
	return c
}

// numberCandidates are values inside the bounds: a round value, else the
// bounds themselves.
func numberCandidates(p *Param) []string {
	var c []string
	for _, n := range []float64{1, 100, 0} {
		c = append(c, formatNumber(n))
	}
	if p.Minimum != nil {
		c = append(c, formatNumber(*p.Minimum))
	}
	if p.Maximum != nil {
		c = append(c, formatNumber(*p.Maximum))
	}
	return c
}

// example is a property string with the default key's value bare and
// every required key as key=value; a second form gives every key its
// name.
func (f *PropertyFormat) example() []string {
	var bare, named []string
	if d := f.defaultKey; d != nil {
		if ex, ok := d.Example(); ok {
			bare = append(bare, ex)
			named = append(named, d.Name+"="+ex)
		}
	}
	for _, k := range f.Keys {
		if k.Optional || k.Alias != "" || k == f.defaultKey {
			continue
		}
		if ex, ok := k.Example(); ok {
			bare = append(bare, k.Name+"="+ex)
			named = append(named, k.Name+"="+ex)
		}
	}
	if len(named) == 0 {
		// Every key is optional and none is the default: the first key
		// that has an example.
		for _, k := range f.Keys {
			if ex, ok := k.Example(); ok && k.Alias == "" {
				named = append(named, k.Name+"="+ex)
				break
			}
		}
	}
	if len(f.Keys) > 1 {
		// With several keys, the key names say what each value is.
		return []string{strings.Join(named, ","), strings.Join(bare, ",")}
	}
	return []string{strings.Join(bare, ","), strings.Join(named, ",")}
}

// patternExample is a short string the regular expression matches as a
// whole: the first alternative, the fewest repetitions, a letter or digit
// of each class where it has one.
func patternExample(expr string) (string, bool) {
	re, err := syntax.Parse(expr, syntax.Perl)
	if err != nil {
		return "", false
	}
	var b strings.Builder
	if !writeExample(&b, re.Simplify()) {
		return "", false
	}
	return b.String(), true
}

func writeExample(b *strings.Builder, re *syntax.Regexp) bool {
	switch re.Op {
	case syntax.OpLiteral:
		for _, r := range re.Rune {
			b.WriteRune(r)
		}
	case syntax.OpCharClass:
		r, ok := exampleRune(re.Rune)
		if !ok {
			return false
		}
		b.WriteRune(r)
	case syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		b.WriteByte('a')
	case syntax.OpCapture:
		return writeExample(b, re.Sub[0])
	case syntax.OpConcat:
		for _, sub := range re.Sub {
			if !writeExample(b, sub) {
				return false
			}
		}
	case syntax.OpAlternate:
		return writeExample(b, re.Sub[0])
	case syntax.OpPlus:
		return writeExample(b, re.Sub[0])
	case syntax.OpRepeat:
		for range re.Min {
			if !writeExample(b, re.Sub[0]) {
				return false
			}
		}
	case syntax.OpStar, syntax.OpQuest, syntax.OpEmptyMatch, syntax.OpBeginLine, syntax.OpEndLine,
		syntax.OpBeginText, syntax.OpEndText, syntax.OpWordBoundary, syntax.OpNoWordBoundary:
	default:
		return false
	}
	return true
}

// exampleRune picks a rune of a character class (pairs of ranges): a lower
// case letter, a digit or an upper case letter where the class has one,
// else its first printable rune.
func exampleRune(ranges []rune) (rune, bool) {
	for _, want := range []rune{'a', 'e', 'x', '1', '0', 'A', '-', '_', '.'} {
		for i := 0; i+1 < len(ranges); i += 2 {
			if ranges[i] <= want && want <= ranges[i+1] {
				return want, true
			}
		}
	}
	for i := 0; i+1 < len(ranges); i += 2 {
		for r := ranges[i]; r <= ranges[i+1] && r < ranges[i]+256; r++ {
			if unicode.IsPrint(r) && r != ' ' && r != ',' {
				return r, true
			}
		}
	}
	return 0, false
}

// exampleIndexName is the wire name of a parameter's first instance
// (net0 for net[n]).
func (p *Param) exampleIndexName() string {
	if p.Indexed {
		return p.Prefix + strconv.Itoa(0)
	}
	return p.Name
}

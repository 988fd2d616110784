package schema

import (
	"fmt"
	"regexp"
	"strings"
)

// unitRE finds the unit a PVE description gives a value ("in MiB", "In
// seconds", a rate "in KiB/s").
var unitRE = regexp.MustCompile(`(?i)\bin (MiB|GiB|KiB|TiB|MB|GB|KB|bytes|seconds|minutes|hours|days|milliseconds|percent|mbps)(/s)?\b`)

// Hint says how a value of the parameter is written, for an error that
// teaches: PVE's syntax (its typetext, else the type with its bounds or
// values), the unit its description names, and its default. For a
// property string the unit and default are those of its default key
// (memory: [current=]<integer>, in MiB).
func (p *Param) Hint() string {
	var parts []string
	parts = append(parts, "syntax "+p.syntax())
	unitOf, def := p, p
	if p.Properties != nil && p.Properties.defaultKey != nil {
		unitOf, def = p.Properties.defaultKey, p.Properties.defaultKey
	}
	if m := unitRE.FindStringSubmatch(unitOf.Description + " " + p.Description); m != nil {
		parts = append(parts, "in "+m[1]+m[2])
	}
	if d := strings.Trim(string(def.Default), `"`); d != "" {
		parts = append(parts, "default "+d)
	}
	return strings.Join(parts, ", ")
}

func (p *Param) syntax() string {
	if p.TypeText != "" {
		return p.TypeText
	}
	if len(p.Enum) > 0 {
		return "<" + strings.Join(p.Enum, " | ") + ">"
	}
	t := p.Type
	if p.Format != "" && t == "string" {
		t = p.Format
	}
	s := "<" + t + ">"
	switch {
	case p.Minimum != nil && p.Maximum != nil:
		s += fmt.Sprintf(" (%g - %g)", *p.Minimum, *p.Maximum)
	case p.Minimum != nil:
		s += fmt.Sprintf(" (%g - N)", *p.Minimum)
	case p.Maximum != nil:
		s += fmt.Sprintf(" (N - %g)", *p.Maximum)
	}
	return s
}

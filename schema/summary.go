package schema

import (
	"fmt"
	"io"
	"strings"
)

// Summary describes a registry for `schema check`.
type Summary struct {
	File     string         `json:"file,omitempty"`
	SHA256   string         `json:"sha256"`
	Size     int            `json:"size"`
	Paths    int            `json:"paths"`
	Methods  int            `json:"methods"`
	ByMethod map[string]int `json:"by_method"`
	ByRisk   map[string]int `json:"by_risk"`
	// Formats counts parameters (and property-string keys) with a named
	// format, and how many of those this package checks before PVE does.
	Formats        int `json:"formats"`
	FormatsChecked int `json:"formats_checked"`
	// Patterns counts parameters with a pattern, and how many RE2 checks.
	Patterns        int           `json:"patterns"`
	PatternsChecked int           `json:"patterns_checked"`
	Endpoints       []EndpointRef `json:"endpoints"`
}

// Summarize counts what a registry holds and lists its endpoints.
func (r *Registry) Summarize(file string) Summary {
	s := Summary{
		File: file, SHA256: r.SHA256(), Size: r.Size(), Paths: r.Paths(), Methods: r.Methods(),
		ByMethod:  map[string]int{},
		ByRisk:    map[string]int{},
		Endpoints: make([]EndpointRef, 0, r.Methods()),
	}
	var walk func(*Param)
	walk = func(p *Param) {
		if p.Format != "" {
			s.Formats++
			if FormatChecked(p.Format) {
				s.FormatsChecked++
			}
		}
		if p.Pattern != "" {
			s.Patterns++
			if p.re != nil {
				s.PatternsChecked++
			}
		}
		if p.Properties != nil {
			for _, k := range p.Properties.Keys {
				walk(k)
			}
		}
		if p.Items != nil {
			walk(p.Items)
		}
		for _, alt := range p.OneOf {
			walk(alt)
		}
	}
	for _, ep := range r.Endpoints() {
		s.ByMethod[ep.Method]++
		s.ByRisk[ep.Risk.String()]++
		s.Endpoints = append(s.Endpoints, refOf(ep))
		for _, p := range ep.Params {
			walk(p)
		}
	}
	return s
}

// WriteText renders the summary without the endpoint list.
func (s Summary) WriteText(w io.Writer) error {
	var b strings.Builder
	if s.File != "" {
		fmt.Fprintf(&b, "%s: valid Proxmox VE API schema\n", s.File)
	}
	fmt.Fprintf(&b, "  sha256    %s\n", s.SHA256)
	fmt.Fprintf(&b, "  size      %d bytes\n", s.Size)
	fmt.Fprintf(&b, "  paths     %d\n", s.Paths)
	fmt.Fprintf(&b, "  methods   %d (GET %d, POST %d, PUT %d, DELETE %d)\n", s.Methods,
		s.ByMethod["GET"], s.ByMethod["POST"], s.ByMethod["PUT"], s.ByMethod["DELETE"])
	fmt.Fprintf(&b, "  risk      read %d, write %d, destructive %d\n", s.ByRisk["read"], s.ByRisk["write"], s.ByRisk["destructive"])
	fmt.Fprintf(&b, "  formats   %d checked here of %d (PVE checks the rest)\n", s.FormatsChecked, s.Formats)
	fmt.Fprintf(&b, "  patterns  %d checked here of %d\n", s.PatternsChecked, s.Patterns)
	_, err := io.WriteString(w, b.String())
	return err
}

package schema

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// InputSchema returns the endpoint's parameters as a JSON Schema (draft
// 2020-12) object suitable as an MCP tool inputSchema: an object root,
// one property per parameter, the required ones listed, numbered keys as
// patternProperties (net0, net1, ...), and no other properties unless PVE
// accepts them. Keys are sorted, so the output is deterministic.
//
// It keeps only constructs every major MCP client accepts: no $schema,
// no $ref, no type arrays, and a pattern only when it means the same in
// ECMAScript as in PVE's Perl. The server-side Validate remains the judge;
// the schema guides the caller.
//
// Every parameter keeps its name, type and rules, and the syntax notes
// JSON Schema cannot say (a property string's syntax, the named format);
// PVE's prose is left out where it only repeats what the caller already
// has, since one tool per endpoint multiplies every byte by 646: for a
// path variable (the endpoint's path names it) and for a description
// PVE gives verbatim to CommonDescription or more parameters of the
// registry ("The cluster node name.", the digest's). proxmox_api_describe
// still gives the full text.
func (e *Endpoint) InputSchema() json.RawMessage {
	props := map[string]any{}
	patternProps := map[string]any{}
	required := []string{}
	for _, p := range e.Params {
		prose := !p.commonProse && !slices.Contains(e.PathParams, p.Name)
		if p.Indexed {
			patternProps["^"+regexp.QuoteMeta(p.Prefix)+`\d+$`] = paramSchemaWith(p, prose)
			continue
		}
		props[p.Name] = paramSchemaWith(p, prose)
		if p.Required() {
			required = append(required, p.Name)
		}
	}
	root := map[string]any{
		"type":       "object",
		"properties": props,
	}
	if len(required) > 0 {
		root["required"] = required
	}
	if len(patternProps) > 0 {
		root["patternProperties"] = patternProps
	}
	if !e.AdditionalParams {
		root["additionalProperties"] = false
	}
	return marshalCompact(root)
}

// ParamSchema is the schema InputSchema gives the parameter named name
// (a top-level parameter, not a numbered key) and whether it is required:
// the same values, numbers typed as InputSchema writes them, in a new map
// the caller may change. It is nil when the endpoint has no such
// parameter. It spares a caller that needs a few parameters' schemas the
// JSON round trip of the whole InputSchema.
func (e *Endpoint) ParamSchema(name string) (s map[string]any, required bool) {
	p := e.params[name]
	if p == nil || p.Indexed {
		return nil, false
	}
	prose := !p.commonProse && !slices.Contains(e.PathParams, p.Name)
	return paramSchemaWith(p, prose), p.Required()
}

// marshalCompact encodes without HTML escaping ("<integer>" stays readable)
// and without the trailing newline.
func marshalCompact(v any) json.RawMessage {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil { // only maps, slices, strings, numbers
		panic(fmt.Sprintf("schema: marshal JSON Schema: %v", err))
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// CommonDescription is how many parameters of a registry must carry the
// same description for InputSchema to leave it out.
const CommonDescription = 10

// paramSchema converts one PVE parameter schema.
func paramSchema(p *Param) map[string]any { return paramSchemaWith(p, true) }

// paramSchemaWith converts one PVE parameter schema, with PVE's prose in
// the description or only the syntax notes.
func paramSchemaWith(p *Param, prose bool) map[string]any {
	s := map[string]any{}
	desc := paramDescription(p, prose)
	if len(p.OneOf) > 0 {
		// SDN fabrics: the variant depends on another parameter. Describe
		// the variants; the server checks the chosen one.
		var variants []string
		for _, alt := range p.OneOf {
			variants = append(variants, fmt.Sprintf("%s=%s: %s", p.TypeProperty, strings.Join(alt.InstanceTypes, "|"), alt.typeSummary()))
		}
		desc = strings.TrimSpace(desc + " Depends on " + p.TypeProperty + ": " + strings.Join(variants, "; ") + ".")
		if t := p.OneOf[0].Type; t != "" && sameType(p.OneOf) {
			s["type"] = jsonType(t)
			if t == "array" {
				s["items"] = map[string]any{}
			}
		}
		if desc != "" {
			s["description"] = desc
		}
		return s
	}
	switch p.Type {
	case "", "any":
	default:
		s["type"] = jsonType(p.Type)
	}
	if p.Type == "array" {
		items := map[string]any{"type": "string"}
		if p.Items != nil {
			items = paramSchema(p.Items)
		}
		s["items"] = items
	}
	if len(p.Enum) > 0 {
		s["enum"] = enumValues(p)
	}
	if p.Minimum != nil && numeric(p.Type) {
		s["minimum"] = jsonNumber(*p.Minimum)
	}
	if p.Maximum != nil && numeric(p.Type) {
		s["maximum"] = jsonNumber(*p.Maximum)
	}
	if p.Type == "string" || p.Type == "" {
		if p.MaxLength != nil {
			s["maxLength"] = *p.MaxLength
		}
		if p.MinLength != nil {
			s["minLength"] = *p.MinLength
		}
		if pat, ok := p.jsonPattern(); ok {
			s["pattern"] = pat
		}
	}
	if d, ok := typedDefault(p); ok {
		s["default"] = d
	}
	if desc != "" {
		s["description"] = desc
	}
	return s
}

func sameType(ps []*Param) bool {
	for _, p := range ps {
		if p.Type != ps[0].Type {
			return false
		}
	}
	return true
}

// typeSummary is a short text of a variant's type for descriptions.
func (p *Param) typeSummary() string {
	if p.Type == "array" && p.Items != nil && p.Items.Properties != nil {
		return "array of property strings"
	}
	if p.TypeText != "" {
		return p.TypeText
	}
	return p.Type
}

// paramDescription joins PVE's description (when prose is set) with what
// the JSON Schema cannot say: the syntax of a property string or named
// format, a default that does not fit the type, and the variant condition.
func paramDescription(p *Param, prose bool) string {
	var parts []string
	if d := strings.TrimSpace(p.Description); d != "" && prose {
		parts = append(parts, d)
	}
	if p.Indexed {
		if p.IndexMax >= 0 {
			parts = append(parts, fmt.Sprintf("Keys %s0 to %s%d.", p.Prefix, p.Prefix, p.IndexMax))
		} else {
			parts = append(parts, fmt.Sprintf("Keys %s0, %s1, ...", p.Prefix, p.Prefix))
		}
	}
	switch {
	case p.Properties != nil && p.TypeText != "":
		parts = append(parts, "Property string: "+p.TypeText)
	case p.Format != "":
		parts = append(parts, "Format: "+p.Format+".")
	}
	if len(p.Default) > 0 {
		if _, ok := typedDefault(p); !ok {
			parts = append(parts, "Default: "+strings.Trim(string(p.Default), `"`)+".")
		}
	}
	if len(p.InstanceTypes) > 0 && p.TypeProperty != "" {
		parts = append(parts, fmt.Sprintf("Only when %s is %s.", p.TypeProperty, strings.Join(p.InstanceTypes, " or ")))
	}
	return strings.Join(parts, " ")
}

func jsonType(t string) string {
	switch t {
	case "integer", "number", "boolean", "array", "object", "null":
		return t
	}
	return "string"
}

func numeric(t string) bool { return t == "integer" || t == "number" }

// jsonNumber keeps integral bounds integral in the JSON output.
func jsonNumber(f float64) any {
	if f == float64(int64(f)) {
		return int64(f)
	}
	return f
}

// enumValues converts enum strings to the parameter's JSON type.
func enumValues(p *Param) []any {
	out := make([]any, 0, len(p.Enum))
	for _, v := range p.Enum {
		if numeric(p.Type) {
			if f, err := strconv.ParseFloat(v, 64); err == nil {
				out = append(out, jsonNumber(f))
				continue
			}
		}
		out = append(out, v)
	}
	return out
}

// typedDefault returns PVE's default as a JSON value of the parameter's
// type, or false when it does not fit (descriptive defaults such as
// "max(30, vm memory in GiB)" go into the description instead).
func typedDefault(p *Param) (any, bool) {
	if len(p.Default) == 0 {
		return nil, false
	}
	var v any
	if err := json.Unmarshal(p.Default, &v); err != nil {
		return nil, false
	}
	text, isScalar := scalarText(v)
	switch p.Type {
	case "boolean":
		if b, ok := v.(bool); ok {
			return b, true
		}
		if isScalar && (text == "0" || text == "1") {
			return text == "1", true
		}
	case "integer":
		if isScalar && isInteger(text) {
			n, err := strconv.ParseInt(text, 10, 64)
			return n, err == nil
		}
	case "number":
		if isScalar && isNumber(text) {
			f, err := strconv.ParseFloat(text, 64)
			return jsonNumber(f), err == nil
		}
	case "string":
		if s, ok := v.(string); ok {
			if len(p.Enum) > 0 && !slices.Contains(p.Enum, s) {
				return nil, false
			}
			return s, true
		}
	}
	return nil, false
}

// jsonPattern is the parameter's pattern for a JSON Schema: the RE2
// translation the daemon checks with, anchored as PVE anchors it, printed
// in ECMA-262 syntax (see ecmaPattern). It is false when there is no
// pattern, when RE2 cannot express it, or when ECMA-262 cannot.
func (p *Param) jsonPattern() (string, bool) {
	if p.re == nil {
		return "", false
	}
	return ecmaPattern(p.re.String())
}

// markCommonProse flags the top-level parameters whose description PVE
// gives verbatim to CommonDescription or more parameters of the registry.
func markCommonProse(endpoints []*Endpoint) {
	count := map[string]int{}
	for _, ep := range endpoints {
		for _, p := range ep.Params {
			if d := strings.TrimSpace(p.Description); d != "" {
				count[d]++
			}
		}
	}
	for _, ep := range endpoints {
		for _, p := range ep.Params {
			p.commonProse = count[strings.TrimSpace(p.Description)] >= CommonDescription
		}
	}
}

package schema

import (
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// ValidationError lists every parameter that failed verification, with
// PVE's wording, like the errors map of PVE's 400 "Parameter verification
// failed." response.
type ValidationError struct {
	// Errors maps a parameter (or param.subkey of a property string) to
	// what is wrong with it.
	Errors map[string]string
}

// Error lists the failures sorted by parameter.
func (e *ValidationError) Error() string {
	keys := make([]string, 0, len(e.Errors))
	for k := range e.Errors {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	b.WriteString("Parameter verification failed.")
	for _, k := range keys {
		fmt.Fprintf(&b, " %s: %s;", k, e.Errors[k])
	}
	return strings.TrimSuffix(b.String(), ";")
}

func (e *ValidationError) add(path, msg string) {
	if path == "" {
		path = "_root"
	}
	if prev, ok := e.Errors[path]; ok {
		e.Errors[path] = prev + "\n" + msg
		return
	}
	e.Errors[path] = msg
}

// Validate checks call arguments against the endpoint's parameters with
// PVE's semantics and returns them in wire form (what PVE receives as form
// or query values). Arguments come as decoded JSON: strings, numbers
// (float64 or json.Number), booleans and arrays. Like PVE, it rejects
// unknown parameters, missing required ones, wrong types, values out of
// range, too long or off-pattern, values outside an enum, malformed named
// formats and property strings; a JSON null counts as absent. On error
// nothing is returned.
func (e *Endpoint) Validate(args map[string]any) (url.Values, error) {
	v, err := e.Check(args)
	return v.Wire, err
}

// Validated is a call's arguments after Check: what PVE receives, and the
// same values typed as the schema says.
type Validated struct {
	// Wire is what PVE receives as form or query values. Integers are
	// written in canonical form (+05 becomes 5), booleans as 1 and 0.
	Wire url.Values
	// Values holds every argument given, by wire name, typed as its
	// parameter's schema says: booleans as bool, integers as int64 (a
	// json.Number when one does not fit), numbers as float64, strings
	// (property strings included) as string, arrays as []any of those.
	// Arguments the schema does not describe (where it allows them) are
	// strings. A JSON null, which counts as absent, is not in it.
	Values map[string]any
}

// Check validates call arguments like Validate and returns them both in
// wire form and typed: the values a policy decides on are the values PVE
// will read, whatever JSON type the caller used (1, "1" and true are one
// boolean).
func (e *Endpoint) Check(args map[string]any) (Validated, error) {
	v := &validator{ep: e, args: args, errs: &ValidationError{Errors: map[string]string{}}, out: url.Values{}, typed: make(map[string]any, len(args))}
	v.run()
	if len(v.errs.Errors) > 0 {
		return Validated{}, v.errs
	}
	return Validated{Wire: v.out, Values: v.typed}, nil
}

type validator struct {
	ep    *Endpoint
	args  map[string]any
	errs  *ValidationError
	out   url.Values
	typed map[string]any
}

func (v *validator) run() {
	for _, p := range v.ep.Params {
		if p.Indexed {
			continue
		}
		v.checkParam(p.Name, p, v.args[p.Name])
	}
	names := make([]string, 0, len(v.args))
	for name := range v.args {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		value := v.args[name]
		if p := v.ep.params[name]; p != nil && !p.Indexed {
			v.checkRequires(name, p, value)
			continue
		}
		if p, msg := v.ep.indexedParam(name); p != nil {
			v.checkParam(name, p, value)
			v.checkRequires(name, p, value)
			continue
		} else if msg != "" {
			v.errs.add(name, msg)
			continue
		}
		if v.ep.AdditionalParams {
			if value != nil {
				v.emitAny(name, value)
				if texts := v.out[name]; len(texts) == 1 {
					v.typed[name] = texts[0]
				} else if len(texts) > 1 {
					items := make([]any, len(texts))
					for i, t := range texts {
						items[i] = t
					}
					v.typed[name] = items
				}
			}
			continue
		}
		v.errs.add(name, "property is not defined in schema and the schema does not allow additional properties")
	}
}

// indexedParam resolves a wire name such as net3 to its numbered key
// net[n]. The message is non-empty when the prefix matches but the index
// is out of the range the schema states.
func (e *Endpoint) indexedParam(name string) (*Param, string) {
	for _, p := range e.indexed {
		digits, ok := strings.CutPrefix(name, p.Prefix)
		if !ok || !allDigits(digits) || (len(digits) > 1 && digits[0] == '0') {
			continue
		}
		n, err := strconv.Atoi(digits)
		if err != nil || (p.IndexMax >= 0 && n > p.IndexMax) {
			return nil, fmt.Sprintf("property is not defined in schema: %s accepts %s0 to %s%d", p.Name, p.Prefix, p.Prefix, p.IndexMax)
		}
		return p, ""
	}
	return nil, ""
}

func (v *validator) checkRequires(name string, p *Param, value any) {
	if p.Requires == "" || value == nil {
		return
	}
	if v.args[p.Requires] == nil {
		v.errs.add(p.Requires, fmt.Sprintf("missing property - '%s' requires this property", name))
	}
}

// instanceType is the value of the parameter that selects a variant.
func (v *validator) instanceType(p *Param) (string, bool) {
	if p.TypeProperty == "" {
		return "", false
	}
	s, ok := scalarText(v.args[p.TypeProperty])
	return s, ok
}

func (v *validator) checkParam(name string, p *Param, value any) {
	if len(p.OneOf) > 0 {
		it, ok := v.instanceType(p)
		if !ok {
			if value != nil {
				v.errs.add(name, fmt.Sprintf("requires '%s' to choose a variant", p.TypeProperty))
			}
			return
		}
		for _, alt := range p.OneOf {
			if slices.Contains(alt.InstanceTypes, it) {
				v.checkParam(name, alt, value)
				return
			}
		}
		if value != nil {
			v.errs.add(name, fmt.Sprintf("property is not allowed when %s is '%s'", p.TypeProperty, it))
		}
		return
	}
	if len(p.InstanceTypes) > 0 && p.TypeProperty != "" {
		it, _ := v.instanceType(p)
		if !slices.Contains(p.InstanceTypes, it) {
			if value != nil {
				v.errs.add(name, fmt.Sprintf("property is only allowed when %s is one of '%s'", p.TypeProperty, strings.Join(p.InstanceTypes, ", ")))
			}
			return
		}
	}
	if value == nil {
		if !p.Optional && p.Alias == "" {
			v.errs.add(name, "property is missing and it is not optional")
		}
		return
	}
	if p.Type == "array" {
		items, ok := value.([]any)
		if !ok {
			v.errs.add(name, "type check ('array') failed")
			return
		}
		typed := make([]any, 0, len(items))
		for i, item := range items {
			path := fmt.Sprintf("%s[%d]", name, i)
			if item == nil {
				v.errs.add(path, "array item must not be null")
				continue
			}
			text, ok := v.scalar(path, p.Items, item)
			if ok {
				v.out.Add(name, text)
				typed = append(typed, typedValue(p.Items, text))
			}
		}
		v.typed[name] = typed
		return
	}
	text, ok := v.scalar(name, p, value)
	if ok {
		v.out.Add(name, text)
		v.typed[name] = typedValue(p, text)
	}
}

// typedValue is the wire text of a checked scalar as the type its schema
// says.
func typedValue(p *Param, text string) any {
	typ := ""
	if p != nil {
		typ = p.Type
	}
	switch typ {
	case "boolean":
		return text == "1"
	case "integer":
		if n, err := strconv.ParseInt(text, 10, 64); err == nil {
			return n
		}
		return json.Number(text)
	case "number":
		if f, err := strconv.ParseFloat(text, 64); err == nil {
			return f
		}
		return json.Number(text)
	}
	return text
}

// canonicalInteger writes an integer's text as strconv does (+05 → 5);
// text too large for int64 stays as it is.
func canonicalInteger(text string) string {
	if n, err := strconv.ParseInt(text, 10, 64); err == nil {
		return strconv.FormatInt(n, 10)
	}
	return text
}

// scalar type-checks and constrains one non-array value and returns its
// wire text.
func (v *validator) scalar(path string, p *Param, value any) (string, bool) {
	if p == nil {
		p = &Param{Type: "string"}
	}
	text, msg := wireText(p.Type, value)
	if msg != "" {
		v.errs.add(path, msg)
		return "", false
	}
	if msg := constrain(p, text); msg != "" {
		v.errs.add(path, msg)
		return "", false
	}
	if p.Type == "integer" {
		text = canonicalInteger(text)
	}
	if p.Properties != nil {
		if perr := parsePropertyString(p.Properties, text, path); perr != nil {
			for k, m := range perr.Errors {
				v.errs.add(k, m)
			}
			return "", false
		}
	}
	return text, true
}

// wireText converts a JSON value to the text PVE receives, checking the
// type as PVE does. The message is PVE's type-check wording.
func wireText(typ string, value any) (string, string) {
	switch typ {
	case "boolean":
		switch x := value.(type) {
		case bool:
			return boolText(x), ""
		}
		if s, ok := scalarText(value); ok && (s == "0" || s == "1") {
			return s, ""
		}
		return "", fmt.Sprintf("type check ('boolean') failed - got '%s'", display(value))
	case "integer":
		s, ok := scalarText(value)
		if !ok || !isInteger(s) {
			return "", fmt.Sprintf("type check ('integer') failed - got '%s'", display(value))
		}
		return s, ""
	case "number":
		s, ok := scalarText(value)
		if !ok || !isNumber(s) {
			return "", fmt.Sprintf("type check ('number') failed - got '%s'", display(value))
		}
		return s, ""
	case "object", "array":
		return "", fmt.Sprintf("type check ('%s') failed", typ)
	default: // string, any, unknown: PVE does not check the text
		switch value.(type) {
		case bool, []any, map[string]any:
			return "", fmt.Sprintf("type check ('%s') failed - got %s", orString(typ), jsonKind(value))
		}
		s, _ := scalarText(value)
		return s, ""
	}
}

func orString(t string) string {
	if t == "" {
		return "string"
	}
	return t
}

// constrain applies format, pattern, length, range and enum, in PVE's order.
func constrain(p *Param, text string) string {
	if p.Format != "" && p.Properties == nil {
		if err := checkFormat(p.Format, text); err != nil {
			return "invalid format - " + err.Error()
		}
	}
	if p.re != nil && !p.re.MatchString(text) {
		return "value does not match the regex pattern"
	}
	if p.MaxLength != nil && utf8.RuneCountInString(text) > *p.MaxLength {
		return fmt.Sprintf("value may only be %d characters long", *p.MaxLength)
	}
	if p.MinLength != nil && utf8.RuneCountInString(text) < *p.MinLength {
		return fmt.Sprintf("value must be at least %d characters long", *p.MinLength)
	}
	if isNumber(text) {
		n, _ := strconv.ParseFloat(text, 64)
		if p.Maximum != nil && n > *p.Maximum {
			return fmt.Sprintf("value must have a maximum value of %s", formatNumber(*p.Maximum))
		}
		if p.Minimum != nil && n < *p.Minimum {
			return fmt.Sprintf("value must have a minimum value of %s", formatNumber(*p.Minimum))
		}
	}
	if len(p.Enum) > 0 && !slices.Contains(p.Enum, text) {
		return fmt.Sprintf("value '%s' does not have a value in the enumeration '%s'", text, strings.Join(p.Enum, ", "))
	}
	return ""
}

// scalarText renders strings and numbers as PVE would read them.
func scalarText(value any) (string, bool) {
	switch x := value.(type) {
	case string:
		return x, true
	case json.Number:
		return x.String(), true
	case float64:
		return formatNumber(x), true
	case float32:
		return formatNumber(float64(x)), true
	case int:
		return strconv.Itoa(x), true
	case int64:
		return strconv.FormatInt(x, 10), true
	case uint64:
		return strconv.FormatUint(x, 10), true
	}
	return "", false
}

func formatNumber(f float64) string {
	if f == math.Trunc(f) && math.Abs(f) < 1e15 {
		return strconv.FormatInt(int64(f), 10)
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

func display(value any) string {
	if s, ok := scalarText(value); ok {
		return s
	}
	if b, ok := value.(bool); ok {
		return strconv.FormatBool(b)
	}
	return jsonKind(value)
}

func jsonKind(value any) string {
	switch value.(type) {
	case bool:
		return "a boolean"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", value)
}

// PVE's is_integer and is_number.
var (
	reInteger = regexp.MustCompile(`^[+-]?\d+$`)
	reNumber  = regexp.MustCompile(`^[+-]?(\d+\.\d+|\d+\.|\.\d+|\d+)([eE][+-]?\d+)?$`)
)

func isInteger(s string) bool { return reInteger.MatchString(s) }
func isNumber(s string) bool  { return reNumber.MatchString(s) }

// emitAny writes a value PVE's schema does not describe, unchecked.
func (v *validator) emitAny(name string, value any) {
	if items, ok := value.([]any); ok {
		for _, item := range items {
			if s, ok := scalarText(item); ok {
				v.out.Add(name, s)
			} else if b, ok := item.(bool); ok {
				v.out.Add(name, boolText(b))
			}
		}
		return
	}
	if b, ok := value.(bool); ok {
		v.out.Add(name, boolText(b))
		return
	}
	s, _ := scalarText(value)
	v.out.Add(name, s)
}

func boolText(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

// parsePropertyString checks a comma-separated key=value string against
// its sub-key schema like PVE's parse_property_string: keys must be known,
// appear once, and a bare value goes to the default key.
func parsePropertyString(f *PropertyFormat, data, path string) *ValidationError {
	errs := &ValidationError{Errors: map[string]string{}}
	values := map[string]string{}
	for part := range strings.SplitSeq(data, ",") {
		if strings.TrimSpace(part) == "" {
			continue
		}
		key, val, hasEq := strings.Cut(part, "=")
		switch {
		case hasEq && key != "" && val != "":
			if _, dup := values[key]; dup {
				errs.add(path, fmt.Sprintf("invalid format - duplicate key in comma-separated list property: %s", key))
				return errs
			}
			sub := f.byName[key]
			if sub != nil && sub.Alias != "" {
				if sub.KeyAlias != "" {
					if _, dup := values[sub.KeyAlias]; dup {
						errs.add(path, fmt.Sprintf("invalid format - key alias '%s' is already defined", sub.KeyAlias))
						return errs
					}
					values[sub.KeyAlias] = key
				}
				key = sub.Alias
				sub = f.byName[key]
			}
			if sub == nil {
				errs.add(path, fmt.Sprintf("invalid format - invalid key in comma-separated list property: %s", key))
				return errs
			}
			if sub.Type == "boolean" {
				val = normalizeBool(val)
			}
			values[key] = val
		case !hasEq:
			if f.defaultKey == nil {
				errs.add(path, "invalid format - value without key, but schema does not define a default key")
				return errs
			}
			if _, dup := values[f.defaultKey.Name]; dup {
				errs.add(path, fmt.Sprintf("invalid format - duplicate key in comma-separated list property: %s", f.defaultKey.Name))
				return errs
			}
			values[f.defaultKey.Name] = part
		default:
			errs.add(path, "invalid format - missing key in comma-separated list property")
			return errs
		}
	}
	for _, sub := range f.Keys {
		val, ok := values[sub.Name]
		sp := path + "." + sub.Name
		if !ok {
			if !sub.Optional && sub.Alias == "" {
				errs.add(sp, "property is missing and it is not optional")
			}
			continue
		}
		if _, msg := wireText(sub.Type, val); msg != "" {
			errs.add(sp, msg)
			continue
		}
		if msg := constrain(sub, val); msg != "" {
			errs.add(sp, msg)
			continue
		}
		if sub.Requires != "" {
			if _, ok := values[sub.Requires]; !ok {
				errs.add(path+"."+sub.Requires, fmt.Sprintf("missing property - '%s' requires this property", sp))
			}
		}
	}
	if len(errs.Errors) == 0 {
		return nil
	}
	return errs
}

// normalizeBool maps PVE's spellings of booleans inside property strings
// (on/yes/true, off/no/false) to 1/0 as parse_boolean does.
func normalizeBool(v string) string {
	switch strings.ToLower(v) {
	case "1", "on", "yes", "true":
		return "1"
	case "0", "off", "no", "false":
		return "0"
	}
	return v
}

package host

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Limits of a path a request may name: Linux's PATH_MAX (with its NUL)
// and NAME_MAX.
const (
	maxPath = 4095
	maxName = 255
)

// A PathError says which field held a refused path and which rule it broke.
type PathError struct {
	Field string // the request's field, e.g. "path"
	Path  string // as the request spelled it (quoted when printed)
	Rule  string // the rule it broke, as a person reads it
}

func (e *PathError) Error() string {
	if e.Path == "" {
		return e.Field + ": " + e.Rule
	}
	return fmt.Sprintf("%s %q: %s", e.Field, e.Path, e.Rule)
}

// CleanPath checks that p is a canonical absolute path and returns it.
// Nothing is cleaned silently: a path the policy would see differently
// from what was asked is refused, naming the form that would be accepted
// where there is one.
func CleanPath(field, p string) (string, error) {
	bad := func(format string, args ...any) error {
		return &PathError{Field: field, Path: p, Rule: fmt.Sprintf(format, args...)}
	}
	switch {
	case p == "":
		return "", bad("must not be empty")
	case len(p) > maxPath:
		return "", bad("is %d bytes long; at most %d are allowed", len(p), maxPath)
	case p[0] != '/':
		return "", bad("must be absolute (start with /)")
	}
	if rule := badChars(p); rule != "" {
		return "", bad("%s", rule)
	}
	if p == "/" {
		return p, nil
	}
	if strings.HasSuffix(p, "/") {
		return "", bad("must not end with /; did you mean %q", strings.TrimRight(p, "/"))
	}
	for _, elem := range strings.Split(p[1:], "/") {
		if elem == "" {
			return "", bad("holds an empty element (//); paths are never cleaned for you")
		}
		if rule := badName(elem); rule != "" {
			return "", bad("%s", rule)
		}
	}
	return p, nil
}

// CleanName checks that name is one element of a path (a file's name in a
// directory), for the fields that take a name.
func CleanName(field, name string) (string, error) {
	bad := func(rule string) error { return &PathError{Field: field, Path: name, Rule: rule} }
	switch {
	case name == "":
		return "", bad("must not be empty")
	case strings.Contains(name, "/"):
		return "", bad("must be one name, without /")
	}
	if rule := badChars(name); rule != "" {
		return "", bad(rule)
	}
	if rule := badName(name); rule != "" {
		return "", bad(rule)
	}
	return name, nil
}

// badChars is the rule s breaks by its characters, or "".
func badChars(s string) string {
	if !utf8.ValidString(s) {
		return "must be valid UTF-8"
	}
	for i, r := range s {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return fmt.Sprintf("holds the control character %U at byte %d; names with NUL or control characters are refused", r, i)
		}
	}
	return ""
}

// badName is the rule one element of a path breaks, or "".
func badName(elem string) string {
	switch {
	case elem == "." || elem == "..":
		return fmt.Sprintf("holds the element %q; paths must be canonical (no . or ..)", elem)
	case len(elem) > maxName:
		return fmt.Sprintf("holds an element of %d bytes; at most %d are allowed", len(elem), maxName)
	}
	return ""
}

// beneath says whether p is dir or lies beneath it; both are canonical.
func beneath(p, dir string) bool {
	if dir == "/" {
		return true
	}
	return p == dir || strings.HasPrefix(p, dir) && p[len(dir)] == '/'
}

// relative is p relative to dir (which p is beneath): "." for dir itself.
func relative(p, dir string) string {
	switch {
	case p == dir:
		return "."
	case dir == "/":
		return p[1:]
	}
	return p[len(dir)+1:]
}

package schema

import (
	"fmt"
	"regexp/syntax"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// ecmaPattern rewrites an RE2 regular expression (a PVE pattern as
// perlToRE2 translated it) in the syntax that ECMA-262 reads with the u
// flag, which is how JSON Schema validators in JavaScript compile a
// pattern (Ajv, @cfworker/json-schema): identity escapes such as \_ and \@,
// which Perl and RE2 take and the u flag refuses, disappear, because the
// expression is parsed and printed again from its syntax tree.
//
// The printed expression matches exactly the strings the RE2 expression
// matches, which are the strings PVE's Perl pattern matches, with two
// differences that come from RE2 (the daemon's own check): \d, \w and \s
// are ASCII classes, and $ does not match before a final newline. It is
// also valid RE2 syntax, so Go validators read it the same. Where no such
// printing exists (multi-line anchors, no-match, a class that needs a
// surrogate code point), it reports false and the schema goes without
// the pattern; the daemon's check still applies it and PVE stays the judge.
func ecmaPattern(re2 string) (string, bool) {
	re, err := syntax.Parse(re2, syntax.Perl)
	if err != nil {
		return "", false
	}
	var b strings.Builder
	if !printECMA(&b, re) {
		return "", false
	}
	return b.String(), true
}

// printECMA writes re in ECMA-262 syntax (u flag), or reports false.
func printECMA(b *strings.Builder, re *syntax.Regexp) bool {
	switch re.Op {
	case syntax.OpEmptyMatch:
		b.WriteString("(?:)")
	case syntax.OpLiteral:
		for _, r := range re.Rune {
			if re.Flags&syntax.FoldCase != 0 && hasFold(r) {
				if !printClass(b, foldRanges(r)) {
					return false
				}
				continue
			}
			if !printLiteral(b, r) {
				return false
			}
		}
	case syntax.OpCharClass:
		return printClass(b, re.Rune)
	case syntax.OpAnyCharNotNL:
		b.WriteString(`[^\n]`)
	case syntax.OpAnyChar:
		b.WriteString(`[\s\S]`)
	case syntax.OpBeginText:
		b.WriteString("^")
	case syntax.OpEndText:
		b.WriteString("$")
	case syntax.OpWordBoundary:
		b.WriteString(`\b`)
	case syntax.OpNoWordBoundary:
		b.WriteString(`\B`)
	case syntax.OpCapture:
		b.WriteString("(")
		if !printECMA(b, re.Sub[0]) {
			return false
		}
		b.WriteString(")")
	case syntax.OpStar, syntax.OpPlus, syntax.OpQuest, syntax.OpRepeat:
		if !printAtom(b, re.Sub[0]) {
			return false
		}
		switch re.Op {
		case syntax.OpStar:
			b.WriteString("*")
		case syntax.OpPlus:
			b.WriteString("+")
		case syntax.OpQuest:
			b.WriteString("?")
		default:
			switch {
			case re.Max == -1:
				fmt.Fprintf(b, "{%d,}", re.Min)
			case re.Min == re.Max:
				fmt.Fprintf(b, "{%d}", re.Min)
			default:
				fmt.Fprintf(b, "{%d,%d}", re.Min, re.Max)
			}
		}
		if re.Flags&syntax.NonGreedy != 0 {
			b.WriteString("?")
		}
	case syntax.OpConcat:
		for _, sub := range re.Sub {
			if sub.Op == syntax.OpAlternate {
				if !printGroup(b, sub) {
					return false
				}
				continue
			}
			if !printECMA(b, sub) {
				return false
			}
		}
	case syntax.OpAlternate:
		for i, sub := range re.Sub {
			if i > 0 {
				b.WriteString("|")
			}
			if !printECMA(b, sub) {
				return false
			}
		}
	default:
		// OpNoMatch, and the multi-line anchors OpBeginLine and OpEndLine,
		// which ECMA-262 reads only with the m flag.
		return false
	}
	return true
}

// printAtom writes re as the operand of a quantifier: grouped unless it
// is one character, one class or a group already.
func printAtom(b *strings.Builder, re *syntax.Regexp) bool {
	switch {
	case re.Op == syntax.OpCharClass, re.Op == syntax.OpAnyChar, re.Op == syntax.OpAnyCharNotNL, re.Op == syntax.OpCapture:
		return printECMA(b, re)
	case re.Op == syntax.OpLiteral && len(re.Rune) == 1:
		return printECMA(b, re)
	}
	return printGroup(b, re)
}

func printGroup(b *strings.Builder, re *syntax.Regexp) bool {
	b.WriteString("(?:")
	if !printECMA(b, re) {
		return false
	}
	b.WriteString(")")
	return true
}

// ecmaSyntax are the characters that mean something outside a class; each
// is escaped with a backslash, which the u flag allows for exactly these.
const ecmaSyntax = `^$\.*+?()[]{}|/`

// printLiteral writes one character outside a class.
func printLiteral(b *strings.Builder, r rune) bool {
	if r < utf8.RuneSelf && strings.ContainsRune(ecmaSyntax, r) {
		b.WriteByte('\\')
		b.WriteRune(r)
		return true
	}
	return printRune(b, r)
}

// printRune writes a character that needs no escape for its meaning:
// controls and the Latin-1 characters that do not print as \t, \n, \v,
// \f, \r or \xHH (read the same by ECMA-262, RE2 and Python), everything
// else as itself. A
// surrogate cannot be written as itself in UTF-8 and has no escape that
// both ECMA-262 and RE2 read.
func printRune(b *strings.Builder, r rune) bool {
	switch {
	case r >= 0xD800 && r <= 0xDFFF, r > unicode.MaxRune:
		return false
	case r < 0x100 && !unicode.IsPrint(r):
		if i := strings.IndexRune("\t\n\v\f\r", r); i >= 0 {
			b.WriteByte('\\')
			b.WriteByte("tnvfr"[i])
			break
		}
		fmt.Fprintf(b, `\x%02X`, r)
	default:
		b.WriteRune(r)
	}
	return true
}

// Well-known classes printed by their short names, which mean the same
// (ASCII) in ECMA-262 with the u flag and in RE2.
var (
	classDigit = []rune{'0', '9'}
	classWord  = []rune{'0', '9', 'A', 'Z', '_', '_', 'a', 'z'}
)

// printClass writes a character class given as sorted, disjoint ranges
// (lo, hi pairs, as regexp/syntax keeps them), positively or as the
// negation of its complement, whichever is shorter.
func printClass(b *strings.Builder, ranges []rune) bool {
	if len(ranges) == 0 {
		return false // matches nothing
	}
	switch {
	case slices.Equal(ranges, classDigit):
		b.WriteString(`\d`)
		return true
	case slices.Equal(ranges, classWord):
		b.WriteString(`\w`)
		return true
	}
	comp := complement(ranges)
	if len(comp) == 0 {
		b.WriteString(`[\s\S]`)
		return true
	}
	switch {
	case slices.Equal(comp, classDigit):
		b.WriteString(`\D`)
		return true
	case slices.Equal(comp, classWord):
		b.WriteString(`\W`)
		return true
	}
	if len(ranges) == 2 && ranges[0] == ranges[1] {
		return printLiteral(b, ranges[0])
	}
	var pos, neg strings.Builder
	okPos := writeRanges(&pos, ranges)
	okNeg := writeRanges(&neg, comp)
	// The shorter form, and the one that needs no character beyond ASCII
	// (the complement of a negated class runs to U+10FFFF).
	shorter := neg.Len()+1 < pos.Len() || !isASCII(pos.String()) && isASCII(neg.String())
	switch {
	case okNeg && (!okPos || shorter):
		b.WriteString("[^")
		b.WriteString(neg.String())
	case okPos:
		b.WriteString("[")
		b.WriteString(pos.String())
	default:
		return false
	}
	b.WriteString("]")
	return true
}

// writeRanges writes the inside of a class.
func writeRanges(b *strings.Builder, ranges []rune) bool {
	for i := 0; i < len(ranges); i += 2 {
		lo, hi := ranges[i], ranges[i+1]
		if !classRune(b, lo) {
			return false
		}
		switch {
		case hi == lo:
		case hi == lo+1:
			if !classRune(b, hi) {
				return false
			}
		default:
			b.WriteByte('-')
			if !classRune(b, hi) {
				return false
			}
		}
	}
	return true
}

// classRune writes one character inside a class: the characters that
// mean something there are escaped (\- is allowed only inside a class
// with the u flag, and RE2 takes it too).
func classRune(b *strings.Builder, r rune) bool {
	if r < utf8.RuneSelf && strings.ContainsRune(`\]-[^`, r) {
		b.WriteByte('\\')
		b.WriteRune(r)
		return true
	}
	return printRune(b, r)
}

// complement returns the ranges of every code point not in ranges.
func complement(ranges []rune) []rune {
	var out []rune
	next := rune(0)
	for i := 0; i < len(ranges); i += 2 {
		if ranges[i] > next {
			out = append(out, next, ranges[i]-1)
		}
		next = ranges[i+1] + 1
	}
	if next <= unicode.MaxRune {
		out = append(out, next, unicode.MaxRune)
	}
	return out
}

// hasFold reports whether r has another case.
func hasFold(r rune) bool { return unicode.SimpleFold(r) != r }

// foldRanges is the class of r and every character it folds to.
func foldRanges(r rune) []rune {
	set := []rune{r}
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		set = append(set, f)
	}
	slices.Sort(set)
	out := make([]rune, 0, 2*len(set))
	for _, c := range set {
		out = append(out, c, c)
	}
	return out
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

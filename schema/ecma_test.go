package schema

import (
	"fmt"
	"math/rand/v2"
	"regexp"
	"regexp/syntax"
	"strings"
	"testing"
	"unicode/utf8"
)

// PVE's Perl patterns that ECMA-262 refuses with the u flag (identity
// escapes of characters that are not syntax characters) come out in a
// form it reads, meaning the same.
func TestECMAPattern(t *testing.T) {
	for _, tc := range []struct{ perl, want string }{
		// pve-configid-like names: \- and \_ inside a class.
		{`[A-Za-z][A-Za-z0-9\-\_]+`, `^[A-Za-z][\-0-9A-Z_a-z]+$`},
		// pve-userid: \@ outside a class.
		{`(?:^(?:[^\s:/]+)\@(?:[A-Za-z][A-Za-z0-9\.\-_]+)$)`, `^^[^\t\n\f\r /:]+@[A-Za-z][\-.0-9A-Z_a-z]+$$`},
		{`[a-zA-Z0-9\.\+\_][a-zA-Z0-9\.\+\_\-]+`, `^[+.0-9A-Z_a-z][+\-.0-9A-Z_a-z]+$`},
		// Perl's {,n}, as perlToRE2 writes it.
		{`a{,3}`, `^a{0,3}$`},
		// . is "anything but a newline" in Perl, RE2 and here; ECMA-262's
		// own . also refuses \r and the Unicode line separators.
		{`https?://.*`, `^https?:\/\/[^\n]*$`},
		// Case-insensitive groups have no ECMA-262 form with the u flag
		// alone: the cases are spelled out.
		{`(?i:ab)`, `^[Aa][Bb]$`},
		{`\d+\w*`, `^\d+\w*$`},
		{`[^0-9]`, `^\D$`},
		{`\0`, `^\x00$`},
		{`a|b{2}|(c)`, `^(?:a|b{2}|(c))$`},
	} {
		re, err := regexp.Compile(`^(?:` + perlToRE2(tc.perl) + `)$`)
		if err != nil {
			t.Fatalf("%s: %v", tc.perl, err)
		}
		got, ok := ecmaPattern(re.String())
		if !ok {
			t.Errorf("%s: no ECMA-262 form", tc.perl)
			continue
		}
		if got != tc.want {
			t.Errorf("%s: printed %s, want %s", tc.perl, got, tc.want)
		}
		if err := ecmaLint(got); err != nil {
			t.Errorf("%s -> %s: %v", tc.perl, got, err)
		}
		sameMatches(t, re, got, 500)
	}
}

// What has no ECMA-262 form gets no pattern.
func TestECMAPatternRefused(t *testing.T) {
	for _, re2 := range []string{`(?m)^a$`, `[^\x00-\x{10FFFF}]`} {
		if got, ok := ecmaPattern(re2); ok {
			t.Errorf("%s: printed as %s", re2, got)
		}
	}
}

// Every pattern of the real schemas has a form ECMA-262 reads with the u
// flag, and it matches what the daemon's own check matches.
func TestECMAPatternsOfPVE(t *testing.T) {
	for _, rel := range []string{pve91, pve845} {
		t.Run(rel, func(t *testing.T) {
			reg := fixtureRegistry(t, rel)
			seen := map[string]bool{}
			visitParams(reg, func(p *Param) {
				if p.re == nil || seen[p.Pattern] {
					return
				}
				seen[p.Pattern] = true
				got, ok := p.jsonPattern()
				if !ok {
					t.Errorf("pattern %q: no ECMA-262 form", p.Pattern)
					return
				}
				if err := ecmaLint(got); err != nil {
					t.Errorf("pattern %q -> %s: %v", p.Pattern, got, err)
				}
				sameMatches(t, p.re, got, 300)
			})
			if len(seen) < 30 {
				t.Errorf("only %d patterns seen", len(seen))
			}
		})
	}
}

func FuzzECMAPattern(f *testing.F) {
	for _, s := range []string{`[A-Za-z][A-Za-z0-9\-\_]+`, `(?i:k)`, `a{2,5}?b*`, `[^\s:/]+@x`, `\bfoo\B`, `.|\n`} {
		f.Add(s, "Kfoo a")
	}
	f.Fuzz(func(t *testing.T, expr, input string) {
		re, err := regexp.Compile(`^(?:` + expr + `)$`)
		if err != nil || !utf8.ValidString(input) {
			return
		}
		got, ok := ecmaPattern(re.String())
		if !ok {
			return
		}
		if err := ecmaLint(got); err != nil {
			t.Fatalf("%s -> %s: %v", expr, got, err)
		}
		back, err := regexp.Compile(got)
		if err != nil {
			t.Fatalf("%s -> %s does not compile again: %v", expr, got, err)
		}
		if re.MatchString(input) != back.MatchString(input) {
			t.Fatalf("%s -> %s: %q matches one and not the other", expr, got, input)
		}
	})
}

// sameMatches checks that the printed pattern, read back by RE2, matches
// exactly the strings re matches, over strings generated from re's own
// syntax (most of which match) and mutations of them (most of which do
// not).
func sameMatches(t *testing.T, re *regexp.Regexp, printed string, n int) {
	t.Helper()
	back, err := regexp.Compile(printed)
	if err != nil {
		t.Errorf("%s -> %s does not compile as RE2: %v", re, printed, err)
		return
	}
	tree, err := syntax.Parse(re.String(), syntax.Perl)
	if err != nil {
		t.Fatal(err)
	}
	rnd := rand.New(rand.NewPCG(1, uint64(len(printed))))
	matched := 0
	for i := range n {
		var b strings.Builder
		generate(&b, tree, rnd)
		s := b.String()
		if i%3 == 1 && len(s) > 0 { // a mutation: one character changed
			r := []rune(s)
			r[rnd.IntN(len(r))] = []rune(" -_.:/@aZ9\n\x00é")[rnd.IntN(13)]
			s = string(r)
		}
		want := re.MatchString(s)
		if want {
			matched++
		}
		if back.MatchString(s) != want {
			t.Errorf("%s -> %s: %q matches one and not the other", re, printed, s)
			return
		}
	}
	if matched == 0 {
		t.Errorf("%s: none of %d generated strings matched; the comparison says little", re, n)
	}
}

// generate writes a string that re is likely to match.
func generate(b *strings.Builder, re *syntax.Regexp, rnd *rand.Rand) {
	switch re.Op {
	case syntax.OpLiteral:
		for _, r := range re.Rune {
			b.WriteRune(r)
		}
	case syntax.OpCharClass:
		i := 2 * rnd.IntN(len(re.Rune)/2)
		lo, hi := re.Rune[i], min(re.Rune[i+1], re.Rune[i]+200)
		b.WriteRune(lo + rune(rnd.IntN(int(hi-lo)+1)))
	case syntax.OpAnyCharNotNL, syntax.OpAnyChar:
		b.WriteByte("ab-_ :/."[rnd.IntN(8)])
	case syntax.OpCapture:
		generate(b, re.Sub[0], rnd)
	case syntax.OpStar, syntax.OpPlus, syntax.OpQuest, syntax.OpRepeat:
		lo, hi := 0, 3
		switch re.Op {
		case syntax.OpPlus:
			lo = 1
		case syntax.OpQuest:
			hi = 1
		case syntax.OpRepeat:
			lo, hi = re.Min, re.Max
			if hi < 0 || hi > lo+3 {
				hi = lo + 3
			}
		}
		for range lo + rnd.IntN(hi-lo+1) {
			generate(b, re.Sub[0], rnd)
		}
	case syntax.OpConcat:
		for _, sub := range re.Sub {
			generate(b, sub, rnd)
		}
	case syntax.OpAlternate:
		generate(b, re.Sub[rnd.IntN(len(re.Sub))], rnd)
	}
}

// ecmaLint refuses what ECMA-262 refuses with the u flag among the things
// a printer could write: an identity escape of a character that is not a
// syntax character (\- only inside a class), a lone brace or bracket, an
// escape ECMA-262 does not have.
func ecmaLint(p string) error {
	inClass := false
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch {
		case c == '\\':
			if i+1 >= len(p) {
				return fmt.Errorf("a trailing backslash")
			}
			e := p[i+1]
			i++
			switch {
			case strings.IndexByte(`dDwWsSbBnrtfv`, e) >= 0:
			case e == 'x':
				if i+2 >= len(p) || !isHex(p[i+1]) || !isHex(p[i+2]) {
					return fmt.Errorf("\\x without two hex digits at %d", i)
				}
				i += 2
			case strings.IndexByte(ecmaSyntax, e) >= 0:
			case e == '-' && inClass:
			default:
				return fmt.Errorf("the escape \\%c at %d", e, i-1)
			}
		case inClass && c == ']':
			inClass = false
		case !inClass && c == '[':
			inClass = true
			if i+1 < len(p) && p[i+1] == '^' {
				i++
			}
		case !inClass && (c == ']' || c == '}'):
			return fmt.Errorf("a lone %c at %d", c, i)
		case !inClass && c == '{':
			j := strings.IndexByte(p[i:], '}')
			if j < 0 || !regexp.MustCompile(`^\{\d+(,\d*)?\}$`).MatchString(p[i:i+j+1]) {
				return fmt.Errorf("a brace that is no quantifier at %d", i)
			}
			i += j
		}
	}
	if inClass {
		return fmt.Errorf("an unclosed class")
	}
	return nil
}

func isHex(c byte) bool { return strings.IndexByte("0123456789abcdefABCDEF", c) >= 0 }

// visitParams calls f for every parameter, property-string key, array
// item and variant of every endpoint.
func visitParams(reg *Registry, f func(*Param)) {
	var visit func(p *Param)
	visit = func(p *Param) {
		if p == nil {
			return
		}
		f(p)
		visit(p.Items)
		for _, alt := range p.OneOf {
			visit(alt)
		}
		if p.Properties != nil {
			for _, k := range p.Properties.Keys {
				visit(k)
			}
		}
	}
	for _, ep := range reg.Endpoints() {
		for _, p := range ep.Params {
			visit(p)
		}
	}
}

package journal

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Text in the journal is recorded, never refused: a tool name, a path, a
// key name or an error may hold whatever bytes a caller chose, and a call
// that was answered must leave its row. What could forge or hide a line
// when the journal is read (control characters, invalid UTF-8, Unicode
// line separators and bidirectional controls) is stored escaped, so every
// value is printable text:
//
//	byte 0x00–0x1f, 0x7f, or a byte that is not UTF-8   \xNN
//	U+0080–U+009F, U+2028, U+2029, bidi controls         \uNNNN
//
// In error text and decision reasons, which are written to be read over
// several lines, newline and tab stay as they are. A backslash is stored as
// it is: an escape in a row shows what was sent when the row says so, and
// `\x00` typed as four characters reads the same (the arguments, stored as
// JSON, tell them apart).

// escapeText returns s with every character that is not printable text
// escaped; multiline keeps newlines and tabs.
func escapeText(s string, multiline bool) string {
	if !needsEscape(s, multiline) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case multiline && (r == '\n' || r == '\t'):
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		case escapedRune(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// needsEscape reports whether escapeText would change s.
func needsEscape(s string, multiline bool) bool {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if (c < 0x20 || c == 0x7f) && !(multiline && (c == '\n' || c == '\t')) {
				return true
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && size <= 1) || escapedRune(r) {
			return true
		}
		i += size
	}
	return false
}

// escapedRune: the C1 controls, the line and paragraph separators, and the
// bidirectional controls (which reorder what a terminal shows).
func escapedRune(r rune) bool {
	return unicode.In(r, unicode.Cc, unicode.Zl, unicode.Zp, unicode.Bidi_Control)
}

// fitText is s escaped and, beyond limit bytes, cut at a character with a
// note of how much was cut.
func fitText(s string, limit int, multiline bool) string {
	s = escapeText(s, multiline)
	if len(s) <= limit {
		return s
	}
	// The note for all of s is at least as long as the one written, so the
	// result stays within limit.
	cut := max(0, limit-len(fmt.Sprintf("… [%d more bytes]", len(s))))
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + fmt.Sprintf("… [%d more bytes]", len(s)-cut)
}

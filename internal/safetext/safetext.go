// Package safetext makes text that came from a system under test safe to
// show: in a condition, an event, a log line or a terminal. Targets are
// run by tenants, and a tenant's reply may carry escape sequences that
// rewrite a terminal, bidirectional overrides that make one string read as
// another, or simply more text than a status field should hold.
//
// It is a leaf package: it imports only the standard library, so drivers,
// the door, controllers and the plugin can all use one rule.
package safetext

import (
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Clean returns s with every control, format (bidi overrides, zero-width
// characters) and invalid UTF-8 rune removed, runs of white space folded to
// one space, and at most max runes kept (an ellipsis marks a cut). max <= 0
// keeps every rune.
func Clean(s string, max int) string {
	var b strings.Builder
	if max > 0 {
		b.Grow(min(len(s), 4*max+4))
	} else {
		b.Grow(len(s))
	}
	n, space := 0, false
	for i, w := 0, 0; i < len(s); i += w {
		var r rune
		r, w = utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && w <= 1:
			continue
		case unicode.IsSpace(r):
			space = n > 0
			continue
		case unsafeRune(r):
			continue
		}
		need := 1
		if space {
			need = 2
		}
		if max > 0 && n+need > max {
			b.WriteString("…")
			return b.String()
		}
		if space {
			b.WriteByte(' ')
			n++
			space = false
		}
		b.WriteRune(r)
		n++
	}
	return b.String()
}

// unsafeRune reports runes a reader cannot see or that change how other
// runes are shown: C0/C1 controls, DEL, and Unicode format characters
// (category Cf: bidi embeddings, overrides and isolates, zero-width joiners,
// the BOM), plus line and paragraph separators.
func unsafeRune(r rune) bool {
	return unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || r == '\u2028' || r == '\u2029'
}

// Printable reports whether Clean would leave s unchanged apart from
// folding white space: no control, format or invalid rune.
func Printable(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if r != ' ' && (unsafeRune(r) || unicode.IsSpace(r)) {
			return false
		}
	}
	return true
}

// Terminal returns s as it may be written to a terminal: unchanged when it
// is printable, otherwise Go-quoted so every escape shows as text
// ("\x1b[2J" instead of a cleared screen).
func Terminal(s string) string {
	if Printable(s) {
		return s
	}
	return strconv.QuoteToGraphic(s)
}

var sqlState = regexp.MustCompile(`^[0-9A-Z]{5}$`)

// SQLState returns code when it is a well-formed SQLSTATE (five digits or
// upper-case letters) and "?????" otherwise, so a hostile server can put
// neither text nor a short code where callers slice or show it.
func SQLState(code string) string {
	if sqlState.MatchString(code) {
		return code
	}
	return "?????"
}

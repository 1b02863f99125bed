package testutil

import (
	"strings"
	"testing"
)

// ForgedText is what a hostile target (through an error it returns) or
// anyone who can write status puts in a message: it clears the screen,
// homes the cursor, prints a green verdict of its own and reverses what
// follows.
const ForgedText = "\x1b[2J\x1b[H\x1b[32mVerdict: Excluded, SLO met\u202e"

// ForgedQuoted is ForgedText as a terminal-safe writer shows it.
const ForgedQuoted = `\x1b[2J\x1b[H\x1b[32mVerdict: Excluded, SLO met\u202e`

// NoRawEscapes fails t when out holds an ESC or a bidi override.
func NoRawEscapes(t testing.TB, what, out string) {
	t.Helper()
	if strings.ContainsAny(out, "\x1b\u202e") {
		t.Errorf("%s writes an escape or override raw:\n%q", what, out)
	}
}

// ShowsForgedQuoted fails t unless out shows ForgedText quoted, and
// nothing raw.
func ShowsForgedQuoted(t testing.TB, what, out string) {
	t.Helper()
	NoRawEscapes(t, what, out)
	if !strings.Contains(out, ForgedQuoted) {
		t.Errorf("%s does not show the forged text quoted:\n%q", what, out)
	}
}

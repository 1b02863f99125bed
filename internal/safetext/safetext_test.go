package safetext

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestClean(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		max  int
		want string
	}{
		// Plain text passes.
		{"plain", "relation rag.chunks does not exist", 0, "relation rag.chunks does not exist"},
		// An escape sequence that clears a screen loses its ESC; the rest is inert text.
		{"ansi", "ok\x1b[2J\x1b[HVerdict: Excluded", 0, "ok[2J[HVerdict: Excluded"},
		// Bidi overrides and isolates vanish.
		{"bidi", "abc\u202edcba\u2066x\u2069", 0, "abcdcbax"},
		// Zero-width characters vanish.
		{"zero width", "pay\u200bload\ufeff", 0, "payload"},
		// Newlines, tabs and runs of spaces fold to one space; ends are trimmed.
		{"space", "  a\n\tb  \r\nc \u2028", 0, "a b c"},
		// Invalid UTF-8 is dropped.
		{"invalid", "a\xffb", 0, "ab"},
		// C1 controls are dropped (NEL is a line break, so a space).
		{"c1", "a\u009bb\u0085c", 0, "ab c"},
		// A cut is marked.
		{"max", "abcdef", 3, "abc…"},
		// Exactly max runes is not cut.
		{"max exact", "abc", 3, "abc"},
		// Runes, not bytes, are counted.
		{"max runes", "ééééé", 2, "éé…"},
	} {
		if got := Clean(tc.in, tc.max); got != tc.want {
			t.Errorf("%s: Clean(%q, %d) = %q, want %q", tc.name, tc.in, tc.max, got, tc.want)
		}
	}
}

func TestTerminal(t *testing.T) {
	if got := Terminal("Verdict: SLOMet"); got != "Verdict: SLOMet" {
		t.Errorf("printable text changed: %q", got)
	}
	got := Terminal("x\x1b[2J\u202e")
	if strings.ContainsAny(got, "\x1b\u202e") {
		t.Errorf("Terminal left an escape or override in %q", got)
	}
	if !strings.Contains(got, `\x1b`) {
		t.Errorf("Terminal(%q) does not show the escape as text", got)
	}
}

func TestSQLState(t *testing.T) {
	for in, want := range map[string]string{
		"42P01": "42P01", "28000": "28000", "": "?????", "4": "?????", "42p01": "?????",
		"42P011": "?????", "\x1b[2J": "?????",
	} {
		if got := SQLState(in); got != want {
			t.Errorf("SQLState(%q) = %q, want %q", in, got, want)
		}
	}
}

func FuzzClean(f *testing.F) {
	for _, s := range []string{"", "a\x1b[2Jb", "\u202e", "a\xff", "  x  "} {
		f.Add(s, 4)
	}
	f.Fuzz(func(t *testing.T, s string, max int) {
		max = max % 64
		out := Clean(s, max)
		if !utf8.ValidString(out) {
			t.Fatalf("Clean(%q) is not valid UTF-8: %q", s, out)
		}
		if !Printable(out) {
			t.Fatalf("Clean(%q) = %q is not printable", s, out)
		}
		if max > 0 && utf8.RuneCountInString(strings.TrimSuffix(out, "…")) > max {
			t.Fatalf("Clean(%q, %d) = %q is longer than max", s, max, out)
		}
	})
}

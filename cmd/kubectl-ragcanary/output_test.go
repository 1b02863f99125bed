package main

import (
	"encoding/json"
	"testing"

	"github.com/ragcanary/ragcanary/internal/dev/testutil"
)

// TestJSONSafeKeepsValues: every rune a terminal acts on becomes a \u
// escape, the document decodes to the same value, and printable text
// (with the indentation's newlines) is untouched.
func TestJSONSafeKeepsValues(t *testing.T) {
	value := map[string]string{"message": "a\x1b[2J\u009b1m\u202e\u200b\U000e0001 1.2s–1.7s ✓"}
	doc, err := json.MarshalIndent(value, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got := jsonSafe(doc)
	testutil.NoRawEscapes(t, "jsonSafe", string(got))
	for _, r := range []rune{'\u009b', '\u200b', '\U000e0001'} {
		if containsRune(got, r) {
			t.Errorf("jsonSafe left %U raw: %s", r, got)
		}
	}
	var back map[string]string
	if err := json.Unmarshal(got, &back); err != nil || back["message"] != value["message"] {
		t.Fatalf("jsonSafe changed the value: %q (%v), want %q", back["message"], err, value["message"])
	}
	if plain := []byte("{\n  \"a\": \"1.2s–1.7s ✓\"\n}\n"); string(jsonSafe(plain)) != string(plain) {
		t.Errorf("jsonSafe changed printable JSON: %q", jsonSafe(plain))
	}
}

func TestTextSafeQuotesEscapes(t *testing.T) {
	got := string(textSafe([]byte("# Run\n\tmessage: \x1b[2J\u202eok\xff\n")))
	if want := "# Run\n\tmessage: \\x1b[2J\\u202eok\\xff\n"; got != want {
		t.Errorf("textSafe = %q, want %q", got, want)
	}
}

func containsRune(b []byte, r rune) bool {
	for _, x := range string(b) {
		if x == r {
			return true
		}
	}
	return false
}

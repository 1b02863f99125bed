package surface

import (
	"encoding/json"
	"reflect"
	"testing"
)

// TestPointerRFC6901Examples resolves the examples of RFC 6901 section 5.
func TestPointerRFC6901Examples(t *testing.T) {
	doc, err := decodeJSON([]byte(`{"foo": ["bar", "baz"], "": 0, "a/b": 1, "c%d": 2, "e^f": 3,
		"g|h": 4, "i\\j": 5, "k\"l": 6, " ": 7, "m~n": 8}`))
	if err != nil {
		t.Fatal(err)
	}
	for raw, want := range map[string]any{
		"/foo": []any{"bar", "baz"}, "/foo/0": "bar", "/": json.Number("0"), "/a~1b": json.Number("1"),
		"/c%d": json.Number("2"), "/e^f": json.Number("3"), "/g|h": json.Number("4"), "/i\\j": json.Number("5"),
		`/k"l`: json.Number("6"), "/ ": json.Number("7"), "/m~0n": json.Number("8"),
	} {
		p, err := parsePointer(raw)
		if err != nil {
			t.Errorf("parse %q: %v", raw, err)
			continue
		}
		got, err := p.get(doc)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("get %q = %v, %v; want %v", raw, got, err, want)
		}
	}
	whole, _ := parsePointer("")
	if got, _ := whole.get(doc); !reflect.DeepEqual(got, doc) {
		t.Errorf(`"" did not name the whole document`)
	}
}

// TestPointerNamesNothing checks what must not resolve: out of range,
// leading zeros, "-", a step into a scalar, and bad escapes.
func TestPointerNamesNothing(t *testing.T) {
	doc, _ := decodeJSON([]byte(`{"a": [1, 2], "s": "x"}`))
	for _, raw := range []string{"/a/2", "/a/01", "/a/-", "/a/x", "/s/0", "/missing", "/a/-1"} {
		p, err := parsePointer(raw)
		if err != nil {
			t.Errorf("parse %q: %v", raw, err)
			continue
		}
		if v, err := p.get(doc); err == nil {
			t.Errorf("get %q = %v, want not found", raw, v)
		}
	}
	for _, raw := range []string{"a", "/~", "/~2", "/a~"} {
		if _, err := parsePointer(raw); err == nil {
			t.Errorf("parse %q succeeded, want an error", raw)
		}
	}
}

// TestPointerMessageReadsAsDelta checks the stream reading of a citations
// pointer, escapes kept.
func TestPointerMessageReadsAsDelta(t *testing.T) {
	p, _ := parsePointer("/choices/0/message/a~1b/message")
	if got := p.withToken("message", "delta").raw; got != "/choices/0/delta/a~1b/message" {
		t.Errorf("got %q", got)
	}
}

// TestDecodeJSONRefusesTrailingData checks a reply of two documents, or
// one followed by junk, is not read as its first.
func TestDecodeJSONRefusesTrailingData(t *testing.T) {
	for _, in := range []string{`{"a":1}{"b":2}`, `{"a":1} x`, `{"a":1}}`, `[1]]`} {
		if _, err := decodeJSON([]byte(in)); err == nil {
			t.Errorf("decodeJSON(%q) succeeded", in)
		}
	}
	if _, err := decodeJSON([]byte("{\"a\":1}\n")); err != nil {
		t.Errorf("trailing newline refused: %v", err)
	}
}

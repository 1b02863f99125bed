package safetemplate

import (
	"errors"
	"strings"
	"testing"

	"github.com/ragcanary/ragcanary/internal/dev/testutil"
)

var sample = Values{"Query": "probe \"quoted\" \\ back\nslash </script>", "K": 5}

// printExpr doubles without variables or with: print of print of ...,
// 2^depth copies of .Query in one expression.
func printExpr(depth int) string {
	e := ".Query"
	for range depth {
		e = "(print " + e + " " + e + ")"
	}
	return e
}

// TestParseRefusesGrowingTemplates checks issue 37's 861-byte template and
// its with-chain twin are refused at parse, naming the field, without
// building anything large.
func TestParseRefusesGrowingTemplates(t *testing.T) {
	if n := len(testutil.DoublingTemplate(40)); n != 861 {
		t.Fatalf("the issue's template is %d bytes, want 861", n)
	}
	for _, tc := range []struct {
		name, text, want string
	}{
		{name: "issue 37, 40 doublings", text: testutil.DoublingTemplate(40), want: "spec.body: variables ($x) are not allowed"},
		{name: "with chain, 40 deep", text: testutil.WithChainTemplate(40), want: "spec.body: with is not allowed"},
		{name: "declaration", text: `{{$q := .Query}}{{json $q}}`, want: "spec.body: variables ($q) are not allowed"},
		{name: "declaration in if", text: `{{if $q := .Query}}{{end}}`, want: "spec.body: variables ($q) are not allowed"},
		{name: "root variable", text: `{{json $.Query}}`, want: "spec.body: variables ($.Query) are not allowed"},
		{name: "dot", text: `{{print .}}`, want: "spec.body: dot is not a value; name one (.K, .Query)"},
		{name: "unknown value", text: `{{json .Token}}`, want: "spec.body: unknown value .Token (the values are .K, .Query)"},
		{name: "field of a value", text: `{{.Query.Len}}`, want: "spec.body: .Query.Len: only a named value"},
		{name: "field of a result", text: `{{(print .Query).X}}`, want: "spec.body: fields of a result are not allowed"},
		{name: "range", text: `{{range 1000000000}}{{end}}`, want: "spec.body: range is not allowed"},
		{name: "define", text: `{{define "a"}}x{{end}}`, want: "spec.body: define and block are not allowed"},
		{name: "template", text: `{{template "spec.body"}}`, want: "spec.body: template is not allowed"},
		{name: "printf", text: `{{printf "%09999999d" 1}}`, want: "spec.body: function printf is not allowed"},
		{name: "call", text: `{{call .Query}}`, want: "spec.body: function call is not allowed"},
		{name: "index", text: `{{index .Query 0}}`, want: "spec.body: function index is not allowed"},
		{name: "too long", text: strings.Repeat("x", MaxText+1), want: "spec.body: the template is longer than"},
		{name: "unparseable", text: `{{json .Query}`, want: "spec.body: bad template"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			n := testutil.Allocated(func() { _, err = Parse("spec.body", tc.text, sample) })
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Parse = %v, want an error containing %q", err, tc.want)
			}
			var e *Error
			if !errors.As(err, &e) || e.Field != "spec.body" {
				t.Errorf("Parse error %#v is not an *Error naming spec.body", err)
			}
			if n > 1<<20 {
				t.Errorf("Parse allocated %d bytes, want under 1 MiB", n)
			}
		})
	}
}

// TestFunctionResultsAreBounded checks that print, json and urlquery count
// their results before building them, against one budget per render: a
// nested print that would build 2^20 copies of the query stops at
// MaxBytes, and so do many calls each under it.
func TestFunctionResultsAreBounded(t *testing.T) {
	for _, tc := range []struct {
		name, text, query string
	}{
		// 64 copies of a 4 KiB query.
		{name: "nested print", text: `{"n": {{len ` + printExpr(6) + `}}}`, query: strings.Repeat("q", 4<<10)},
		// The print is 40 KiB, its JSON six times that.
		{name: "json of a print", text: `{{json ` + printExpr(1) + `}}`, query: strings.Repeat("<", 20<<10)},
		// The print is 40 KiB, its escaping three times that.
		{name: "urlquery of a print", text: `{{urlquery ` + printExpr(1) + `}}`, query: strings.Repeat("/", 20<<10)},
		{name: "urlquery of many values", text: `{{urlquery .Query .Query .Query .Query}}`, query: strings.Repeat("/", 5<<10)},
		// Each print builds 32 KiB, under the bound; the three together do not.
		{name: "many calls under the bound", text: strings.Repeat(`{{len `+printExpr(1)+`}}`, 3), query: strings.Repeat("q", 16<<10)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var perr error
			n := testutil.Allocated(func() { _, perr = Parse("spec.body", tc.text, Values{"Query": tc.query, "K": 5}) })
			if perr == nil || !strings.Contains(perr.Error(), "would build more than 65536 bytes") {
				t.Errorf("Parse = %v, want the size refusal", perr)
			}
			if n > 1<<20 {
				t.Errorf("Parse allocated %d bytes, want under 1 MiB", n)
			}
		})
	}
}

// TestRender checks what a template renders, that escaping functions
// escape, and that a value missing or of another type is an error.
func TestRender(t *testing.T) {
	tmpl, err := Parse("Query[q]", `{{print .Query " " .K}}|{{json .Query}}|{{urlquery .Query}}|{{if eq .K 5}}five{{else}}other{{end}}`, sample)
	if err != nil {
		t.Fatal(err)
	}
	got, err := tmpl.Render(Values{"Query": `a "b"&c`, "K": 5})
	if want := `a "b"&c 5|"a \"b\"\u0026c"|a+%22b%22%26c|five`; err != nil || got != want {
		t.Errorf("Render = %q, %v; want %q", got, err, want)
	}
	if _, err := tmpl.Render(Values{"Query": "x"}); err == nil || !strings.Contains(err.Error(), "Query[q]: value .K is missing") {
		t.Errorf("Render without K = %v, want the missing value named", err)
	}
	if _, err := tmpl.Render(Values{"Query": "x", "K": 1.5}); err == nil || !strings.Contains(err.Error(), "value .K is neither a string nor an int") {
		t.Errorf("Render with a float = %v, want the type refused", err)
	}
	// The output bound holds for a value written directly, too.
	if _, err := tmpl.Render(Values{"Query": strings.Repeat("x", MaxBytes), "K": 5}); err == nil || !strings.Contains(err.Error(), "would build more than") {
		t.Errorf("Render of a huge query = %v, want the size refusal", err)
	}
}

// TestJSONStringSize checks the counted size is never below the encoded one.
func TestJSONStringSize(t *testing.T) {
	for _, s := range []string{"", "plain", `"\` + "\b\f\n\r\t\x01\x1f<>&\x7f", "é€😀", "\xff\xfe", "\u2028\u2029"} {
		b, _ := budgetFree().json(s)
		if got := jsonStringSize(s); got != len(b) {
			t.Errorf("jsonStringSize(%q) = %d, encoded %d bytes", s, got, len(b))
		}
	}
}

func budgetFree() *budget { return &budget{left: MaxBytes} }

// TestGroupValues: a group (map[string]string) is read one name at a
// time, .Group.name; a name the sample does not hold, a group read whole
// and a name deeper than one are refused at parse.
func TestGroupValues(t *testing.T) {
	sample := Values{"ID": "x", "Values": map[string]string{"org": "o"}}
	tmpl, err := Parse("path", `/orgs/{{.Values.org}}/{{.ID}}`, sample)
	if err != nil {
		t.Fatal(err)
	}
	got, err := tmpl.Render(Values{"ID": "1", "Values": map[string]string{"org": "ragcanary"}})
	if err != nil || got != "/orgs/ragcanary/1" {
		t.Errorf("Render = %q, %v", got, err)
	}
	if _, err := tmpl.Render(Values{"ID": "1", "Values": map[string]string{}}); err == nil || !strings.Contains(err.Error(), "org") {
		t.Errorf("Render without the group's name = %v, want an error naming it", err)
	}
	for text, want := range map[string]string{
		`{{.Values.nope}}`:  "unknown value .Values.nope",
		`{{json .Values}}`:  "is a group of values",
		`{{.Values.org.x}}`: "is a group of values",
	} {
		if _, err := Parse("path", text, sample); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse(%s) = %v, want %q", text, err, want)
		}
	}
}

// BenchmarkRender is one render of a typical search body.
func BenchmarkRender(b *testing.B) {
	tmpl, err := Parse("Body", `{"query": {"match": {"content": {{json .Query}}}}, "size": {{.K}}}`, sample)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := tmpl.Render(Values{"Query": "quarterly plan", "K": 5}); err != nil {
			b.Fatal(err)
		}
	}
}

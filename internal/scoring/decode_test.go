package scoring

import (
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"testing"
)

const validCase = `{"id":"q1","persona":"p","question":"?","relevant_ids":["d1"],"allowed_ids":["d1","d2"],"must_abstain":false}`

func TestDecodeCasesValid(t *testing.T) {
	// Whitespace everywhere and persona omitted on the second case.
	in := "\n [ " + validCase + " ,\n {\"id\": \"q2\", \"question\": \"?\", \"relevant_ids\": [], \"allowed_ids\": [], \"must_abstain\": true} ] \n"
	got, err := DecodeCases(strings.NewReader(in))
	if err != nil {
		t.Fatalf("DecodeCases: %v", err)
	}
	want := []Case{
		{ID: "q1", Persona: "p", Question: "?", RelevantIDs: []string{"d1"}, AllowedIDs: []string{"d1", "d2"}},
		{ID: "q2", Question: "?", RelevantIDs: []string{}, AllowedIDs: []string{}, MustAbstain: true},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
}

func TestDecodeCasesInvalid(t *testing.T) {
	tests := []struct {
		name string
		// in is the raw cases document.
		in string
		// ids are the case IDs the error must name.
		ids []string
		// msg must appear in the error text.
		msg string
	}{
		{name: "malformed json", in: `[` + validCase, ids: []string{}, msg: "malformed JSON"},
		{name: "syntax error names the element", in: `[{"id": }]`, ids: []string{}, msg: "in case #1, which starts at byte 1"},
		{name: "not an array", in: `{"id":"q1"}`, ids: []string{}, msg: "must be a JSON array, got an object"},
		{name: "top-level null", in: `null`, ids: []string{}, msg: "must be a JSON array, got null"},
		{name: "trailing data", in: `[] []`, ids: []string{}, msg: "unexpected data after"},
		{name: "element not an object", in: `[42]`, ids: []string{}, msg: "case #1: must be a JSON object, got a number"},
		{
			name: "string flag",
			in:   `[{"id":"q1","question":"?","relevant_ids":[],"allowed_ids":[],"must_abstain":"yes"}]`,
			ids:  []string{"q1"}, msg: `case "q1": field "must_abstain" must be a boolean, got a string`,
		},
		{
			name: "null list is not an empty list",
			in:   `[{"id":"q1","question":"?","relevant_ids":null,"allowed_ids":[],"must_abstain":false}]`,
			ids:  []string{"q1"}, msg: `field "relevant_ids" must be an array of strings, got null`,
		},
		{
			name: "number in id list",
			in:   `[{"id":"q1","question":"?","relevant_ids":["d1",7],"allowed_ids":[],"must_abstain":false}]`,
			ids:  []string{"q1"}, msg: "got a number at index 1",
		},
		{
			name: "typo'd field",
			in:   `[{"id":"q1","question":"?","relevant_ids":[],"allowed_id":[],"must_abstain":false}]`,
			ids:  []string{"q1"}, msg: `unknown field "allowed_id"`,
		},
		{
			// encoding/json would accept "ID" for "id"; we do not.
			name: "wrong-case field",
			in:   `[{"ID":"q1","question":"?","relevant_ids":[],"allowed_ids":[],"must_abstain":false}]`,
			ids:  []string{}, msg: `case #1: unknown field "ID"`,
		},
		{
			name: "duplicate key",
			in:   `[{"id":"q1","question":"?","relevant_ids":[],"allowed_ids":[],"must_abstain":false,"must_abstain":true}]`,
			ids:  []string{"q1"}, msg: `duplicate field "must_abstain"`,
		},
		{
			name: "missing id",
			in:   `[` + validCase + `,{"question":"?","relevant_ids":[],"allowed_ids":[],"must_abstain":false}]`,
			ids:  []string{}, msg: `case #2: missing required field "id"`,
		},
		{
			name: "empty id",
			in:   `[{"id":"","question":"?","relevant_ids":[],"allowed_ids":[],"must_abstain":false}]`,
			ids:  []string{}, msg: `case #1: field "id" must not be empty`,
		},
		{
			name: "missing must_abstain",
			in:   `[{"id":"q1","question":"?","relevant_ids":[],"allowed_ids":[]}]`,
			ids:  []string{"q1"}, msg: `missing required field "must_abstain"`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := DecodeCases(strings.NewReader(tt.in))
			var verr *ValidationError
			if !errors.As(err, &verr) {
				t.Fatalf("error = %v, want *ValidationError", err)
			}
			if got := verr.CaseIDs(); !reflect.DeepEqual(got, tt.ids) {
				t.Errorf("CaseIDs() = %q, want %q", got, tt.ids)
			}
			if !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("error %q does not contain %q", err, tt.msg)
			}
		})
	}
}

func TestDecodeResults(t *testing.T) {
	tests := []struct {
		name string
		// in is the raw results document.
		in string
		// want is the decoded value when msg is empty.
		want []Result
		// msg, when set, must appear in the error text.
		msg string
	}{
		{
			name: "valid",
			in:   `[{"id":"q1","retrieved_ids":["d1","d1"],"cited_ids":["d1"],"abstained":true}]`,
			want: []Result{{ID: "q1", RetrievedIDs: []string{"d1", "d1"}, CitedIDs: []string{"d1"}, Abstained: true}},
		},
		{
			name: "numeric flag",
			in:   `[{"id":"q1","retrieved_ids":[],"cited_ids":[],"abstained":1}]`,
			msg:  `result "q1": field "abstained" must be a boolean, got a number`,
		},
		{
			name: "id is not a string",
			in:   `[{"id":7,"retrieved_ids":[],"cited_ids":[],"abstained":false}]`,
			msg:  `result #1: field "id" must be a string, got a number`,
		},
		{
			// Every problem of the element is listed, not just the first.
			name: "several problems",
			in:   `[{"id":"q1","retrieved":[],"abstained":null}]`,
			msg:  "invalid input (4 problems)",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := DecodeResults(strings.NewReader(tt.in))
			if tt.msg == "" {
				if err != nil || !reflect.DeepEqual(got, tt.want) {
					t.Fatalf("got %+v, %v; want %+v", got, err, tt.want)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.msg) {
				t.Fatalf("error = %v, want it to contain %q", err, tt.msg)
			}
		})
	}
}

func TestValidationErrorBounded(t *testing.T) {
	var ps problems
	for i := 0; i < 30; i++ {
		ps.add(KindCase, i, "", "missing id")
	}
	msg := ps.err().Error()
	if got := strings.Count(msg, "missing id"); got != maxListedProblems {
		t.Errorf("listed %d problems, want %d", got, maxListedProblems)
	}
	if !strings.Contains(msg, "... and 10 more") {
		t.Errorf("error %q does not say how many were left off", msg)
	}
}

// FuzzDecodeCases checks that arbitrary input never panics, that every
// failure is a *ValidationError (so the CLI maps it to exit 2), and that
// accepted input satisfies the decoder's guarantees.
func FuzzDecodeCases(f *testing.F) {
	for _, seed := range []string{
		"[" + validCase + "]",
		"[]",
		"null",
		`[{"id":"q1","must_abstain":"yes"}]`,
		`[{"id":"a","id":"b"}]`,
		`[` + validCase,
		`[{"id":"q","question":"","relevant_ids":["\u0000"],"allowed_ids":[],"must_abstain":true}] x`,
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, in string) {
		cases, err := DecodeCases(strings.NewReader(in))
		if err != nil {
			var verr *ValidationError
			if !errors.As(err, &verr) || len(verr.Problems) == 0 {
				t.Fatalf("error %v is not a non-empty *ValidationError", err)
			}
			return
		}
		for _, c := range cases {
			if c.ID == "" || c.RelevantIDs == nil || c.AllowedIDs == nil {
				t.Fatalf("accepted case without id or evidence lists: %+v", c)
			}
		}
	})
}

// TestDecodeInputCap: a document longer than the cap is invalid input, and
// reading stops one byte past it; a document of exactly the cap decodes.
func TestDecodeInputCap(t *testing.T) {
	doc := `[{"id":"q1","retrieved_ids":[],"cited_ids":[],"abstained":true}]`
	limit := int64(len(doc))
	if _, err := decodeResults(strings.NewReader(doc), limit); err != nil {
		t.Fatalf("a document of exactly the cap: %v", err)
	}
	// An endless document: only a cap ends the read.
	endless := io.MultiReader(strings.NewReader(doc[:len(doc)-1]+","), infiniteSpaces{})
	counted := &countingReader{r: endless}
	_, err := decodeResults(counted, limit)
	var verr *ValidationError
	if !errors.As(err, &verr) || !strings.Contains(err.Error(), fmt.Sprintf("result list is larger than the limit of %d bytes", limit)) {
		t.Fatalf("error = %v, want the size limit", err)
	}
	if counted.n > limit+1 {
		t.Errorf("read %d bytes of an input capped at %d", counted.n, limit)
	}
	// Whitespace alone never ends either.
	if _, err := decodeCases(infiniteSpaces{}, limit); err == nil || !strings.Contains(err.Error(), "case list is larger than") {
		t.Errorf("cases past the cap: error = %v", err)
	}
	if got := byteSize(MaxInputBytes); got != "512 MiB" {
		t.Errorf("the cap renders as %q, docs/eval.md says 512 MiB", got)
	}
}

// infiniteSpaces is valid JSON whitespace without end.
type infiniteSpaces struct{}

func (infiniteSpaces) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = ' '
	}
	return len(p), nil
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

package scoring

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
)

// MaxInputBytes is the largest cases or results document DecodeCases and
// DecodeResults read; a longer one is invalid input, and reading stops one
// byte past the cap. Decoded cases take several times the space of their
// JSON, so this is what bounds memory (BenchmarkEvaluateAtInputCap). It
// leaves room for twice the documented million-case evaluation, whose cases
// file is 260 MiB.
const MaxInputBytes = 512 << 20

// DecodeCases strictly decodes a JSON array of cases. Unknown or duplicated
// keys, wrong types, null and missing required fields are all rejected so a
// typo in an export cannot silently change a score. Only "persona" is
// optional. Semantic checks (duplicate IDs, relevant ⊆ allowed, ...) are left
// to Evaluate, which runs them for every caller. At most MaxInputBytes are
// read. Errors are *ValidationError.
func DecodeCases(r io.Reader) ([]Case, error) {
	return decodeCases(r, MaxInputBytes)
}

// decodeCases is DecodeCases reading at most limit bytes.
func decodeCases(r io.Reader, limit int64) ([]Case, error) {
	var ps problems
	var cases []Case
	in := newInterner()
	err := decodeArray(r, KindCase, limit, func(i int, raw json.RawMessage) {
		o := parseObject(raw, KindCase, i, caseFields, &ps, in)
		if o == nil {
			return
		}
		cases = append(cases, Case{
			ID:          o.str("id", true),
			Persona:     in.intern(o.str("persona", false)),
			Question:    o.str("question", true),
			RelevantIDs: o.strs("relevant_ids"),
			AllowedIDs:  o.strs("allowed_ids"),
			MustAbstain: o.boolean("must_abstain"),
		})
	})
	if err != nil {
		return nil, err
	}
	if err := ps.err(); err != nil {
		return nil, err
	}
	return nonNilList(cases), nil
}

// DecodeResults strictly decodes a JSON array of results, with the same rules
// as DecodeCases; every field is required.
func DecodeResults(r io.Reader) ([]Result, error) {
	return decodeResults(r, MaxInputBytes)
}

// decodeResults is DecodeResults reading at most limit bytes.
func decodeResults(r io.Reader, limit int64) ([]Result, error) {
	var ps problems
	var results []Result
	in := newInterner()
	err := decodeArray(r, KindResult, limit, func(i int, raw json.RawMessage) {
		o := parseObject(raw, KindResult, i, resultFields, &ps, in)
		if o == nil {
			return
		}
		results = append(results, Result{
			ID:           o.str("id", true),
			RetrievedIDs: o.strs("retrieved_ids"),
			CitedIDs:     o.strs("cited_ids"),
			Abstained:    o.boolean("abstained"),
		})
	})
	if err != nil {
		return nil, err
	}
	if err := ps.err(); err != nil {
		return nil, err
	}
	return nonNilList(results), nil
}

func nonNilList[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// caseFields and resultFields list the accepted keys; the value says whether
// the key is required. Matching is exact (encoding/json alone would accept
// "ID" or "Must_Abstain" case-insensitively).
var (
	caseFields = map[string]bool{
		"id": true, "persona": false, "question": true,
		"relevant_ids": true, "allowed_ids": true, "must_abstain": true,
	}
	resultFields = map[string]bool{
		"id": true, "retrieved_ids": true, "cited_ids": true, "abstained": true,
	}
)

// errInputTooLarge is returned by capReader past its cap.
var errInputTooLarge = errors.New("input too large")

// capReader reads at most max bytes of r and fails on the next one, so an
// oversized input is an error rather than a silently truncated document.
type capReader struct {
	r   io.Reader
	max int64
	n   int64
}

func (c *capReader) Read(p []byte) (int, error) {
	if c.n > c.max {
		return 0, errInputTooLarge
	}
	// One byte past the cap tells "exactly max bytes" from "more".
	if rest := c.max + 1 - c.n; int64(len(p)) > rest {
		p = p[:rest]
	}
	n, err := c.r.Read(p)
	c.n += int64(n)
	if c.n > c.max {
		return n, errInputTooLarge
	}
	return n, err
}

// decodeArray reads exactly one top-level JSON array, handing each raw
// element to each in order, one at a time, so only the decoded values stay
// in memory. A second value after the array is rejected: a concatenated or
// half-written export should not be half-read.
func decodeArray(r io.Reader, kind Kind, limit int64, each func(i int, raw json.RawMessage)) error {
	dec := json.NewDecoder(&capReader{r: r, max: limit})
	// elem is the index of the element being decoded, -1 between elements.
	malformed := func(err error, elem int) error {
		if errors.Is(err, errInputTooLarge) {
			return inputError("%s list is larger than the limit of %s for an input file", kind, byteSize(limit))
		}
		return inputError("malformed JSON in %s list: %s", kind, describeJSONError(err, kind, elem, dec))
	}
	tok, err := dec.Token()
	if err != nil {
		return malformed(err, -1)
	}
	if d, ok := tok.(json.Delim); !ok || d != '[' {
		return inputError("%s list must be a JSON array, got %s", kind, tokenKind(tok))
	}
	for i := 0; dec.More(); i++ {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return malformed(err, i)
		}
		each(i, raw)
	}
	if _, err := dec.Token(); err != nil {
		return malformed(err, -1)
	}
	if _, err := dec.Token(); err != io.EOF {
		if errors.Is(err, errInputTooLarge) {
			return malformed(err, -1)
		}
		return inputError("malformed JSON in %s list: unexpected data after the top-level array", kind)
	}
	return nil
}

// byteSize renders a limit in MiB when it is a whole number of them.
func byteSize(n int64) string {
	if n >= 1<<20 && n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}

// tokenKind names the JSON type of a first token for error messages.
func tokenKind(tok json.Token) string {
	switch t := tok.(type) {
	case json.Delim:
		if t == '{' {
			return "an object"
		}
		return fmt.Sprintf("%q", string(t))
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case nil:
		return "null"
	default:
		return "a number"
	}
}

func inputError(format string, args ...any) error {
	var ps problems
	ps.add(KindInput, -1, "", format, args...)
	return ps.err()
}

// describeJSONError locates a syntax error so a broken export can be
// found: the decoder's own errors (a missing comma, a bad first token)
// carry their offset in the input; an error inside an element names the
// element and where it starts, because encoding/json counts that offset
// from no fixed point.
func describeJSONError(err error, kind Kind, elem int, dec *json.Decoder) string {
	var syn *json.SyntaxError
	switch {
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		return "unexpected end of input"
	case !errors.As(err, &syn):
		return err.Error()
	case elem < 0 || strings.Contains(syn.Error(), "after array element"):
		return fmt.Sprintf("%v (at byte %d)", syn, syn.Offset)
	default:
		// A failed Decode leaves the decoder where the element starts.
		return fmt.Sprintf("%v (in %s #%d, which starts at byte %d)", syn, kind, elem+1, dec.InputOffset())
	}
}

// object is one decoded JSON object whose fields are type-checked on access;
// type problems are recorded against the element, naming its ID when the ID
// itself is usable.
type object struct {
	fields map[string]json.RawMessage
	kind   Kind
	index  int
	id     string
	ps     *problems
	in     *interner
}

// parseObject splits raw into its keys, rejecting non-objects, duplicate and
// unknown keys, and missing required keys. It returns nil when raw is not an
// object at all; otherwise field accessors record any further problems.
func parseObject(raw json.RawMessage, kind Kind, index int, allowed map[string]bool, ps *problems, in *interner) *object {
	fields, dup, err := splitKeys(raw)
	if err != nil {
		ps.add(kind, index, "", "must be a JSON object, got %s", jsonKind(raw))
		return nil
	}
	o := &object{fields: fields, kind: kind, index: index, ps: ps, in: in}
	// Resolve the ID first so every later message can name the case.
	if v, ok := fields["id"]; ok {
		var id string
		if json.Unmarshal(v, &id) == nil {
			o.id = id
		}
	}
	if dup != "" {
		o.problem("duplicate field %q", dup)
	}
	// Sorted so problems come out in the same order on every run.
	for _, k := range slices.Sorted(maps.Keys(fields)) {
		if _, ok := allowed[k]; !ok {
			o.problem("unknown field %q", k)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(allowed)) {
		if _, ok := fields[k]; allowed[k] && !ok {
			o.problem("missing required field %q", k)
		}
	}
	return o
}

// splitKeys returns the top-level members of a JSON object and the first
// duplicated key, if any (encoding/json would silently keep the last one).
func splitKeys(raw json.RawMessage) (map[string]json.RawMessage, string, error) {
	if len(raw) == 0 || raw[0] != '{' {
		return nil, "", errors.New("not an object")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if _, err := dec.Token(); err != nil {
		return nil, "", err
	}
	fields := map[string]json.RawMessage{}
	dup := ""
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, "", err
		}
		key, _ := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, "", err
		}
		if _, seen := fields[key]; seen && dup == "" {
			dup = key
		}
		fields[key] = v
	}
	return fields, dup, nil
}

func (o *object) problem(format string, args ...any) {
	o.ps.add(o.kind, o.index, o.id, format, args...)
}

// str returns a string field; an absent optional field is "". A missing
// required field was already reported by parseObject.
func (o *object) str(key string, required bool) string {
	v, ok := o.fields[key]
	if !ok {
		return ""
	}
	var s string
	if v[0] != '"' || json.Unmarshal(v, &s) != nil {
		o.problem("field %q must be a string, got %s", key, jsonKind(v))
		return ""
	}
	if required && s == "" {
		o.problem("field %q must not be empty", key)
	}
	return s
}

// strs returns a list-of-strings field. null is rejected rather than read as
// an empty list: "no evidence" must be written as [].
func (o *object) strs(key string) []string {
	v, ok := o.fields[key]
	if !ok {
		return nil
	}
	var out []string
	if v[0] != '[' || json.Unmarshal(v, &out) != nil {
		o.problem("field %q must be an array of strings, got %s", key, describeArray(v))
		return nil
	}
	for i, s := range out {
		out[i] = o.in.intern(s)
	}
	return out
}

// interner shares one copy of each repeated string. Evidence IDs and
// persona names repeat across many cases, and one string per occurrence is
// most of a decoded export's memory. It stops adding after maxInterned
// distinct strings, so an export of all-distinct IDs costs little extra.
type interner map[string]string

const maxInterned = 1 << 20

func newInterner() *interner {
	in := interner{}
	return &in
}

func (in *interner) intern(s string) string {
	if c, ok := (*in)[s]; ok {
		return c
	}
	if len(*in) < maxInterned {
		(*in)[s] = s
	}
	return s
}

// boolean returns a boolean field; "yes", 1 and null are all rejected.
func (o *object) boolean(key string) bool {
	v, ok := o.fields[key]
	if !ok {
		return false
	}
	var b bool
	if (v[0] != 't' && v[0] != 'f') || json.Unmarshal(v, &b) != nil {
		o.problem("field %q must be a boolean, got %s", key, jsonKind(v))
		return false
	}
	return b
}

// jsonKind names the JSON type of a raw value for error messages.
func jsonKind(v json.RawMessage) string {
	v = bytes.TrimSpace(v)
	if len(v) == 0 {
		return "nothing"
	}
	switch v[0] {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	default:
		return "a number"
	}
}

// describeArray explains why a value is not an array of strings.
func describeArray(v json.RawMessage) string {
	if v[0] != '[' {
		return jsonKind(v)
	}
	var elems []json.RawMessage
	if json.Unmarshal(v, &elems) == nil {
		for i, e := range elems {
			if len(e) == 0 || e[0] != '"' {
				return fmt.Sprintf("%s at index %d", jsonKind(e), i)
			}
		}
	}
	return "an invalid array"
}

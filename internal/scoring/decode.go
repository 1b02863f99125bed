package scoring

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"unsafe"
)

// MaxInputBytes is the largest cases or results document the decoders read;
// a longer one is invalid input, and reading stops one byte past the cap.
// Decoding streams element by element, so memory is bounded by what is kept
// per case, not by the file; the cap leaves room for twice the documented
// million-case evaluation, whose cases file is 260 MiB.
const MaxInputBytes = 512 << 20

// DecodeCases strictly decodes a JSON array of v1 cases. Unknown or
// duplicated keys, wrong types, null and missing required fields are all
// rejected so a typo in an export cannot silently change a score. Only
// "persona" is optional; a v2 case (one with "expected") is refused — use a
// Session for files that may hold either. Semantic checks are left to the
// engine. At most MaxInputBytes are read. Errors are *ValidationError.
func DecodeCases(r io.Reader) ([]Case, error) {
	return decodeCases(r, MaxInputBytes)
}

// decodeCases is DecodeCases reading at most limit bytes.
func decodeCases(r io.Reader, limit int64) ([]Case, error) {
	var ps problems
	cases := []Case{}
	err := decodeCaseStream(r, limit, true, &ps, func(i int, v1 *Case, v2 *CaseV2) {
		if v2 != nil {
			ps.add(KindCase, i, v2.ID, "is a v2 case (it has \"expected\"); this reader takes v1 cases only")
			return
		}
		cases = append(cases, *v1)
	})
	if err == nil {
		err = ps.err()
	}
	if err != nil {
		return nil, err
	}
	return cases, nil
}

// DecodeResults strictly decodes a JSON array of v1 results, with the same
// rules as DecodeCases; every field is required.
func DecodeResults(r io.Reader) ([]Result, error) {
	return decodeResults(r, MaxInputBytes)
}

// decodeResults is DecodeResults reading at most limit bytes.
func decodeResults(r io.Reader, limit int64) ([]Result, error) {
	var ps problems
	results := []Result{}
	err := decodeResultStream(r, limit, false, &ps, func(i int, v1 *Result, v2 *ResultV2) {
		if v2 != nil {
			ps.add(KindResult, i, v2.ID, "is a v2 result (it has no \"abstained\"); this reader takes v1 results only")
			return
		}
		results = append(results, *v1)
	})
	if err == nil {
		err = ps.err()
	}
	if err != nil {
		return nil, err
	}
	return results, nil
}

// ReadCases streams a JSON array of cases, v1 and v2 alike (told apart per
// case: a v2 case has "expected"), into the session. It returns the
// decoding problems — malformed JSON, unknown, duplicate or missing fields,
// wrong types — as a *ValidationError; semantic problems surface at Finish.
func (s *Session) ReadCases(r io.Reader) error {
	var ps problems
	s.reserve(r)
	err := decodeCaseStream(r, MaxInputBytes, false, &ps, func(i int, v1 *Case, v2 *CaseV2) {
		if v1 != nil {
			s.AddCaseV1(*v1)
		} else {
			s.addCase(v2)
		}
	})
	if err != nil {
		return err
	}
	return ps.err()
}

// ReadResults streams a JSON array of results, v1 and v2 alike (a v1 result
// has "abstained"), scoring each as it arrives. Errors as ReadCases.
func (s *Session) ReadResults(r io.Reader) error {
	var ps problems
	// Transient: each result is scored and dropped before the next.
	err := decodeResultStream(r, MaxInputBytes, true, &ps, func(i int, v1 *Result, v2 *ResultV2) {
		if v1 != nil {
			s.AddResult(v1.V2())
		} else {
			s.AddResult(*v2)
		}
	})
	if err != nil {
		return err
	}
	return ps.err()
}

// bytesPerCaseHint is a small case's size in a cases file: a file's size
// divided by it sizes the ID index up front, so a large file neither
// rehashes the index as it grows nor re-copies the case list.
const bytesPerCaseHint = 192

// reserve sizes the session for the cases a file of r's size holds, when r
// says its size (an *os.File does) and no case has been added yet.
func (s *Session) reserve(r io.Reader) {
	st, ok := r.(interface{ Stat() (os.FileInfo, error) })
	if !ok || len(s.cases) > 0 {
		return
	}
	fi, err := st.Stat()
	if err != nil || !fi.Mode().IsRegular() || fi.Size() > MaxInputBytes {
		return
	}
	n := int(fi.Size() / bytesPerCaseHint)
	if n < 1024 {
		return
	}
	s.index = make(map[string]int, n)
	s.cases = make([]caseRec, 0, n)
}

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

// arrayDecoder walks one top-level JSON array element by element. Element
// problems are collected (with the element's ID once known); malformed JSON
// stops decoding and is returned.
type arrayDecoder struct {
	s     *scanner
	kind  Kind
	limit int64
	ps    *problems
	in    interner
	// text holds the decoded strings. With transient, an element's strings
	// and lists are only valid until the next element: they are reused, so
	// a result scored on arrival costs no allocation.
	text      arena
	transient bool
	lists     [][]string
	nLists    int
	// The element being decoded.
	index int
	start int64
	msgs  []string
}

func newArrayDecoder(r io.Reader, kind Kind, limit int64, ps *problems) *arrayDecoder {
	return &arrayDecoder{s: newScanner(&capReader{r: r, max: limit}), kind: kind, limit: limit, ps: ps, in: interner{}, index: -1}
}

// arena holds decoded strings in large chunks, so a string costs a copy
// rather than an allocation. Bytes once written are never changed unless
// the arena is reset (transient decoding), so the strings stay valid.
type arena struct {
	chunk []byte
}

const arenaChunk = 256 << 10

func (a *arena) str(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	if cap(a.chunk)-len(a.chunk) < len(b) {
		a.chunk = make([]byte, 0, max(arenaChunk, len(b)))
	}
	start := len(a.chunk)
	a.chunk = append(a.chunk, b...)
	return unsafe.String(&a.chunk[start], len(b))
}

// reset reuses the current chunk; every string handed out so far may be
// overwritten.
func (a *arena) reset() { a.chunk = a.chunk[:0] }

// run decodes the array, calling elem for each element that is an object.
func (d *arrayDecoder) run(elem func() error) error {
	c, err := d.s.peek()
	if err != nil {
		return d.malformed(err)
	}
	if c != '[' {
		k, err := d.s.kind()
		if err != nil {
			return d.malformed(err)
		}
		return inputError("%s list must be a JSON array, got %s", d.kind, k)
	}
	d.s.pos++
	for first := true; ; first = false {
		ok, err := d.s.more(']', first)
		if err != nil {
			return d.malformed(err)
		}
		if !ok {
			break
		}
		d.index++
		d.start = d.s.offset()
		if d.transient {
			d.text.reset()
			d.nLists = 0
		}
		if c, _ := d.s.peek(); c != '{' {
			k, err := d.s.kind()
			if err == nil {
				err = d.s.skip()
			}
			if err != nil {
				return d.malformed(err)
			}
			d.ps.add(d.kind, d.index, "", "must be a JSON object, got %s", k)
			continue
		}
		if err := elem(); err != nil {
			return d.malformed(err)
		}
	}
	d.index = -1
	if _, err := d.s.peek(); err == nil {
		return inputError("malformed JSON in %s list: unexpected data after the top-level array", d.kind)
	} else if !errors.Is(err, errEOF) {
		return d.malformed(err)
	}
	return nil
}

// malformed describes a fatal decoding error, locating it.
func (d *arrayDecoder) malformed(err error) error {
	if errors.Is(err, errInputTooLarge) {
		return inputError("%s list is larger than the limit of %s for an input file", d.kind, byteSize(d.limit))
	}
	var syn *errSyntax
	if errors.As(err, &syn) && d.index >= 0 {
		return inputError("malformed JSON in %s list: %s (in %s #%d, which starts at byte %d)", d.kind, syn.msg, d.kind, d.index+1, d.start)
	}
	return inputError("malformed JSON in %s list: %v", d.kind, err)
}

// problem records a problem of the current element; flush names its ID.
func (d *arrayDecoder) problem(format string, args ...any) {
	d.msgs = append(d.msgs, fmt.Sprintf(format, args...))
}

func (d *arrayDecoder) flush(id string) {
	for _, m := range d.msgs {
		*d.ps = append(*d.ps, Problem{Kind: d.kind, Index: d.index, ID: strings.Clone(id), Message: m})
	}
	d.msgs = d.msgs[:0]
}

// object walks the members of one object whose known keys are names,
// calling field for each known key; key i sets bit i of the returned mask.
// Unknown keys (reported with prefix) are skipped, duplicates reported.
func (d *arrayDecoder) object(prefix string, names []string, field func(name string) error) (uint32, error) {
	if err := d.s.consume('{'); err != nil {
		return 0, err
	}
	var seen uint32
	for first := true; ; first = false {
		ok, err := d.s.more('}', first)
		if err != nil || !ok {
			return seen, err
		}
		key, err := d.s.str()
		if err != nil {
			return seen, err
		}
		i := slices.IndexFunc(names, func(n string) bool { return n == string(key) })
		switch {
		case i < 0:
			d.problem("unknown field %q", prefix+string(key))
		case seen&(1<<i) != 0:
			d.problem("duplicate field %q", prefix+names[i])
		}
		if err := d.s.consume(':'); err != nil {
			return seen, err
		}
		if i < 0 {
			if err := d.s.skip(); err != nil {
				return seen, err
			}
			continue
		}
		seen |= 1 << i
		if err := field(names[i]); err != nil {
			return seen, err
		}
	}
}

// wrongType records a type problem and skips the value.
func (d *arrayDecoder) wrongType(field, want string) error {
	k, err := d.s.kind()
	if err != nil {
		return err
	}
	d.problem("field %q must be %s, got %s", field, want, k)
	return d.s.skip()
}

// str reads a string field; intern shares repeated values.
func (d *arrayDecoder) str(field string, intern bool) (string, error) {
	v, _, err := d.strOK(field, intern)
	return v, err
}

// strOK is str that also says whether the value was a string at all (a
// wrong type is recorded as a problem, not returned as an error).
func (d *arrayDecoder) strOK(field string, intern bool) (string, bool, error) {
	if c, err := d.s.peek(); err != nil || c != '"' {
		if err != nil {
			return "", false, err
		}
		return "", false, d.wrongType(field, "a string")
	}
	b, err := d.s.str()
	if err != nil {
		return "", false, err
	}
	if intern {
		return d.in.intern(b), true, nil
	}
	return d.text.str(b), true, nil
}

// emptyStr reads a string field without keeping it, reporting whether it
// was the empty string (a wrong type is recorded as a problem).
func (d *arrayDecoder) emptyStr(field string) (bool, error) {
	if c, err := d.s.peek(); err != nil || c != '"' {
		if err != nil {
			return false, err
		}
		return false, d.wrongType(field, "a string")
	}
	b, err := d.s.str()
	return err == nil && len(b) == 0, err
}

// strs reads a list of strings. null is rejected rather than read as an
// empty list: "no evidence" must be written as []. The result is non-nil
// when the value was an array of strings.
func (d *arrayDecoder) strs(field string) ([]string, error) {
	if c, err := d.s.peek(); err != nil || c != '[' {
		if err != nil {
			return nil, err
		}
		return nil, d.wrongType(field, "an array of strings")
	}
	d.s.pos++
	out := d.list()
	for i, first := 0, true; ; i, first = i+1, false {
		ok, err := d.s.more(']', first)
		if err != nil {
			return nil, err
		}
		if !ok {
			return d.keepList(out), nil
		}
		c, err := d.s.peek()
		if err != nil {
			return nil, err
		}
		if c != '"' {
			k, err := d.s.kind()
			if err != nil {
				return nil, err
			}
			d.problem("field %q must be an array of strings, got %s at index %d", field, k, i)
			// Skip the rest of the array.
			if err := d.s.skip(); err != nil {
				return nil, err
			}
			for {
				ok, err := d.s.more(']', false)
				if err != nil || !ok {
					return nil, err
				}
				if err := d.s.skip(); err != nil {
					return nil, err
				}
			}
		}
		b, err := d.s.str()
		if err != nil {
			return nil, err
		}
		out = append(out, d.text.str(b))
	}
}

// list returns an empty list to fill: with transient decoding, one reused
// per list of the element.
func (d *arrayDecoder) list() []string {
	if !d.transient {
		if d.lists == nil {
			d.lists = [][]string{nil}
		}
		return d.lists[0][:0]
	}
	if d.nLists == len(d.lists) {
		d.lists = append(d.lists, make([]string, 0, 16))
	}
	d.nLists++
	return d.lists[d.nLists-1][:0]
}

// keepList finishes a list: transient lists are kept for reuse, others
// copied to an exactly sized slice (the scratch stays for the next one).
func (d *arrayDecoder) keepList(out []string) []string {
	if d.transient {
		d.lists[d.nLists-1] = out
		return out
	}
	d.lists[0] = out
	kept := make([]string, len(out))
	copy(kept, out)
	return kept
}

// sets reads a list of lists of strings (required_any_of).
func (d *arrayDecoder) sets(field string) ([][]string, error) {
	if c, err := d.s.peek(); err != nil || c != '[' {
		if err != nil {
			return nil, err
		}
		return nil, d.wrongType(field, "an array of arrays of strings")
	}
	d.s.pos++
	out := [][]string{}
	for i, first := 0, true; ; i, first = i+1, false {
		ok, err := d.s.more(']', first)
		if err != nil || !ok {
			return out, err
		}
		set, err := d.strs(fmt.Sprintf("%s[%d]", field, i))
		if err != nil {
			return nil, err
		}
		out = append(out, set)
	}
}

// boolean reads a boolean field; "yes", 1 and null are all rejected.
func (d *arrayDecoder) boolean(field string) (bool, error) {
	if c, err := d.s.peek(); err != nil || (c != 't' && c != 'f') {
		if err != nil {
			return false, err
		}
		return false, d.wrongType(field, "a boolean")
	}
	w, err := d.s.literal()
	return w == "true", err
}

// number reads a number field; nil when it was not a number.
func (d *arrayDecoder) number(field string) (*float64, error) {
	if c, err := d.s.peek(); err != nil || !(c == '-' || (c >= '0' && c <= '9')) {
		if err != nil {
			return nil, err
		}
		return nil, d.wrongType(field, "a number")
	}
	v, err := d.s.number()
	return &v, err
}

// required records the required fields an element lacks, in sorted order.
func (d *arrayDecoder) required(present map[string]bool, names ...string) {
	slices.Sort(names)
	for _, n := range names {
		if !present[n] {
			d.problem("missing required field %q", n)
		}
	}
}

// byteSize renders a limit in MiB when it is a whole number of them.
func byteSize(n int64) string {
	if n >= 1<<20 && n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}

func inputError(format string, args ...any) error {
	var ps problems
	ps.add(KindInput, -1, "", format, args...)
	return ps.err()
}

// interner shares one copy of each repeated string. Evidence IDs and
// persona names repeat across many cases, and one string per occurrence is
// most of a decoded export's memory. It stops adding after maxInterned
// distinct strings, so an export of all-distinct IDs costs little extra.
type interner map[string]string

const maxInterned = 1 << 20

// intern returns a shared copy of b; the lookup does not allocate.
func (in interner) intern(b []byte) string {
	if c, ok := in[string(b)]; ok {
		return c
	}
	s := string(b)
	if len(in) < maxInterned {
		in[s] = s
	}
	return s
}

// DecodeCasesV2 strictly decodes a JSON array of cases, v1 or v2 per case,
// mapping v1 cases onto the v2 model. Errors are *ValidationError.
func DecodeCasesV2(r io.Reader) ([]CaseV2, error) {
	var ps problems
	cases := []CaseV2{}
	err := decodeCaseStream(r, MaxInputBytes, true, &ps, func(i int, v1 *Case, v2 *CaseV2) {
		if v1 != nil {
			cases = append(cases, v1.V2())
			return
		}
		cases = append(cases, *v2)
	})
	if err == nil {
		err = ps.err()
	}
	if err != nil {
		return nil, err
	}
	return cases, nil
}

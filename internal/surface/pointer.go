package surface

import "github.com/ragcanary/ragcanary/internal/jsonpointer"

// pointer is a parsed RFC 6901 JSON pointer (internal/jsonpointer) and
// how a message names it.
type pointer struct {
	// raw is the pointer as written, for messages only.
	raw string
	p   jsonpointer.Pointer
}

// parsePointer parses an RFC 6901 pointer.
func parsePointer(raw string) (pointer, error) {
	p, err := jsonpointer.Parse(raw)
	if err != nil {
		return pointer{}, err
	}
	return pointer{raw: raw, p: p}, nil
}

// errNotFound says the pointer names nothing in the document.
var errNotFound = jsonpointer.ErrNotFound

// get resolves p in doc, a value decoded by decodeJSON.
func (p pointer) get(doc any) (any, error) { return p.p.Get(doc) }

// withToken returns p with its first token equal to from replaced by to.
func (p pointer) withToken(from, to string) pointer {
	q := p.p.WithToken(from, to)
	if q.String() == p.p.String() {
		return p
	}
	return pointer{raw: q.String(), p: q}
}

// decodeJSON decodes one JSON document, numbers kept as json.Number;
// trailing data is an error.
func decodeJSON(data []byte) (any, error) { return jsonpointer.Decode(data) }

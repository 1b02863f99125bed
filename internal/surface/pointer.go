package surface

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"strings"
)

// pointer is a parsed RFC 6901 JSON pointer. The empty pointer is the whole
// document.
type pointer struct {
	// raw is the pointer as written, for messages only.
	raw    string
	tokens []string
}

// parsePointer parses an RFC 6901 pointer: "" or "/"-separated reference
// tokens in which "~1" is "/" and "~0" is "~"; any other "~" is an error.
func parsePointer(raw string) (pointer, error) {
	if raw == "" {
		return pointer{}, nil
	}
	if !strings.HasPrefix(raw, "/") {
		return pointer{}, errors.New(`a JSON pointer is "" or starts with "/"`)
	}
	parts := strings.Split(raw[1:], "/")
	for i, p := range parts {
		t, err := unescapeToken(p)
		if err != nil {
			return pointer{}, err
		}
		parts[i] = t
	}
	return pointer{raw: raw, tokens: parts}, nil
}

func unescapeToken(t string) (string, error) {
	if !strings.Contains(t, "~") {
		return t, nil
	}
	var b strings.Builder
	for i := 0; i < len(t); i++ {
		if t[i] != '~' {
			b.WriteByte(t[i])
			continue
		}
		if i+1 == len(t) || (t[i+1] != '0' && t[i+1] != '1') {
			return "", errors.New(`"~" in a JSON pointer must be "~0" or "~1"`)
		}
		if t[i+1] == '0' {
			b.WriteByte('~')
		} else {
			b.WriteByte('/')
		}
		i++
	}
	return b.String(), nil
}

// errNotFound says the pointer names nothing in the document.
var errNotFound = errors.New("not found")

// get resolves p in doc, a value decoded by decodeJSON.
func (p pointer) get(doc any) (any, error) {
	cur := doc
	for _, t := range p.tokens {
		switch v := cur.(type) {
		case map[string]any:
			next, ok := v[t]
			if !ok {
				return nil, errNotFound
			}
			cur = next
		case []any:
			i, ok := arrayIndex(t, len(v))
			if !ok {
				return nil, errNotFound
			}
			cur = v[i]
		default:
			return nil, errNotFound
		}
	}
	return cur, nil
}

// arrayIndex reads an RFC 6901 array index: digits without a leading zero.
// "-" (past the end) names nothing when reading.
func arrayIndex(t string, n int) (int, bool) {
	if t == "" || (len(t) > 1 && t[0] == '0') {
		return 0, false
	}
	for _, c := range t {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	i, err := strconv.Atoi(t)
	if err != nil || i >= n {
		return 0, false
	}
	return i, true
}

// withToken returns p with its first token equal to from replaced by to;
// p unchanged when it has none.
func (p pointer) withToken(from, to string) pointer {
	for i, t := range p.tokens {
		if t == from {
			tokens := append([]string(nil), p.tokens...)
			tokens[i] = to
			return pointer{raw: joinPointer(tokens), tokens: tokens}
		}
	}
	return p
}

func joinPointer(tokens []string) string {
	var b strings.Builder
	for _, t := range tokens {
		b.WriteByte('/')
		b.WriteString(strings.NewReplacer("~", "~0", "/", "~1").Replace(t))
	}
	return b.String()
}

// decodeJSON decodes one JSON document, numbers kept as json.Number so an
// id like 12345678901234567890 keeps its digits. Trailing data is an error:
// a reply with two documents is not one we understand.
func decodeJSON(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("trailing data after the JSON document")
	}
	return v, nil
}

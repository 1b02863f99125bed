// Package jsonpointer reads RFC 6901 JSON pointers out of decoded JSON
// replies. It is a leaf: the REST source's captures use it, and it holds
// nothing but parsing and lookup.
package jsonpointer

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"strings"
)

// Pointer is a parsed RFC 6901 JSON pointer. The zero Pointer (from "")
// is the whole document.
type Pointer struct {
	raw    string
	tokens []string
}

// String is the pointer as written.
func (p Pointer) String() string { return p.raw }

// Parse parses "" or "/"-separated reference tokens in which "~1" is "/"
// and "~0" is "~"; any other "~" is an error.
func Parse(raw string) (Pointer, error) {
	if raw == "" {
		return Pointer{}, nil
	}
	if !strings.HasPrefix(raw, "/") {
		return Pointer{}, errors.New(`a JSON pointer is "" or starts with "/"`)
	}
	parts := strings.Split(raw[1:], "/")
	for i, p := range parts {
		t, err := unescapeToken(p)
		if err != nil {
			return Pointer{}, err
		}
		parts[i] = t
	}
	return Pointer{raw: raw, tokens: parts}, nil
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

// ErrNotFound says the pointer names nothing in the document.
var ErrNotFound = errors.New("not found")

// Get resolves p in doc, a value decoded by Decode.
func (p Pointer) Get(doc any) (any, error) {
	cur := doc
	for _, t := range p.tokens {
		switch v := cur.(type) {
		case map[string]any:
			next, ok := v[t]
			if !ok {
				return nil, ErrNotFound
			}
			cur = next
		case []any:
			i, ok := arrayIndex(t, len(v))
			if !ok {
				return nil, ErrNotFound
			}
			cur = v[i]
		default:
			return nil, ErrNotFound
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

// Decode decodes one JSON document, numbers kept as json.Number so an id
// like 12345678901234567890 keeps its digits. Trailing data is an error.
func Decode(data []byte) (any, error) {
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

// WithToken returns p with its first token equal to from replaced by to;
// p unchanged when it has none.
func (p Pointer) WithToken(from, to string) Pointer {
	for i, t := range p.tokens {
		if t == from {
			tokens := append([]string(nil), p.tokens...)
			tokens[i] = to
			return Pointer{raw: join(tokens), tokens: tokens}
		}
	}
	return p
}

func join(tokens []string) string {
	var b strings.Builder
	for _, t := range tokens {
		b.WriteByte('/')
		b.WriteString(strings.NewReplacer("~", "~0", "/", "~1").Replace(t))
	}
	return b.String()
}

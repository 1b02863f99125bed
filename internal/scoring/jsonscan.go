package scoring

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// scanner is a strict, streaming JSON tokenizer over a reader. It exists for
// speed: encoding/json's Decoder builds a RawMessage per element and then
// re-parses it, which dominated evaluation time. Strings are returned as
// slices into the buffer, valid until the next call, so repeated evidence
// IDs can be interned without allocating.
type scanner struct {
	r    io.Reader
	buf  []byte
	pos  int
	end  int
	base int64 // input offset of buf[0]
	eof  bool
	rerr error
	// esc is scratch for strings with escapes.
	esc []byte
}

// errSyntax is a malformed document; the message says where.
type errSyntax struct {
	msg string
	off int64
}

func (e *errSyntax) Error() string { return fmt.Sprintf("%s (at byte %d)", e.msg, e.off) }

// errEOF is an unexpected end of input.
var errEOF = errors.New("unexpected end of input")

func newScanner(r io.Reader) *scanner {
	return &scanner{r: r, buf: make([]byte, 256<<10)}
}

// offset is the input offset of the next unread byte.
func (s *scanner) offset() int64 { return s.base + int64(s.pos) }

func (s *scanner) syntax(format string, args ...any) error {
	return &errSyntax{msg: fmt.Sprintf(format, args...), off: s.offset()}
}

// fill reads more input, keeping buf[pos:end]; false at end of input or on
// a read error (kept in rerr).
func (s *scanner) fill() bool {
	if s.eof {
		return false
	}
	if s.pos > 0 {
		n := copy(s.buf, s.buf[s.pos:s.end])
		s.base += int64(s.pos)
		s.end, s.pos = n, 0
	}
	if s.end == len(s.buf) {
		// One token is longer than the buffer: grow it.
		s.buf = append(s.buf, make([]byte, len(s.buf))...)
	}
	for {
		n, err := s.r.Read(s.buf[s.end:])
		s.end += n
		if err != nil {
			s.eof = true
			if err != io.EOF {
				s.rerr = err
			}
			return n > 0
		}
		if n > 0 {
			return true
		}
	}
}

// fail turns an end of input into the read error when there was one.
func (s *scanner) fail(err error) error {
	if s.rerr != nil {
		return s.rerr
	}
	return err
}

// peek skips whitespace and returns the next byte without consuming it.
func (s *scanner) peek() (byte, error) {
	if s.pos < s.end {
		if c := s.buf[s.pos]; c > ' ' {
			return c, nil
		}
	}
	for {
		for s.pos < s.end {
			switch c := s.buf[s.pos]; c {
			case ' ', '\t', '\n', '\r':
				s.pos++
			default:
				return c, nil
			}
		}
		if !s.fill() {
			return 0, s.fail(errEOF)
		}
	}
}

// consume reads the next non-space byte, which must be c.
func (s *scanner) consume(c byte) error {
	got, err := s.peek()
	if err != nil {
		return err
	}
	if got != c {
		return s.syntax("invalid character %q, expected %q", got, c)
	}
	s.pos++
	return nil
}

// more is called after '[' or '{' (first=true) or after an element: it
// consumes a ',' and returns true when another element follows, consumes
// the closing delimiter and returns false otherwise.
func (s *scanner) more(closing byte, first bool) (bool, error) {
	c, err := s.peek()
	if err != nil {
		return false, err
	}
	if c == closing {
		s.pos++
		return false, nil
	}
	if first {
		return true, nil
	}
	if c != ',' {
		return false, s.syntax("invalid character %q after %s element", c, containerName(closing))
	}
	s.pos++
	if c, err = s.peek(); err != nil {
		return false, err
	}
	if c == closing {
		return false, s.syntax("invalid character %q after ','", c)
	}
	return true, nil
}

func containerName(closing byte) string {
	if closing == ']' {
		return "array"
	}
	return "object"
}

// plainByte marks the string bytes that need no attention: printable
// ASCII other than the quote and the backslash.
var plainByte = func() (t [256]bool) {
	for c := 0x20; c < 0x80; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// str reads a string token; the slice is valid until the next call.
func (s *scanner) str() ([]byte, error) {
	if s.pos < s.end && s.buf[s.pos] == '"' {
		s.pos++
	} else if err := s.consume('"'); err != nil {
		return nil, err
	}
	start := s.pos // first byte after the quote
	// Fast path: plain ASCII up to a closing quote already in the buffer.
	i := start
	for i < s.end && plainByte[s.buf[i]] {
		i++
	}
	if i < s.end && s.buf[i] == '"' {
		s.pos = i + 1
		return s.buf[start:i], nil
	}
	i = start
	escaped, wide := false, false
	for {
		if i >= s.end {
			off := i - start
			s.pos = start
			if !s.fill() {
				return nil, s.fail(errEOF)
			}
			start = s.pos
			i = start + off
			continue
		}
		c := s.buf[i]
		switch {
		case c == '"':
			raw := s.buf[start:i]
			s.pos = i + 1
			if escaped {
				return s.unescape(raw, start)
			}
			if wide && !utf8.Valid(raw) {
				// encoding/json's behaviour: invalid bytes become U+FFFD.
				s.esc = append(s.esc[:0], []byte(string([]rune(string(raw))))...)
				return s.esc, nil
			}
			return raw, nil
		case c == '\\':
			escaped = true
			i += 2
		case c < 0x20:
			s.pos = i
			return nil, s.syntax("invalid character %q in string literal", c)
		default:
			wide = wide || c >= 0x80
			i++
		}
	}
}

// unescape decodes a string body holding backslash escapes into s.esc.
func (s *scanner) unescape(raw []byte, start int) ([]byte, error) {
	out := s.esc[:0]
	for i := 0; i < len(raw); {
		c := raw[i]
		if c != '\\' {
			out = append(out, c)
			i++
			continue
		}
		if i+1 >= len(raw) {
			return nil, &errSyntax{"invalid escape in string literal", s.base + int64(start+i)}
		}
		switch e := raw[i+1]; e {
		case '"', '\\', '/':
			out = append(out, e)
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r, n := decodeU(raw[i:])
			if n == 0 {
				return nil, &errSyntax{"invalid \\u escape in string literal", s.base + int64(start+i)}
			}
			out = utf8.AppendRune(out, r)
			i += n
			continue
		default:
			return nil, &errSyntax{fmt.Sprintf("invalid escape %q in string literal", e), s.base + int64(start+i)}
		}
		i += 2
	}
	if !utf8.Valid(out) {
		out = []byte(string([]rune(string(out))))
	}
	s.esc = out
	return out, nil
}

// decodeU decodes \uXXXX (and a following low surrogate) at the start of b;
// n is the bytes used, 0 when malformed. A lone surrogate becomes U+FFFD.
func decodeU(b []byte) (rune, int) {
	hex4 := func(b []byte) (rune, bool) {
		if len(b) < 6 || b[0] != '\\' || b[1] != 'u' {
			return 0, false
		}
		v, err := strconv.ParseUint(string(b[2:6]), 16, 16)
		return rune(v), err == nil
	}
	r, ok := hex4(b)
	if !ok {
		return 0, 0
	}
	if utf16.IsSurrogate(r) {
		if r2, ok := hex4(b[6:]); ok {
			if d := utf16.DecodeRune(r, r2); d != utf8.RuneError {
				return d, 12
			}
		}
		return utf8.RuneError, 6
	}
	return r, 6
}

// literal reads true, false or null.
func (s *scanner) literal() (string, error) {
	c, err := s.peek()
	if err != nil {
		return "", err
	}
	var word string
	switch c {
	case 't':
		word = "true"
	case 'f':
		word = "false"
	case 'n':
		word = "null"
	default:
		return "", s.syntax("invalid character %q looking for beginning of value", c)
	}
	for s.end-s.pos < len(word) {
		if !s.fill() {
			return "", s.fail(errEOF)
		}
	}
	if string(s.buf[s.pos:s.pos+len(word)]) != word {
		return "", s.syntax("invalid character in literal %s", word)
	}
	s.pos += len(word)
	return word, nil
}

// number reads a JSON number, checking its grammar strictly.
func (s *scanner) number() (float64, error) {
	if _, err := s.peek(); err != nil {
		return 0, err
	}
	start := s.pos
	i := start
	for {
		if i >= s.end {
			off := i - start
			s.pos = start
			if !s.fill() {
				// A number may end the input only at top level, which is
				// never valid here anyway.
				return 0, s.fail(errEOF)
			}
			start = s.pos
			i = start + off
			continue
		}
		c := s.buf[i]
		if (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E' {
			i++
			continue
		}
		break
	}
	tok := s.buf[start:i]
	if !validNumber(tok) {
		return 0, s.syntax("invalid number literal %q", tok)
	}
	s.pos = i
	v, err := strconv.ParseFloat(string(tok), 64)
	if err != nil {
		return 0, s.syntax("number %s out of range", tok)
	}
	return v, nil
}

// validNumber is the JSON number grammar:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func validNumber(b []byte) bool {
	i := 0
	digits := func() int {
		n := 0
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
			n++
		}
		return n
	}
	if i < len(b) && b[i] == '-' {
		i++
	}
	if i < len(b) && b[i] == '0' {
		i++
	} else if digits() == 0 {
		return false
	}
	if i < len(b) && b[i] == '.' {
		i++
		if digits() == 0 {
			return false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if digits() == 0 {
			return false
		}
	}
	return i == len(b)
}

// kind names the JSON type of the next value without consuming it.
func (s *scanner) kind() (string, error) {
	c, err := s.peek()
	if err != nil {
		return "", err
	}
	switch {
	case c == '{':
		return "an object", nil
	case c == '[':
		return "an array", nil
	case c == '"':
		return "a string", nil
	case c == 't' || c == 'f':
		return "a boolean", nil
	case c == 'n':
		return "null", nil
	case c == '-' || (c >= '0' && c <= '9'):
		return "a number", nil
	default:
		return "", s.syntax("invalid character %q looking for beginning of value", c)
	}
}

// skip reads and discards one value of any type.
func (s *scanner) skip() error {
	c, err := s.peek()
	if err != nil {
		return err
	}
	switch {
	case c == '{':
		s.pos++
		for first := true; ; first = false {
			ok, err := s.more('}', first)
			if err != nil || !ok {
				return err
			}
			if _, err := s.str(); err != nil {
				return err
			}
			if err := s.consume(':'); err != nil {
				return err
			}
			if err := s.skip(); err != nil {
				return err
			}
		}
	case c == '[':
		s.pos++
		for first := true; ; first = false {
			ok, err := s.more(']', first)
			if err != nil || !ok {
				return err
			}
			if err := s.skip(); err != nil {
				return err
			}
		}
	case c == '"':
		_, err := s.str()
		return err
	case c == '-' || (c >= '0' && c <= '9'):
		_, err := s.number()
		return err
	default:
		_, err := s.literal()
		return err
	}
}

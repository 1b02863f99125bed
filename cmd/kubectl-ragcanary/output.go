package main

import (
	"bytes"
	"fmt"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/ragcanary/ragcanary/internal/safetext"
)

// Text for people goes through cli.Fprintf, which quotes what came from
// objects. Whole documents (-o json, a report on standard output) are
// written at once; these make every rune in them that a terminal would act
// on inert, keeping the line structure.

// jsonSafe rewrites such runes in a JSON document as \u escapes: the
// document's values are unchanged. encoding/json escapes C0 controls itself
// but leaves C1 controls (U+009B is a CSI on some terminals) and bidi
// overrides raw.
func jsonSafe(doc []byte) []byte {
	return escapeUnsafe(doc, func(b *bytes.Buffer, r rune, _ byte) {
		if r == utf8.RuneError {
			b.WriteString(`\ufffd`)
			return
		}
		if r1, r2 := utf16.EncodeRune(r); r1 != utf8.RuneError {
			fmt.Fprintf(b, `\u%04x\u%04x`, r1, r2)
			return
		}
		fmt.Fprintf(b, `\u%04x`, r)
	})
}

// textSafe rewrites such runes in a text document (a Markdown or HTML
// report) as their Go escapes, "\x1b" for an ESC.
func textSafe(doc []byte) []byte {
	return escapeUnsafe(doc, func(b *bytes.Buffer, r rune, invalid byte) {
		if r == utf8.RuneError {
			fmt.Fprintf(b, `\x%02x`, invalid)
			return
		}
		q := strconv.QuoteRuneToGraphic(r)
		b.WriteString(q[1 : len(q)-1])
	})
}

// escapeUnsafe copies doc, passing each rune that is not a newline, a tab
// or printable by safetext's rule to escape. An invalid byte is passed as
// utf8.RuneError with the byte.
func escapeUnsafe(doc []byte, escape func(b *bytes.Buffer, r rune, invalid byte)) []byte {
	var b bytes.Buffer
	b.Grow(len(doc))
	for len(doc) > 0 {
		r, w := utf8.DecodeRune(doc)
		switch {
		case r == utf8.RuneError && w == 1:
			escape(&b, r, doc[0])
		case r == '\n' || r == '\t' || safetext.Printable(string(r)):
			b.Write(doc[:w])
		default:
			escape(&b, r, 0)
		}
		doc = doc[w:]
	}
	return b.Bytes()
}

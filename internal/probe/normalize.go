package probe

import (
	"bytes"
	"errors"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/cases"
	"golang.org/x/text/transform"
	"golang.org/x/text/unicode/norm"
)

// Normalize reduces text to what a reader would call its letters and
// digits: compatibility forms folded (NFKC: full-width, ligatures,
// mathematical letters), case folded, and everything else dropped —
// spaces, hyphens, markdown emphasis, zero-width and other format runes.
// A model that re-styles a quoted term (upper-cases it, breaks it into
// groups, bolds half of it) still quotes it after normalisation.
//
// Canary terms are lower-case letters and digits (see the controllers'
// token), so Normalize leaves them unchanged and matching compares them
// with normalised answer text. Normalize builds the whole normalised
// text, which NFKC can make eleven times longer than a reply (U+FDFA is 3
// bytes and becomes 33): target text is matched by quoted instead, a
// window at a time.
func Normalize(s string) string {
	folded := cases.Fold().String(norm.NFKC.String(s))
	return strings.Map(letterOrDigit, folded)
}

func letterOrDigit(r rune) rune {
	if unicode.IsLetter(r) || unicode.IsDigit(r) {
		return r
	}
	return -1
}

// quoted reports, for each term, whether text quotes it after
// normalisation (see Normalize). Each term is normalised too, so a payload
// written by an older build in another alphabet is matched by the same
// rule; a term that normalises to nothing is never quoted (every text
// would contain it).
//
// The text is normalised a chunk at a time into a fixed buffer, and the
// scan stops once every term is found. A term across a chunk boundary is
// found in the joint: the last bytes of what came before, as many as the
// longest term's less one, followed by as many of the chunk's first. Any
// occurrence not wholly inside one chunk starts within those last bytes
// and ends within those first ones, so the joint holds it whole.
func quoted(text string, terms ...string) []bool {
	found := make([]bool, len(terms))
	wanted := make([][]byte, len(terms))
	keep := 0
	for i, t := range terms {
		wanted[i] = []byte(Normalize(t))
		keep = max(keep, len(wanted[i])-1)
	}
	if allFound(found, wanted) {
		return found
	}
	carry := make([]byte, 0, 2*keep)
	joint := make([]byte, 0, 2*keep)
	scan := func(chunk []byte) bool {
		joint = append(append(joint[:0], carry...), chunk[:min(len(chunk), keep)]...)
		for i, w := range wanted {
			if !found[i] && len(w) > 0 {
				found[i] = bytes.Contains(joint, w) || bytes.Contains(chunk, w)
			}
		}
		carry = lastBytes(append(carry, chunk[max(len(chunk)-keep, 0):]...), keep)
		return !allFound(found, wanted)
	}
	if !normalizedChunks(text, scan) {
		// The stream refused this text (it never has): normalise it
		// whole rather than report a term absent unread.
		whole := []byte(Normalize(text))
		for i, w := range wanted {
			found[i] = len(w) > 0 && bytes.Contains(whole, w)
		}
	}
	return found
}

// allFound reports whether every term that can be quoted was found.
func allFound(found []bool, wanted [][]byte) bool {
	for i, w := range wanted {
		if !found[i] && len(w) > 0 {
			return false
		}
	}
	return true
}

// lastBytes is the last n bytes of b, moved to its start.
func lastBytes(b []byte, n int) []byte {
	if len(b) <= n {
		return b
	}
	copy(b, b[len(b)-n:])
	return b[:n]
}

// textQuotes reports whether text quotes term after normalisation.
func textQuotes(text, term string) bool { return quoted(text, term)[0] }

// normalizer is Normalize as a stream: NFKC a segment at a time (norm.Iter),
// case folding a batch of segments at a time, then dropping all but
// letters and digits, in fixed buffers. Pooled: a detection allocates
// none of it. (norm's Transformer is not used: it allocates a reorder
// buffer on every call, about twice the input's size in all.)
type normalizer struct {
	iter    norm.Iter
	fold    cases.Caser
	folded  [4 << 10]byte
	pending []byte
}

// foldBatch is how many NFKC bytes are folded at once.
const foldBatch = 4 << 10

var normalizers = sync.Pool{New: func() any {
	return &normalizer{fold: cases.Fold(), pending: make([]byte, 0, 2*foldBatch)}
}}

// normalizedChunks hands Normalize(text) to each in successive chunks, in
// order, until each returns false or the text ends; a chunk is valid only
// during the call. It reports false when folding could not go on (it made
// no progress): the chunks handed out so far were correct, the rest was
// not handed out.
func normalizedChunks(text string, each func(chunk []byte) bool) bool {
	n := normalizers.Get().(*normalizer)
	defer normalizers.Put(n)
	n.fold.Reset()
	n.iter.InitString(norm.NFKC, text)
	pending := n.pending[:0]
	for !n.iter.Done() {
		pending = append(pending, n.iter.Next()...)
		if len(pending) < foldBatch {
			continue
		}
		var more, ok bool
		if pending, more, ok = n.foldOut(pending, false, each); !ok || !more {
			return ok
		}
	}
	_, _, ok := n.foldOut(pending, true, each)
	return ok
}

// foldOut folds src, keeps its letters and digits and hands them to each.
// It returns what of src must wait for more (an incomplete rune, before
// the end), moved to src's start; whether each wants more; and false
// when folding could not go on.
func (n *normalizer) foldOut(src []byte, atEOF bool, each func([]byte) bool) (rest []byte, more, ok bool) {
	left := src
	for {
		nDst, nSrc, err := n.fold.Transform(n.folded[:], left, atEOF)
		if kept := lettersAndDigits(n.folded[:nDst]); len(kept) > 0 && !each(kept) {
			return nil, false, true
		}
		left = left[nSrc:]
		switch {
		case err == nil:
			return src[:0], true, true
		case errors.Is(err, transform.ErrShortDst) && (nDst > 0 || nSrc > 0):
		case errors.Is(err, transform.ErrShortSrc) && !atEOF:
			return src[:copy(src, left)], true, true
		default:
			return nil, false, false
		}
	}
}

// lettersAndDigits drops, in place, every rune of b but letters and
// digits; an invalid byte is dropped as strings.Map drops it (RuneError).
func lettersAndDigits(b []byte) []byte {
	out := b[:0]
	for i := 0; i < len(b); {
		r, size := rune(b[i]), 1
		if r >= utf8.RuneSelf {
			r, size = utf8.DecodeRune(b[i:])
		}
		if letterOrDigit(r) >= 0 {
			out = append(out, b[i:i+size]...)
		}
		i += size
	}
	return out
}

package probe

import (
	"strings"
	"unicode"

	"golang.org/x/text/cases"
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
// with normalised answer text.
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

// quotes reports whether normalised answer text holds term. term is
// normalised too, so a payload written by an older build in another
// alphabet is matched by the same rule; a term that normalises to nothing
// is never quoted (every text would contain it).
func quotes(normalizedText, term string) bool {
	t := Normalize(term)
	return t != "" && strings.Contains(normalizedText, t)
}

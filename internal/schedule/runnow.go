package schedule

import (
	"crypto/sha256"
	"encoding/hex"
)

// MaxTokenLength is the longest run-now token stored as-is; it matches the
// MaxLength of status.lastRunNowToken. Longer annotation values are stored
// as their hash so the status write never fails validation.
const MaxTokenLength = 256

// NormalizeToken returns the form of a run-now annotation value that is
// compared with and stored in status.lastRunNowToken.
func NormalizeToken(annotation string) string {
	if len(annotation) <= MaxTokenLength {
		return annotation
	}
	sum := sha256.Sum256([]byte(annotation))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// PendingRunNow reports whether the run-now annotation asks for a run that
// has not been acted on, and the normalized token to record once it has.
// An absent or empty annotation asks for nothing.
func PendingRunNow(annotation, lastToken string) (token string, pending bool) {
	if annotation == "" {
		return "", false
	}
	token = NormalizeToken(annotation)
	return token, token != lastToken
}

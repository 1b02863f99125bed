package schedule

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"
	"time"
)

// MaxNameLength is the longest run name produced. Run names fit a DNS label
// (and a label value) so they can be used as label values and in derived
// names such as a run's token Secret.
const MaxNameLength = 63

// shortHashLen is the number of hex digits of a short hash: 32 bits, enough
// to tell apart the parents or tokens that share one truncated prefix.
const shortHashLen = 8

// RunName is the deterministic name of the run scheduled at scheduled:
// "<parent>-<unix seconds>". The same scheduled time always yields the same
// name, so a retried reconcile that creates it again gets AlreadyExists
// instead of a second run.
func RunName(parent string, scheduled time.Time) string {
	return withSuffix(parent, strconv.FormatInt(scheduled.Unix(), 10))
}

// RunNowName is the deterministic name of the run asked for by a run-now
// token: "<parent>-now-<short hash of token>". The token itself is any user
// string, so only its hash reaches the name.
func RunNowName(parent, token string) string {
	return withSuffix(parent, "now-"+ShortHash(token))
}

// LabelValue returns value unchanged when it is a valid label value length,
// otherwise a truncated prefix plus a hash of the whole value. Parent names
// may be up to 253 characters but label values only 63; listing by label
// must then also check the owner reference, since two long names can share
// a label value only by hash collision.
func LabelValue(value string) string {
	if len(value) <= MaxNameLength {
		return value
	}
	keep := MaxNameLength - 1 - shortHashLen
	return trimNonAlnum(value[:keep]) + "-" + ShortHash(value)
}

// ShortHash is the first 8 hex digits of the SHA-256 of s.
func ShortHash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])[:shortHashLen]
}

// withSuffix joins parent and suffix, truncating the parent to fit
// MaxNameLength. A truncated parent gets a hash of its full name, so two
// long parents that share a prefix never produce the same run name.
func withSuffix(parent, suffix string) string {
	if len(parent)+1+len(suffix) <= MaxNameLength {
		return parent + "-" + suffix
	}
	keep := MaxNameLength - len(suffix) - 1 - shortHashLen - 1
	return trimNonAlnum(parent[:keep]) + "-" + ShortHash(parent) + "-" + suffix
}

// trimNonAlnum drops a trailing '-' or '.' left by truncation: a name part
// must end with an alphanumeric character.
func trimNonAlnum(s string) string {
	return strings.TrimRight(s, "-.")
}

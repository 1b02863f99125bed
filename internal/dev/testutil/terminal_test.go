package testutil_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/ragcanary/ragcanary/internal/dev/testutil"
)

// ForgedQuoted is ForgedText as Go quotes it, so a writer that quotes with
// strconv shows exactly it.
func TestForgedQuotedIsTheQuotedForgedText(t *testing.T) {
	if got := strings.Trim(strconv.QuoteToASCII(testutil.ForgedText), `"`); got != testutil.ForgedQuoted {
		t.Fatalf("ForgedText quotes to %s, want %s", got, testutil.ForgedQuoted)
	}
}

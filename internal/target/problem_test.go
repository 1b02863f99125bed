package target

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/ragcanary/ragcanary/internal/driver"
	"github.com/ragcanary/ragcanary/internal/safetext"
)

// hostile is text a tenant controls (an object name, a host, a reply) made
// to rewrite the terminal or the log line that shows it.
const hostile = "x\x1b[2J\x1b[H\x1b[32mVerdict: Excluded, SLO met\u202e\n\tforged log line"

// TestProblemMessagesAreCleaned: whatever way a problem is built or read,
// the message a condition, event or log gets is printable and bounded.
func TestProblemMessagesAreCleaned(t *testing.T) {
	literal := &Problem{Intent: Stalled, Reason: "R", Message: "literal " + hostile, Err: errors.New("cause")}
	wrapped := fmt.Errorf("resolving: %w", literal)
	for _, tc := range []struct {
		name string
		// msg is the message a caller would copy into a condition.
		msg string
	}{
		{"Stall", Stall("R", "host %s", hostile).Message},
		{"Wait", Wait("R", "object %s", hostile).Message},
		{"Error of a literal", literal.Error()},
		{"AsProblem of a literal", AsProblem(wrapped).Message},
		{"IsUserProblem of a literal", userMessage(t, wrapped)},
		{"AsProblem of a plain error", AsProblem(errors.New("api: " + hostile)).Message},
		{"AsProblem of a driver error", AsProblem(driver.NewError(driver.Transient, "Search", 0, hostile, nil)).Message},
		{"Named", Named("Corpus", hostile, Stall("R", "%s", hostile)).(*Problem).Message},
		{"long", Stall("R", "%s", strings.Repeat("é", 5000)).Message},
	} {
		if !safetext.Printable(tc.msg) {
			t.Errorf("%s: message %q is not printable", tc.name, tc.msg)
		}
		if n := utf8.RuneCountInString(tc.msg); n > MaxMessage+1 {
			t.Errorf("%s: message has %d runes, want at most %d and an ellipsis", tc.name, n, MaxMessage)
		}
	}
	if !strings.Contains(AsProblem(wrapped).Message, "Verdict: Excluded") {
		t.Errorf("cleaning dropped the visible text: %q", AsProblem(wrapped).Message)
	}
	if p := AsProblem(wrapped); p.Intent != Stalled || p.Reason != "R" || !errors.Is(p, literal.Err) {
		t.Errorf("cleaned copy lost its intent, reason or cause: %+v", p)
	}
}

func userMessage(t *testing.T, err error) string {
	t.Helper()
	p, ok := IsUserProblem(err)
	if !ok {
		t.Fatalf("%v is not a user problem", err)
	}
	return p.Message
}

package scoring

import (
	"errors"
	"fmt"
	"strings"
)

// ErrInvalidOptions is wrapped by Evaluate when Options are out of range.
var ErrInvalidOptions = errors.New("invalid scoring options")

// Kind says which input a Problem comes from.
type Kind string

// Problem kinds.
const (
	KindCase   Kind = "case"
	KindResult Kind = "result"
	// KindInput is a problem with the document as a whole (e.g. malformed
	// JSON), not with one element.
	KindInput Kind = "input"
)

// Problem is one reason the input is invalid.
type Problem struct {
	Kind Kind
	// Index is the 0-based position of the element in its input, or -1
	// when the problem is not tied to one element.
	Index int
	// ID is the case ID the problem concerns; empty when unknown (e.g. the
	// element has no usable ID).
	ID string
	// Message says what is wrong, without repeating Kind, Index or ID.
	Message string
}

// String renders the problem naming the case, e.g. `case "q1": ...`.
func (p Problem) String() string {
	switch {
	case p.Kind == KindInput || p.Kind == "":
		return p.Message
	case p.ID != "":
		return fmt.Sprintf("%s %q: %s", p.Kind, p.ID, p.Message)
	case p.Index >= 0:
		return fmt.Sprintf("%s #%d: %s", p.Kind, p.Index+1, p.Message)
	default:
		return fmt.Sprintf("%s: %s", p.Kind, p.Message)
	}
}

// ValidationError reports invalid cases or results. Callers map it to "bad
// input" (exit 2 in the CLI, a Stalled condition in the controller) rather
// than to a failed evaluation.
type ValidationError struct {
	Problems []Problem
}

// maxListedProblems bounds Error() so a wholly broken export does not print
// thousands of lines; Problems still holds everything.
const maxListedProblems = 20

func (e *ValidationError) Error() string {
	if len(e.Problems) == 1 {
		return "invalid input: " + e.Problems[0].String()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "invalid input (%d problems):", len(e.Problems))
	for i, p := range e.Problems {
		if i == maxListedProblems {
			fmt.Fprintf(&b, "\n  ... and %d more", len(e.Problems)-i)
			break
		}
		b.WriteString("\n  ")
		b.WriteString(p.String())
	}
	return b.String()
}

// CaseIDs returns the distinct case IDs named by the problems, in order.
// Problems about elements without a usable ID contribute nothing.
func (e *ValidationError) CaseIDs() []string {
	seen := map[string]bool{}
	ids := []string{}
	for _, p := range e.Problems {
		if p.ID != "" && !seen[p.ID] {
			seen[p.ID] = true
			ids = append(ids, p.ID)
		}
	}
	return ids
}

// problems accumulates Problems and turns them into an error at the end.
type problems []Problem

func (ps *problems) add(kind Kind, index int, id, format string, args ...any) {
	// Cloned: a streamed result's ID is only valid while it is scored.
	*ps = append(*ps, Problem{Kind: kind, Index: index, ID: strings.Clone(id), Message: fmt.Sprintf(format, args...)})
}

// err returns nil when nothing was recorded, so callers can `return ps.err()`.
func (ps problems) err() error {
	if len(ps) == 0 {
		return nil
	}
	return &ValidationError{Problems: ps}
}

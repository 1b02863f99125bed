package driver

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
)

func TestErrorClassification(t *testing.T) {
	cause := context.DeadlineExceeded
	err := fmt.Errorf("probe: %w", NewError(Transient, "Search", 0, "timeout", cause))

	if !IsTransient(err) || IsPermanent(err) || IsUnauthorized(err) {
		t.Fatalf("wrapped transient error misclassified: %v", err)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("cause not reachable through errors.Is")
	}
	if k, ok := KindOf(errors.New("plain")); ok || k != 0 {
		t.Fatalf("plain error classified as %v", k)
	}
}

func TestErrorTextOmitsCause(t *testing.T) {
	// The cause may carry a URL or body; only the sanitized fields may show.
	err := NewError(Unauthorized, "Answer", 403, "credential refused", errors.New("Bearer s3cret"))
	got := err.Error()
	if strings.Contains(got, "s3cret") {
		t.Fatalf("error text leaks cause: %q", got)
	}
	if want := "driver Answer: unauthorized (status 403): credential refused"; got != want {
		t.Fatalf("Error() = %q, want %q", got, want)
	}
}

func TestTokenRedacted(t *testing.T) {
	tok := Token("s3cret")
	for _, s := range []string{fmt.Sprint(tok), fmt.Sprintf("%v %s %q %#v", tok, tok, tok, tok)} {
		if strings.Contains(s, "s3cret") {
			t.Fatalf("token leaked in %q", s)
		}
	}
	if tok.Reveal() != "s3cret" {
		t.Fatalf("Reveal lost the value")
	}
}

func TestCapabilitiesSupports(t *testing.T) {
	c := Capabilities{RevocationMethods: []RevocationMethod{v1alpha1.RevokeRemoveGrant}}
	if !c.Supports(v1alpha1.RevokeRemoveGrant) || c.Supports(v1alpha1.RevokeDeleteDocument) {
		t.Fatalf("Supports wrong for %v", c.RevocationMethods)
	}
}

package canaryrun

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/driver"
	"github.com/ragcanary/ragcanary/internal/measure"
	"github.com/ragcanary/ragcanary/internal/probe"
)

func TestTokenFromSecret(t *testing.T) {
	tests := []struct {
		name string
		// data of the run's token Secret.
		data map[string][]byte
		// want is the token read; wantMissing what the problem names.
		want        CanaryToken
		wantMissing string
	}{
		{name: "handle and payload",
			data: map[string][]byte{"handle": []byte("rcanaryh"), "payload": []byte("rcpayloadp")},
			want: CanaryToken{Handle: "rcanaryh", Payload: "rcpayloadp"}},
		// Written by the previous build: the run keeps the rule it started with.
		{name: "only the old single token",
			data: map[string][]byte{"token": []byte("rcanaryold")},
			want: CanaryToken{Handle: "rcanaryold", Payload: "rcanaryold"}},
		// A half-written new Secret never falls back to the old key.
		{name: "handle without payload",
			data:        map[string][]byte{"handle": []byte("rcanaryh"), "token": []byte("rcanaryold")},
			wantMissing: "payload"},
		{name: "payload without handle", data: map[string][]byte{"payload": []byte("rcpayloadp")}, wantMissing: "handle"},
		{name: "empty", data: map[string][]byte{"token": {}}, wantMissing: "handle and payload"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, missing := tokenFromSecret(tc.data)
			if got != tc.want || missing != tc.wantMissing {
				t.Errorf("tokenFromSecret = %+v, missing %q; want %+v, missing %q", got, missing, tc.want, tc.wantMissing)
			}
		})
	}
}

// TestNewTokenPlantsTwoTerms: the handle and the payload are distinct
// single terms, neither inside the other, both in the document body, and
// status's hash reveals neither.
func TestNewTokenPlantsTwoTerms(t *testing.T) {
	term := regexp.MustCompile(`^[a-z0-9]{32,}$`)
	a, err := newToken()
	if err != nil {
		t.Fatal(err)
	}
	b, err := newToken()
	if err != nil {
		t.Fatal(err)
	}
	if a == b {
		t.Fatal("two runs drew the same token")
	}
	if !term.MatchString(a.Handle) || !term.MatchString(a.Payload) {
		t.Fatalf("handle %d and payload %d characters: want lower-case alphanumeric single terms", len(a.Handle), len(a.Payload))
	}
	if strings.Contains(a.Handle, a.Payload) || strings.Contains(a.Payload, a.Handle) {
		t.Fatal("one term contains the other: an echoed handle would show the payload")
	}
	run := &v1alpha1.CanaryRun{Status: v1alpha1.CanaryRunStatus{DocumentID: "rc-1"}}
	fields := strings.Fields(canaryDocument(run, a).Body)
	if !slices.Contains(fields, a.Handle) || !slices.Contains(fields, a.Payload) {
		t.Fatal("the document body does not hold both terms as whole words")
	}
	h := tokenHash(a)
	if h == "" || strings.Contains(a.Handle, h) || strings.Contains(a.Payload, h) {
		t.Fatalf("tokenHash %q is empty or part of a secret", h)
	}
	if tokenHash(CanaryToken{Handle: "x", Payload: a.Payload}) != h {
		t.Fatal("tokenHash depends on more than the payload")
	}
}

// TestTokenTermsStayApartAfterNormalising: answers are matched after
// probe.Normalize, so each term must be its own normal form, and no term may
// be part of another in any re-styling. Each prefix must hold a letter that
// is neither a hex digit nor in another prefix, which makes containment
// impossible for every draw, not just the ones tried here.
func TestTokenTermsStayApartAfterNormalising(t *testing.T) {
	prefixes := map[string]string{"handle": handlePrefix, "payload": payloadPrefix, "updated payload": UpdatedPrefix}
	for name, p := range prefixes {
		for other, q := range prefixes {
			if name != other && !strings.ContainsFunc(p, func(r rune) bool {
				return !strings.ContainsRune("0123456789abcdef"+q, r)
			}) {
				t.Errorf("the %s prefix %q has no letter outside hex digits and the %s prefix %q", name, p, other, q)
			}
		}
	}
	for range 32 {
		tok, err := newToken()
		if err != nil {
			t.Fatal(err)
		}
		if tok.Updated, err = randomTerm(UpdatedPrefix); err != nil {
			t.Fatal(err)
		}
		terms := map[string]string{"handle": tok.Handle, "payload": tok.Payload, "updated payload": tok.Updated}
		for name, term := range terms {
			if probe.Normalize(term) != term {
				t.Fatalf("the %s is not its own normal form", name)
			}
			for other, o := range terms {
				if name != other && strings.Contains(term, o) {
					t.Fatalf("the %s contains the %s", name, other)
				}
			}
		}
		// The handle echoed in any style shows nothing; the payload does.
		tg := tok.target("rc-1")
		restyled := func(s string) driver.Answer {
			return driver.Answer{Text: strings.ToUpper(s[:8] + "-" + s[8:]), Citations: []string{}}
		}
		if probe.AnswerShows(restyled(tok.Handle), tg) {
			t.Fatal("an answer echoing the handle upper-cased shows the payload")
		}
		if !probe.AnswerShows(restyled(tok.Payload), tg) {
			t.Fatal("an answer quoting the payload upper-cased does not show it")
		}
		if old, fresh := probe.AnswerContent(restyled(tok.Updated), tg); old != measure.Absent || fresh != measure.Present {
			t.Fatalf("an answer quoting the updated payload: old %s new %s, want absent and present", old, fresh)
		}
	}
}

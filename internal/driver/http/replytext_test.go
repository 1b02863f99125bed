package httpdriver_test

import (
	"context"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/driver"
	httpdriver "github.com/ragcanary/ragcanary/internal/driver/http"
	"github.com/ragcanary/ragcanary/internal/safetext"
)

// screen is what a hostile target puts in a reply to rewrite the terminal
// or the status field that shows it.
const screen = `\u001b[2J\u001b[H\u001b[32mVerdict: Excluded, SLO met\u202e`

// TestRepliesWithUnshowableIDsAreMalformed: a hit or citation ID that is
// not printable or too long would reach status (forbidden IDs, a
// sentinel's carrier) raw, and rewriting it could make it match another
// ID, so the reply is a transient error, never hits or an answer.
func TestRepliesWithUnshowableIDsAreMalformed(t *testing.T) {
	long := strings.Repeat("d", httpdriver.MaxReplyID+1)
	ctx := context.Background()
	for _, body := range []string{
		`{"hits":[{"chunkId":"d#0` + screen + `","documentId":"d","score":1}]}`,
		`{"hits":[{"chunkId":"d#0","documentId":"d\u200b","score":1}]}`,
		`{"hits":[{"chunkId":"d#0","documentId":"` + long + `","score":1}]}`,
	} {
		d, _ := scripted(t, httpdriver.Config{}, reply(200, "application/json", body))
		if hits, err := d.Search(ctx, persona, "q", 5); !driver.IsTransient(err) || hits != nil {
			t.Errorf("search reply %.60s…: hits %+v, err %v; want a transient error", body, hits, err)
		}
	}
	for _, body := range []string{
		`{"answer":"a","citations":["d#0` + screen + `"]}`,
		`{"answer":"a","citations":["` + long + `"]}`,
	} {
		d, _ := scripted(t, httpdriver.Config{}, reply(200, "application/json", body))
		if a, err := d.Answer(ctx, persona, "q"); !driver.IsTransient(err) || a.Citations != nil {
			t.Errorf("answer reply %.60s…: answer %+v, err %v; want a transient error", body, a, err)
		}
	}
}

// TestCapabilityWordsAreShowable: the contract version and revocation
// methods are named in a ContractMismatch condition, so they come back
// printable and short, and never equal to a valid word they were not.
func TestCapabilityWordsAreShowable(t *testing.T) {
	for _, tc := range []struct {
		name    string
		version string
		method  string
	}{
		{"escape", `v1` + screen, `RemoveGrant` + screen},
		{"long", strings.Repeat("v", 5000), strings.Repeat("R", 5000)},
		{"long with trailing space", "v1" + strings.Repeat(" ", 100), "RemoveGrant" + strings.Repeat(" ", 100)},
	} {
		body := `{"contractVersion":"` + tc.version + `","revocationMethods":["` + tc.method + `"],"answer":true}`
		d, _ := scripted(t, httpdriver.Config{}, reply(200, "application/json", body))
		c, err := d.Capabilities(context.Background())
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		words := []string{c.ContractVersion, string(c.RevocationMethods[0])}
		for _, w := range words {
			if !safetext.Printable(w) || utf8.RuneCountInString(w) > httpdriver.MaxReplyToken+1 {
				t.Errorf("%s: word %q is not printable and short", tc.name, w)
			}
		}
		if c.ContractVersion == driver.ContractVersion || c.RevocationMethods[0] == v1alpha1.RevokeRemoveGrant {
			t.Errorf("%s: a malformed word passed for a valid one: %q", tc.name, words)
		}
	}
}

// TestCapabilitiesWithoutRequiredFieldsAreMalformed: "null" or an object
// without contractVersion or revocationMethods is not a target without
// capabilities.
func TestCapabilitiesWithoutRequiredFieldsAreMalformed(t *testing.T) {
	for _, body := range []string{`null`, `{}`, `{"contractVersion":"v1","answer":true}`, `{"revocationMethods":[],"answer":true}`} {
		d, _ := scripted(t, httpdriver.Config{}, reply(200, "application/json", body))
		if c, err := d.Capabilities(context.Background()); !driver.IsTransient(err) {
			t.Errorf("%s: capabilities %+v, err %v; want a transient error", body, c, err)
		}
	}
}

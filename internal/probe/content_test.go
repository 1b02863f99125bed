package probe

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/driver"
	"github.com/ragcanary/ragcanary/internal/measure"
)

func TestAnswerContent(t *testing.T) {
	tg := Target{DocumentID: "rc-abc", Handle: "rcanaryhandle123", Payload: "rcpayloadold", UpdatedPayload: "rcpayloadnew"}
	tests := []struct {
		name       string
		answer     driver.Answer
		old, fresh measure.Outcome
	}{
		{name: "quotes the old version", answer: driver.Answer{Text: "it says rcpayloadold", Citations: []string{"rc-abc#0"}},
			old: measure.Present, fresh: measure.Absent},
		{name: "quotes the new version", answer: driver.Answer{Text: "it says rcpayloadnew", Citations: []string{"rc-abc#0"}},
			old: measure.Absent, fresh: measure.Present},
		{name: "quotes both (two passages, two versions)", answer: driver.Answer{Text: "rcpayloadold and rcpayloadnew"},
			old: measure.Present, fresh: measure.Present},
		{name: "nothing about the canary", answer: driver.Answer{Text: "I found nothing about rcanaryhandle123"},
			old: measure.Absent, fresh: measure.Absent},
		// Some version was served, the reply does not say which.
		{name: "cites the canary without quoting a payload", answer: driver.Answer{Text: "see the source", Citations: []string{"rc-abc#0"}},
			old: measure.Error, fresh: measure.Error},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			old, fresh := AnswerContent(tc.answer, tg)
			if old != tc.old || fresh != tc.fresh {
				t.Errorf("old %s new %s, want old %s new %s", old, fresh, tc.old, tc.fresh)
			}
		})
	}
}

// textSearch is a search surface whose IDs are its own: it returns, for a
// query, the passages whose text holds it.
type textSearch struct {
	driver.Driver
	texts []string
}

func (s textSearch) Search(_ context.Context, _ driver.Token, query string, _ int) ([]driver.Hit, error) {
	var hits []driver.Hit
	for i, text := range s.texts {
		if strings.Contains(text, query) {
			hits = append(hits, driver.Hit{DocumentID: fmt.Sprintf("issue-%d", i), Text: text})
		}
	}
	return hits, nil
}

// TestProbeContentOnForeignIDs: on a search surface whose IDs are its own
// (a forge's issue search), a version shows by the payload its hit quotes,
// so the new version is seen once the index serves it and the old one is
// not.
func TestProbeContentOnForeignIDs(t *testing.T) {
	tg := Target{DocumentID: "rc-abc", Handle: "rcanaryhandle123", Payload: "rcpayloadold", UpdatedPayload: "rcpayloadnew"}
	tests := []struct {
		name       string
		texts      []string
		old, fresh measure.Outcome
	}{
		{name: "old version indexed", texts: []string{"rcanaryhandle123 holds rcpayloadold"}, old: measure.Present, fresh: measure.Absent},
		{name: "new version indexed", texts: []string{"rcanaryhandle123 holds rcpayloadnew"}, old: measure.Absent, fresh: measure.Present},
		{name: "both served (a replica behind)", texts: []string{"rcpayloadold", "rcpayloadnew"}, old: measure.Present, fresh: measure.Present},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			old, fresh := ProbeContent(t.Context(), textSearch{texts: tc.texts}, v1alpha1.SurfaceSearch, "token", tg)
			if old != tc.old || fresh != tc.fresh {
				t.Errorf("old %s new %s, want old %s new %s", old, fresh, tc.old, tc.fresh)
			}
		})
	}
}

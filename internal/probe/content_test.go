package probe

import (
	"testing"

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

package scoring

import (
	"testing"

	"github.com/ragcanary/ragcanary/internal/driver"
)

// TestVocabularyMatchesDriverContract: a live run records the driver's
// declared status and reason verbatim as a result's response, so the two
// vocabularies must be the same words.
func TestVocabularyMatchesDriverContract(t *testing.T) {
	for _, a := range Actions {
		if !driver.AnswerStatus(a).Valid() {
			t.Errorf("action %q is not a driver AnswerStatus", a)
		}
	}
	statuses := []driver.AnswerStatus{driver.StatusAnswer, driver.StatusBlock, driver.StatusNotFound,
		driver.StatusNotApplicable, driver.StatusClarify, driver.StatusConflict}
	for _, s := range statuses {
		if !Action(s).Valid() {
			t.Errorf("driver status %q is not a scoring Action", s)
		}
	}
	for _, r := range ReasonCodes {
		if !driver.AnswerReason(r).Valid() {
			t.Errorf("reason %q is not a driver AnswerReason", r)
		}
	}
	if driver.AnswerStatus("abstain").Valid() || Action("abstain").Valid() {
		t.Error("an unknown word was accepted")
	}
}

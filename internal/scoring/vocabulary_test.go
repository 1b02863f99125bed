package scoring

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/ragcanary/ragcanary/internal/driver"
)

// contractEnums reads the AnswerStatus and AnswerReason enums from the
// driver contract itself, so a word added to the contract is checked here
// without anyone copying it into the test.
func contractEnums(t *testing.T) (statuses, reasons []string) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "api", "contract", "driver.v1.yaml"))
	if err != nil {
		t.Fatalf("reading the driver contract: %v", err)
	}
	var doc struct {
		Components struct {
			Schemas map[string]struct {
				Enum []string `json:"enum"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("parsing the driver contract: %v", err)
	}
	statuses = doc.Components.Schemas["AnswerStatus"].Enum
	reasons = doc.Components.Schemas["AnswerReason"].Enum
	if len(statuses) == 0 || len(reasons) == 0 {
		t.Fatalf("the contract declares no AnswerStatus (%v) or AnswerReason (%v) enum", statuses, reasons)
	}
	return statuses, reasons
}

func sorted[S ~string](in []S) []string {
	out := make([]string, 0, len(in))
	for _, v := range in {
		out = append(out, string(v))
	}
	slices.Sort(out)
	return out
}

// TestVocabularyMatchesDriverContract: a live run records the driver's
// declared status and reason verbatim as a result's response, so the
// contract, the driver and scoring must know the same words.
func TestVocabularyMatchesDriverContract(t *testing.T) {
	statuses, reasons := contractEnums(t)
	if got, want := sorted(Actions), sorted(statuses); !slices.Equal(got, want) {
		t.Errorf("scoring Actions %v, contract AnswerStatus %v", got, want)
	}
	if got, want := sorted(ReasonCodes), sorted(reasons); !slices.Equal(got, want) {
		t.Errorf("scoring ReasonCodes %v, contract AnswerReason %v", got, want)
	}
	for _, s := range statuses {
		if !driver.AnswerStatus(s).Valid() || !Action(s).Valid() {
			t.Errorf("contract status %q: driver valid %v, scoring valid %v", s, driver.AnswerStatus(s).Valid(), Action(s).Valid())
		}
	}
	for _, r := range reasons {
		if !driver.AnswerReason(r).Valid() || !ReasonCode(r).Valid() {
			t.Errorf("contract reason %q: driver valid %v, scoring valid %v", r, driver.AnswerReason(r).Valid(), ReasonCode(r).Valid())
		}
	}
	if driver.AnswerStatus("abstain").Valid() || Action("abstain").Valid() ||
		driver.AnswerReason("NO_REASON").Valid() || ReasonCode("NO_REASON").Valid() {
		t.Error("a word outside the contract was accepted")
	}
}

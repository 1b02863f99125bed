package controllers

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// TestEvalSuiteV2Rejected: the API server itself rejects the v2 mistakes a
// CRD rule can see, naming the field: an unknown action or reason, v1 and
// v2 fields in one expectation, v2 evidence without an action, and a
// fixture document without a body.
func TestEvalSuiteV2Rejected(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	const base = `
apiVersion: ragcanary.dev/v1alpha1
kind: EvalSuite
metadata: {name: v2}
spec:
  corpusRef: {name: corpus}
`
	one := func(exp string) string {
		return base + "  cases:\n  - id: q\n    question: a\n    expectations: [" + exp + "]\n"
	}
	for i, tc := range []struct {
		name, manifest string
		// want are fragments of the rejection: the field and the reason.
		want []string
	}{
		{"unknown action", one("{persona: alice, action: refuse}"), []string{"action", `Unsupported value: "refuse"`}},
		{"unknown reason", one("{persona: alice, action: block, internalReason: NOPE}"), []string{"internalReason", `Unsupported value: "NOPE"`}},
		{"v1 and v2 mixed", one("{persona: alice, action: block, mustAbstain: true}"), []string{"expectations[0]", "must not set relevantIDs, allowedIDs or mustAbstain"}},
		{"v2 evidence without action", one("{persona: alice, requiredEvidence: [a]}"), []string{"expectations[0]", "v2 evidence fields need action"}},
		{"fixture document without body", base + "  cases: [{id: q, question: a, expectations: [{persona: alice}]}]\n  fixture:\n    documents: [{id: d}]\n",
			[]string{"spec.fixture.documents[0].body", "Required value"}},
		{"report history limit zero", base + "  reportHistoryLimit: 0\n  cases: [{id: q, question: a, expectations: [{persona: alice}]}]\n",
			[]string{"spec.reportHistoryLimit", "greater than or equal to 1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obj := decodeOne(t, tc.manifest)
			obj.SetNamespace(ns)
			obj.SetName(fmt.Sprintf("v2-%d", i))
			err := k8sClient.Create(context.Background(), obj)
			if err == nil {
				t.Fatalf("accepted; want a rejection mentioning %q", tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("rejection %q lacks %q", err.Error(), w)
				}
			}
		})
	}
	// A valid v2 suite with a fixture is accepted as written.
	ok := decodeOne(t, base+`  cases:
  - id: q
    question: a
    asOf: "2026-10-01T00:00:00+09:00"
    expectations:
    - {persona: alice, action: answer, requiredEvidence: [d], requiredAnyOf: [[d], [e]], internalReason: NO_EVIDENCE, forbiddenMarkers: [x]}
  fixture:
    documents: [{id: d, body: text, validFrom: "2026-01-01T00:00:00Z", principals: [user:alice]}]
    groups: [{name: staff, members: [user:alice]}]
`)
	ok.SetNamespace(ns)
	if err := k8sClient.Create(context.Background(), ok); err != nil {
		t.Fatalf("valid v2 suite rejected: %v", err)
	}
}

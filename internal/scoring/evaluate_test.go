package scoring

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

// answerable builds an answerable case whose only allowed and relevant doc is "<id>-doc".
func answerable(id, persona string) Case {
	doc := id + "-doc"
	return Case{ID: id, Persona: persona, Question: "q", RelevantIDs: []string{doc}, AllowedIDs: []string{doc}}
}

// blocked builds a required-block case that may see only "pub".
func blocked(id, persona string) Case {
	return Case{ID: id, Persona: persona, Question: "q", RelevantIDs: []string{}, AllowedIDs: []string{"pub"}, MustAbstain: true}
}

// hit answers case id correctly at rank 1.
func hit(id string) Result {
	doc := id + "-doc"
	return Result{ID: id, RetrievedIDs: []string{doc}, CitedIDs: []string{doc}}
}

func abstain(id string, retrieved ...string) Result {
	return Result{ID: id, RetrievedIDs: retrieved, CitedIDs: []string{}, Abstained: true}
}

// wantRatio is a compact expectation for a Ratio; value nil means null.
type wantRatio struct {
	value *float64
	num   float64
	den   int
}

func checkRatio(t *testing.T, field string, got Ratio, want wantRatio) {
	t.Helper()
	if !eqFloat(got.Value, want.value) || got.Numerator != want.num || got.Denominator != want.den {
		t.Errorf("%s = {%v %v/%d}, want {%v %v/%d}", field, show(got.Value), got.Numerator, got.Denominator,
			show(want.value), want.num, want.den)
	}
}

func TestEvaluateSummary(t *testing.T) {
	cases := []Case{
		answerable("a1", "alice"),
		answerable("a2", "alice"),
		blocked("a3", "alice"),
		blocked("b1", "bob"),
		blocked("b2", "bob"),
		answerable("n1", ""),
	}
	results := []Result{
		hit("a1"),
		abstain("a2"),                  // false block
		abstain("a3", "pub"),           // justified block
		abstain("b1", "pub", "secret"), // disclosure despite abstaining
		abstain("b2"),                  // justified block
		{ID: "n1", RetrievedIDs: []string{"x", "n1-doc"}, CitedIDs: []string{}}, // leak, unsupported
	}
	rep, err := Evaluate(cases, results, Options{})
	if err != nil {
		t.Fatalf("Evaluate: %v", err)
	}
	if rep.K != DefaultK {
		t.Errorf("k = %d, want default %d", rep.K, DefaultK)
	}

	tests := []struct {
		// key is the persona ("" = no persona); "*" selects the overall stats.
		key string
		// counts are answerable, required_block, supported, false_blocks, disclosures.
		counts [5]int
		// utility, fbr, dr are supported/answerable, false_blocks/answerable
		// and disclosures/required_block.
		utility, fbr, dr wantRatio
		// recall and mrr are means over answerable cases with a defined value.
		recall, mrr wantRatio
	}{
		{
			key:     "*",
			counts:  [5]int{3, 3, 1, 1, 1},
			utility: wantRatio{ptr(1.0 / 3), 1, 3}, fbr: wantRatio{ptr(1.0 / 3), 1, 3}, dr: wantRatio{ptr(1.0 / 3), 1, 3},
			// a1: 1, a2: 0 (retrieved nothing), n1: 1 ; RR a1 1, a2 0, n1 1/2.
			recall: wantRatio{ptr(2.0 / 3), 2, 3}, mrr: wantRatio{ptr(0.5), 1.5, 3},
		},
		{
			key:     "alice",
			counts:  [5]int{2, 1, 1, 1, 0},
			utility: wantRatio{ptr(0.5), 1, 2}, fbr: wantRatio{ptr(0.5), 1, 2}, dr: wantRatio{ptr(0), 0, 1},
			recall: wantRatio{ptr(0.5), 1, 2}, mrr: wantRatio{ptr(0.5), 1, 2},
		},
		{
			// Only required-block cases: every answerable-based ratio is
			// null (0/0), not padded to a perfect 1.
			key:     "bob",
			counts:  [5]int{0, 2, 0, 0, 1},
			utility: wantRatio{nil, 0, 0}, fbr: wantRatio{nil, 0, 0}, dr: wantRatio{ptr(0.5), 1, 2},
			recall: wantRatio{nil, 0, 0}, mrr: wantRatio{nil, 0, 0},
		},
		{
			// No required-block case: disclosure rate is null, not 0.
			key:     NoPersona,
			counts:  [5]int{1, 0, 0, 0, 0},
			utility: wantRatio{ptr(0), 0, 1}, fbr: wantRatio{ptr(0), 0, 1}, dr: wantRatio{nil, 0, 0},
			recall: wantRatio{ptr(1), 1, 1}, mrr: wantRatio{ptr(0.5), 0.5, 1},
		},
	}
	if len(rep.Summary.Personas) != 3 {
		t.Errorf("personas = %d, want 3", len(rep.Summary.Personas))
	}
	for _, tt := range tests {
		t.Run("persona="+tt.key, func(t *testing.T) {
			st, ok := rep.Summary.Overall, true
			if tt.key != "*" {
				st, ok = rep.Summary.Personas[tt.key]
			}
			if !ok {
				t.Fatalf("no stats for persona %q", tt.key)
			}
			got := [5]int{st.Answerable, st.RequiredBlock, st.Supported, st.FalseBlocks, st.Disclosures}
			if got != tt.counts {
				t.Errorf("counts = %v, want %v", got, tt.counts)
			}
			checkRatio(t, "utility", st.Utility, tt.utility)
			checkRatio(t, "false_block_rate", st.FalseBlockRate, tt.fbr)
			checkRatio(t, "disclosure_rate", st.DisclosureRate, tt.dr)
			checkRatio(t, "recall_at_k", st.RecallAtK, tt.recall)
			checkRatio(t, "mrr_at_k", st.MRRAtK, tt.mrr)
		})
	}

	// Leaks in b1 and n1 fail no_forbidden with a count of 2.
	if rep.Passed || rep.Gates[0].Name != GateNoForbidden || rep.Gates[0].Passed || *rep.Gates[0].Value != 2 {
		t.Errorf("gates = %+v, want no_forbidden failing with value 2", rep.Gates)
	}
	var order []string
	for _, c := range rep.Cases {
		order = append(order, c.ID)
	}
	if want := []string{"a1", "a2", "a3", "b1", "b2", "n1"}; !reflect.DeepEqual(order, want) {
		t.Errorf("case order = %v, want input order %v", order, want)
	}
}

func TestGates(t *testing.T) {
	half, high := 0.5, 0.9
	tests := []struct {
		name string
		// cases and results are the input.
		cases   []Case
		results []Result
		// opts sets the optional thresholds.
		opts Options
		// want maps gate name to expected pass; absent gates must not appear.
		want map[string]bool
		// passed is the expected overall verdict.
		passed bool
	}{
		{
			name:  "clean run without thresholds",
			cases: []Case{answerable("a", "")}, results: []Result{hit("a")},
			want:   map[string]bool{GateNoForbidden: true, GateCitationValidity: true, GateNoFailedToAbstain: true},
			passed: true,
		},
		{
			name:    "citation outside retrieved fails citation_validity",
			cases:   []Case{answerable("a", "")},
			results: []Result{{ID: "a", RetrievedIDs: []string{}, CitedIDs: []string{"a-doc"}}},
			want:    map[string]bool{GateNoForbidden: true, GateCitationValidity: false, GateNoFailedToAbstain: true},
		},
		{
			// recall 1 >= 0.5 passes; the hit is at rank 2, so MRR 0.5 < 0.9 fails.
			name:    "recall threshold met, mrr threshold missed",
			cases:   []Case{{ID: "a", RelevantIDs: []string{"d1"}, AllowedIDs: []string{"d1", "d2"}}},
			results: []Result{{ID: "a", RetrievedIDs: []string{"d2", "d1"}, CitedIDs: []string{"d1"}}},
			opts:    Options{MinRecall: &half, MinMRR: &high},
			want:    map[string]bool{GateNoForbidden: true, GateCitationValidity: true, GateNoFailedToAbstain: true, GateMinRecall: true, GateMinMRR: false},
		},
		{
			name:    "both thresholds met",
			cases:   []Case{answerable("a", "")},
			results: []Result{hit("a")},
			opts:    Options{MinRecall: &half, MinMRR: &high},
			want:    map[string]bool{GateNoForbidden: true, GateCitationValidity: true, GateNoFailedToAbstain: true, GateMinRecall: true, GateMinMRR: true},
			passed:  true,
		},
		{
			// A required block answered from allowed evidence leaks nothing
			// but breaks the policy: it fails its own gate, not no_forbidden.
			name:    "answered required block fails no_failed_to_abstain",
			cases:   []Case{blocked("b", "")},
			results: []Result{{ID: "b", RetrievedIDs: []string{"pub"}, CitedIDs: []string{"pub"}}},
			want:    map[string]bool{GateNoForbidden: true, GateCitationValidity: true, GateNoFailedToAbstain: false},
		},
		{
			// Only required-block cases: mean recall is null, and a set
			// threshold fails closed rather than passing vacuously.
			name:  "null mean fails threshold closed",
			cases: []Case{blocked("b", "")}, results: []Result{abstain("b")},
			opts: Options{MinRecall: &half},
			want: map[string]bool{GateNoForbidden: true, GateCitationValidity: true, GateNoFailedToAbstain: true, GateMinRecall: false},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep, err := Evaluate(tt.cases, tt.results, tt.opts)
			if err != nil {
				t.Fatalf("Evaluate: %v", err)
			}
			got := map[string]bool{}
			for _, g := range rep.Gates {
				got[g.Name] = g.Passed
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("gates = %v, want %v", got, tt.want)
			}
			if rep.Passed != tt.passed {
				t.Errorf("passed = %v, want %v", rep.Passed, tt.passed)
			}
		})
	}
}

func TestEvaluateInvalid(t *testing.T) {
	bad := 1.5
	tests := []struct {
		name string
		// cases and results are the input.
		cases   []Case
		results []Result
		// opts are the options (zero value unless testing options).
		opts Options
		// ids are the case IDs the ValidationError must name, in order.
		ids []string
		// msg must appear in the error text.
		msg string
	}{
		{
			// Truncated export: b has no result. Scoring only a would
			// raise the averages, so it is an error.
			name:    "truncated results",
			cases:   []Case{answerable("a", ""), answerable("b", "")},
			results: []Result{hit("a")},
			ids:     []string{"b"}, msg: `case "b": has no result`,
		},
		{
			name:    "result for unknown case",
			cases:   []Case{answerable("a", "")},
			results: []Result{hit("a"), hit("zz")},
			ids:     []string{"zz"}, msg: `result "zz": no case with this id`,
		},
		{
			name:    "duplicate case id",
			cases:   []Case{answerable("a", ""), answerable("a", "")},
			results: []Result{hit("a")},
			ids:     []string{"a"}, msg: `case "a": duplicate case id`,
		},
		{
			name:    "duplicate result id",
			cases:   []Case{answerable("a", "")},
			results: []Result{hit("a"), hit("a")},
			ids:     []string{"a"}, msg: `result "a": duplicate result id`,
		},
		{
			name:    "missing ids",
			cases:   []Case{answerable("a", ""), {RelevantIDs: []string{}, AllowedIDs: []string{}}},
			results: []Result{hit("a"), {}},
			ids:     []string{}, msg: "case #2: missing id",
		},
		{
			name:    "relevant outside allowed",
			cases:   []Case{{ID: "a", RelevantIDs: []string{"d1", "d2"}, AllowedIDs: []string{"d1"}}},
			results: []Result{hit("a")},
			ids:     []string{"a"}, msg: `relevant id "d2" is not in allowed_ids`,
		},
		{
			name:    "repeated relevant id",
			cases:   []Case{{ID: "a", RelevantIDs: []string{"d1", "d1"}, AllowedIDs: []string{"d1"}}},
			results: []Result{hit("a")},
			ids:     []string{"a"}, msg: `relevant_ids lists "d1" more than once`,
		},
		{
			name:    "empty retrieved id",
			cases:   []Case{answerable("a", "")},
			results: []Result{{ID: "a", RetrievedIDs: []string{""}}},
			ids:     []string{"a"}, msg: "retrieved_ids contains an empty id",
		},
		{
			name: "no cases at all",
			ids:  []string{}, msg: "no cases to evaluate",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Evaluate(tt.cases, tt.results, tt.opts)
			var verr *ValidationError
			if !errors.As(err, &verr) {
				t.Fatalf("error = %v, want *ValidationError", err)
			}
			if got := verr.CaseIDs(); !reflect.DeepEqual(got, tt.ids) {
				t.Errorf("CaseIDs() = %q, want %q", got, tt.ids)
			}
			if !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("error %q does not contain %q", err, tt.msg)
			}
		})
	}

	t.Run("bad options", func(t *testing.T) {
		for _, opts := range []Options{{K: -1}, {MinRecall: &bad}, {MinMRR: &bad}} {
			_, err := Evaluate([]Case{answerable("a", "")}, []Result{hit("a")}, opts)
			if !errors.Is(err, ErrInvalidOptions) {
				t.Errorf("Evaluate(%+v) error = %v, want ErrInvalidOptions", opts, err)
			}
		}
	})
}

// TestReportJSON pins the wire schema: key names, null for undefined values
// and [] (not null) for empty lists.
func TestReportJSON(t *testing.T) {
	rep, err := Evaluate([]Case{blocked("b", "ops")}, []Result{abstain("b")}, Options{K: 3})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	stats := `{"answerable":0,"required_block":1,"supported":0,"false_blocks":0,"disclosures":0,"failed_to_abstain":0,` +
		`"utility":{"value":null,"numerator":0,"denominator":0},` +
		`"false_block_rate":{"value":null,"numerator":0,"denominator":0},` +
		`"disclosure_rate":{"value":0,"numerator":0,"denominator":1},` +
		`"failed_to_abstain_rate":{"value":0,"numerator":0,"denominator":1},` +
		`"recall_at_k":{"value":null,"numerator":0,"denominator":0},` +
		`"mrr_at_k":{"value":null,"numerator":0,"denominator":0},` +
		// The v2 additions follow the v1 keys, which keep their order.
		`"unsupported":0,"stale":0,"mistaken_not_found":0,"wrong_status":0,"justified_blocks":1,"affected_answers":0,"leaks":0,"invalid_citation_cases":0,` +
		`"mistaken_not_found_rate":{"value":null,"numerator":0,"denominator":0},` +
		`"stale_rate":{"value":null,"numerator":0,"denominator":0},` +
		`"correct_abstention":{"clarify":{"value":null,"numerator":0,"denominator":0},"conflict":{"value":null,"numerator":0,"denominator":0},` +
		`"not_applicable":{"value":null,"numerator":0,"denominator":0},"not_found":{"value":null,"numerator":0,"denominator":0}},` +
		`"citation_precision":{"value":null,"numerator":0,"denominator":0},` +
		`"citation_validity":{"value":null,"numerator":0,"denominator":0},` +
		`"precision_at_k":{"value":null,"numerator":0,"denominator":0},` +
		`"ndcg_at_k":{"value":null,"numerator":0,"denominator":0},` +
		`"latency_ms":{"count":0,"p50":null,"p95":null,"p99":null}}`
	want := `{"k":3,"passed":true,` +
		`"gates":[{"name":"no_forbidden","passed":true,"value":0,"threshold":0},` +
		`{"name":"citation_validity","passed":true,"value":0,"threshold":0},` +
		`{"name":"no_failed_to_abstain","passed":true,"value":0,"threshold":0}],` +
		`"summary":{"overall":` + stats + `,"personas":{"ops":` + stats + `}},` +
		`"cases":[{"id":"b","persona":"ops","forbidden_ids":[],"duplicate_count":0,` +
		`"recall_at_k":null,"fill_at_k":0,"reciprocal_rank":null,"outcome":"justified_block","action":"block","declared":"block"}]}`
	if string(raw) != want {
		t.Errorf("JSON mismatch\n got: %s\nwant: %s", raw, want)
	}
}

// TestFailedToAbstain: a required block answered from allowed evidence
// leaks nothing, yet it must count (per persona, over required-block
// cases) and fail the run through its own zero-tolerance gate.
func TestFailedToAbstain(t *testing.T) {
	cases := []Case{blocked("b1", "bob"), blocked("b2", "bob"), blocked("c1", "carol"), answerable("d1", "dave")}
	results := []Result{
		{ID: "b1", RetrievedIDs: []string{"pub"}, CitedIDs: []string{"pub"}}, // answered: failed to abstain
		abstain("b2", "pub"), // justified block
		abstain("c1"),        // justified block
		hit("d1"),
	}
	rep, err := Evaluate(cases, results, Options{})
	if err != nil {
		t.Fatalf("Evaluate: %v", err)
	}
	if rep.Passed {
		t.Error("passed = true, want false: a required block was answered")
	}
	var gate *Gate
	for i := range rep.Gates {
		if rep.Gates[i].Name == GateNoFailedToAbstain {
			gate = &rep.Gates[i]
		}
	}
	if gate == nil || gate.Passed || gate.Value == nil || *gate.Value != 1 || gate.Threshold != 0 {
		t.Errorf("%s gate = %+v, want failing with value 1, threshold 0", GateNoFailedToAbstain, gate)
	}
	tests := []struct {
		// key is the persona; "*" selects the overall stats.
		key string
		// count is failed_to_abstain; rate is failed_to_abstain / required_block.
		count int
		rate  wantRatio
	}{
		{key: "*", count: 1, rate: wantRatio{ptr(1.0 / 3), 1, 3}},
		{key: "bob", count: 1, rate: wantRatio{ptr(0.5), 1, 2}},
		{key: "carol", count: 0, rate: wantRatio{ptr(0), 0, 1}},
		// No required-block case: the rate is undefined, not 0.
		{key: "dave", count: 0, rate: wantRatio{nil, 0, 0}},
	}
	for _, tt := range tests {
		st, ok := rep.Summary.Overall, true
		if tt.key != "*" {
			st, ok = rep.Summary.Personas[tt.key]
		}
		if !ok {
			t.Fatalf("no stats for persona %q", tt.key)
		}
		if st.FailedToAbstain != tt.count {
			t.Errorf("%s: failed_to_abstain = %d, want %d", tt.key, st.FailedToAbstain, tt.count)
		}
		checkRatio(t, tt.key+": failed_to_abstain_rate", st.FailedToAbstainRate, tt.rate)
	}
}

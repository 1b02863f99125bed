package suite_test

import (
	"context"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/ragcanary/ragcanary/internal/dev/testutil/targettest"
	"github.com/ragcanary/ragcanary/internal/driver"
	"github.com/ragcanary/ragcanary/internal/manifests"
	"github.com/ragcanary/ragcanary/internal/ragtarget"
	"github.com/ragcanary/ragcanary/internal/scoring"
	"github.com/ragcanary/ragcanary/internal/suite"
	"github.com/ragcanary/ragcanary/internal/target"
)

// samples is config/samples, whose EvalSuite make demo runs.
var samples = filepath.Join("..", "..", "config", "samples")

// demoTarget is ragtarget configured as hack/demo starts it (its --token,
// --source-token, sync and cache flags) with mode as its filter, serving
// the sample suite's documents. The demo waits for the syncs; here they run
// at once.
func demoTarget(t *testing.T, mode ragtarget.FilterMode) string {
	t.Helper()
	tg := targettest.Start(t, ragtarget.Config{
		SourceToken:         "demo-source-token",
		Tokens:              map[string]string{"demo-alice-token": "alice@example.com", "demo-mallory-token": "mallory@example.com"},
		ContentSyncInterval: 2 * time.Second, ACLSyncInterval: 10 * time.Second, AnswerCacheTTL: 20 * time.Second,
		FilterMode: mode,
	})
	tg.Plant(t, sampleDocuments(t)...)
	return tg.URL
}

func sampleDocuments(t *testing.T) []driver.Document {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(samples, "eval", "access-isolation-documents.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var docs []driver.Document
	if err := yaml.UnmarshalStrict(raw, &docs); err != nil || len(docs) == 0 {
		t.Fatalf("sample documents: %v (%d documents)", err, len(docs))
	}
	return docs
}

// runSample runs the sample EvalSuite, with its Corpus, Personas and their
// Secrets, the way live mode and a SuiteRun do: resolved, frozen, executed
// through the door and scored. Only the corpus URL differs from the sample:
// the test's ragtarget listens on a free loopback port.
func runSample(t *testing.T, url string) suite.Result {
	t.Helper()
	ctx := context.Background()
	m, err := manifests.Load([]string{
		filepath.Join(samples, "ragcanary_v1alpha1_evalsuite.yaml"),
		filepath.Join(samples, "ragcanary_v1alpha1_corpus.yaml"),
		filepath.Join(samples, "ragcanary_v1alpha1_persona.yaml"),
	}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	s, err := m.Suite()
	if err != nil {
		t.Fatal(err)
	}
	m.NormalizeNamespaces(s.Namespace)
	def, err := suite.Resolve(ctx, m, s)
	if err != nil {
		t.Fatalf("resolving the sample suite: %v", err)
	}
	gates, err := suite.ParseGates(s.Spec.Gates)
	if err != nil {
		t.Fatal(err)
	}
	plan, err := suite.Freeze(def, s, gates, 0, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	def.Corpus.Spec.Driver.HTTP.URL = url
	allow, err := target.ParseAllowlist([]string{url})
	if err != nil {
		t.Fatal(err)
	}
	tgt, corpus, err := suite.BuildTarget(ctx, &target.Door{Reader: m, Allow: allow, DefaultLimit: target.DefaultLimit}, plan, def.Corpus, def.Personas)
	if err != nil {
		t.Fatalf("building the target: %v", err)
	}
	defer corpus.Release()
	res, cleanup, err := suite.RunPlan(ctx, suite.Run{Plan: plan, Target: tgt, Source: corpus.Driver})
	if err != nil || cleanup != nil {
		t.Fatalf("running the sample suite: %v (cleanup %v)", err, cleanup)
	}
	return res
}

// outcomes maps case/persona to its outcome, with ", disclosed" for a leak
// the outcome does not name.
func outcomes(rep scoring.Report) map[string]string {
	out := map[string]string{}
	for _, c := range rep.Cases {
		o := string(c.Outcome)
		if c.Leaked() && c.Outcome != scoring.OutcomeDisclosure {
			o += ", disclosed"
		}
		out[c.ID] = o
	}
	return out
}

// TestSampleSuitePassesAgainstTheDemoTarget: every expectation of the sample
// EvalSuite is what ragtarget, configured as make demo runs it, really does,
// so the demo's suite passes every gate — mallory included, who gets the
// handbook's answer to the salary question and nothing about the VPN.
func TestSampleSuitePassesAgainstTheDemoTarget(t *testing.T) {
	res := runSample(t, demoTarget(t, ragtarget.FilterPrefilter))
	rep := suite.FinalReport(res)
	for _, g := range rep.Gates {
		if !g.Passed {
			t.Errorf("gate %s failed: value %v, failures %+v", g.Name, showValue(g.Value), g.Failures)
		}
	}
	if !res.Passed || !rep.Passed || len(res.Errored) != 0 {
		t.Errorf("passed %v (report %v) with %d probe errors", res.Passed, rep.Passed, len(res.Errored))
	}
	want := map[string]string{
		"salary-bands/alice": "supported", "salary-bands/mallory": "supported",
		"vpn-setup/alice": "supported", "vpn-setup/mallory": "justified_block",
	}
	if got := outcomes(rep); !maps.Equal(got, want) {
		t.Errorf("outcomes = %v, want %v", got, want)
	}
}

// TestSampleSuiteFailsWhenTheTargetIgnoresAccess is docs/eval.md's failing
// example: ragtarget --filter-mode none serves mallory the salary bands and
// the VPN guide. Both leaks fail no_forbidden; the one in the answerable
// salary case is flagged, not renamed, so the disclosure rate stays 1/1
// while mallory has 2 affected answers.
func TestSampleSuiteFailsWhenTheTargetIgnoresAccess(t *testing.T) {
	res := runSample(t, demoTarget(t, ragtarget.FilterNone))
	rep := suite.FinalReport(res)
	if res.Passed || rep.Passed {
		t.Fatal("the sample suite passed against a target that ignores access lists")
	}
	failed := map[string][]string{}
	for _, g := range rep.Gates {
		for _, f := range g.Failures {
			failed[g.Name] = append(failed[g.Name], f.Persona+"/"+f.Stratum)
		}
	}
	// salary-bands/mallory also cites the bands, which she may not read.
	wantFailed := map[string][]string{"no_forbidden": {"mallory/hr", "mallory/it"}, "citation_validity": {"mallory/hr"}}
	if !maps.EqualFunc(failed, wantFailed, slices.Equal[[]string]) {
		t.Errorf("failed gates = %v, want %v", failed, wantFailed)
	}
	want := map[string]string{
		"salary-bands/alice": "supported", "salary-bands/mallory": "unsupported, disclosed",
		"vpn-setup/alice": "supported", "vpn-setup/mallory": "disclosure",
	}
	if got := outcomes(rep); !maps.Equal(got, want) {
		t.Errorf("outcomes = %v, want %v", got, want)
	}
	m := rep.Summary.Personas["mallory"]
	if m.AffectedAnswers != 2 || m.DisclosureRate.Numerator != 1 || m.DisclosureRate.Denominator != 1 {
		t.Errorf("mallory: affected answers %d, disclosure rate %+v; want 2 and 1/1", m.AffectedAnswers, m.DisclosureRate)
	}
}

func showValue(v *float64) any {
	if v == nil {
		return "undefined"
	}
	return *v
}

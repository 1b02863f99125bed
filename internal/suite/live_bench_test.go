package suite_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"k8s.io/utils/clock"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/driver"
	"github.com/ragcanary/ragcanary/internal/ragtarget"
	"github.com/ragcanary/ragcanary/internal/suite"
	"github.com/ragcanary/ragcanary/internal/target"
)

// Live benchmark shape: the most cases a suite may hold (MaxSuiteCases,
// 3,400) × 2 personas = 6,800 executions (search only, one request each)
// over 200 documents; bob may read one document in ten, alice all of them.
const (
	benchLiveDocs        = 200
	benchLiveCases       = suite.MaxSuiteCases
	benchLiveNarrowEvery = 10
	benchLiveParallelism = 32
	benchLiveBurst       = 50
)

func benchLiveDocuments() []driver.Document {
	docs := make([]driver.Document, benchLiveDocs)
	for i := range docs {
		p := []string{alicePrinc}
		if i%benchLiveNarrowEvery == 0 {
			p = append(p, bobPrinc)
		}
		docs[i] = driver.Document{ID: fmt.Sprintf("doc-%03d", i), Title: fmt.Sprintf("Report %d", i),
			Body: fmt.Sprintf("Project topic%03d status report: milestones, owners and risks for topic%03d.", i, i), Principals: p}
	}
	return docs
}

// benchLiveCases asks about document i%200: answerable for alice, and for
// bob when he may read it; else he may get only what he may read.
func benchLiveCaseList() []v1alpha1.EvalCase {
	var all, narrow []string
	for i := range benchLiveDocs {
		id := fmt.Sprintf("doc-%03d#0", i)
		all = append(all, id)
		if i%benchLiveNarrowEvery == 0 {
			narrow = append(narrow, id)
		}
	}
	cases := make([]v1alpha1.EvalCase, benchLiveCases)
	for i := range cases {
		d := i % benchLiveDocs
		rel := []string{fmt.Sprintf("doc-%03d#0", d)}
		// Where bob may not read the document, ragtarget still answers from
		// the status reports he may read (they share the words): no
		// abstention is expected, only that nothing forbidden comes back.
		bob := v1alpha1.Expectation{Persona: "bob", AllowedIDs: narrow}
		if d%benchLiveNarrowEvery == 0 {
			bob = v1alpha1.Expectation{Persona: "bob", RelevantIDs: rel, AllowedIDs: narrow}
		}
		cases[i] = v1alpha1.EvalCase{ID: fmt.Sprintf("case-%04d", i), Question: fmt.Sprintf("topic%03d status", d),
			Expectations: []v1alpha1.Expectation{{Persona: "alice", RelevantIDs: rel, AllowedIDs: all}, bob}}
	}
	return cases
}

// benchLiveOrigins spreads n cases over spec.cases and ConfigMap keys as a
// suite holding that many would: at most one case list's worth in each.
func benchLiveOrigins(n int) []string {
	origins := make([]string, n)
	for i := range origins {
		origins[i] = fmt.Sprintf("ConfigMap cases key part-%02d", i/200)
	}
	return origins
}

// BenchmarkLiveSuite executes 6,800 case × persona evaluations against
// an in-process ragtarget over real HTTP through suite.Execute, at the
// corpus rate limits the controller would apply (the shared probe limiter,
// burst 50), and scores them with suite.Score. Each iteration is one whole
// run: ns/op is its duration, exec/s the achieved rate. "unlimited" shows
// what the target and executor sustain on this machine without a limit.
func BenchmarkLiveSuite(b *testing.B) {
	lt := startLiveTarget(b, ragtarget.Config{}, benchLiveDocuments())
	cases := benchLiveCaseList()
	if err := suite.Validate(cases, benchLiveOrigins(len(cases))); err != nil {
		b.Fatal(err)
	}
	for _, rps := range []int32{500, 2000, 0} {
		name := fmt.Sprintf("rate=%d", rps)
		if rps == 0 {
			name = "rate=unlimited"
		}
		b.Run(name, func(b *testing.B) {
			wait := func(context.Context) error { return nil }
			if rps > 0 {
				limiters := target.NewLimiters(clock.RealClock{})
				limiters.Set("bench", target.Limit{RequestsPerSecond: rps, Burst: benchLiveBurst})
				wait = func(ctx context.Context) error { return limiters.Wait(ctx, "bench") }
			}
			target := lt.target(wait, benchLiveParallelism)
			plan, err := suite.PlanCases(cases, liveK, suite.Gates{})
			if err != nil {
				b.Fatal(err)
			}
			var elapsed time.Duration
			var runs int
			for b.Loop() {
				start := time.Now()
				execs, err := suite.Execute(context.Background(), target, plan)
				if err != nil {
					b.Fatal(err)
				}
				res, err := suite.Score(plan, execs, nil)
				if err != nil {
					b.Fatal(err)
				}
				elapsed += time.Since(start)
				runs++
				if !res.Passed || res.Executions != 2*benchLiveCases {
					b.Fatalf("executions=%d errored=%d disclosures=%d passed=%v gates %+v; want %d clean",
						res.Executions, len(res.Errored), res.Disclosures, res.Passed, res.Report.Gates, 2*benchLiveCases)
				}
			}
			b.ReportMetric(float64(2*benchLiveCases*runs)/elapsed.Seconds(), "exec/s")
			b.ReportMetric(elapsed.Seconds()/float64(runs), "s/run")
		})
	}
}

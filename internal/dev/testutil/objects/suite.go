package objects

import (
	"time"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
)

// SuiteOption adjusts an EvalSuite the builder made.
type SuiteOption func(*v1alpha1.EvalSuite)

// EvalSuite asks cases against CorpusName on demand only (no schedule),
// scoring the top 10 with 4 executions at once and zero tolerance gates.
// The API server rejects a suite without cases.
func EvalSuite(ns, name string, cases []v1alpha1.EvalCase, opts ...SuiteOption) *v1alpha1.EvalSuite {
	s := &v1alpha1.EvalSuite{
		ObjectMeta: meta(ns, name),
		Spec: v1alpha1.EvalSuiteSpec{
			CorpusRef:   Ref(CorpusName),
			K:           10,
			Parallelism: 4,
			Cases:       cases,
		},
	}
	for _, o := range opts {
		o(s)
	}
	return s
}

// SuiteOnCorpus runs the suite against the Corpus named name.
func SuiteOnCorpus(name string) SuiteOption {
	return func(s *v1alpha1.EvalSuite) { s.Spec.CorpusRef = Ref(name) }
}

// TopK scores the top k results with parallelism executions at once.
func TopK(k, parallelism int32) SuiteOption {
	return func(s *v1alpha1.EvalSuite) { s.Spec.K, s.Spec.Parallelism = k, parallelism }
}

// Fixture plants f for each run; its visibility timeout is the CRD's 2m
// when f leaves it unset.
func Fixture(f v1alpha1.Fixture) SuiteOption {
	return func(s *v1alpha1.EvalSuite) {
		if f.VisibilityTimeout == nil {
			f.VisibilityTimeout = DurationPtr(2 * time.Minute)
		}
		s.Spec.Fixture = &f
	}
}

// ScheduledEvery creates a run every interval.
func ScheduledEvery(every time.Duration) SuiteOption {
	return func(s *v1alpha1.EvalSuite) { s.Spec.Schedule = &v1alpha1.Schedule{Every: DurationPtr(every)} }
}

// SuiteRun is one execution of the EvalSuite named suite.
func SuiteRun(ns, name, suite string) *v1alpha1.SuiteRun {
	return &v1alpha1.SuiteRun{ObjectMeta: meta(ns, name), Spec: v1alpha1.SuiteRunSpec{SuiteRef: Ref(suite)}}
}

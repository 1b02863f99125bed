package measure

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
)

// contentProbe is one content probe observed from start to start+0.1s.
type contentProbe struct {
	old, fresh Outcome
	start      float64
}

// runContent applies probes to a fresh search measurement and finalizes it.
func runContent(probes []contentProbe, confirmations int32) v1alpha1.SurfaceMeasurement {
	m := v1alpha1.SurfaceMeasurement{Surface: v1alpha1.SurfaceSearch}
	for _, p := range probes {
		RecordContent(&m, p.old, p.fresh, at(p.start), at(p.start+0.1), confirmations)
	}
	Finalize(&m, rev, 60*time.Second)
	FinalizeContent(&m, rev)
	return m
}

func TestRecordContent(t *testing.T) {
	tests := []struct {
		name   string
		probes []contentProbe
		// settled: old content excluded and new content seen.
		settled bool
		// newLower, newUpper: the new content's bounds in seconds; -1 unset.
		newLower, newUpper float64
		// oldLower, oldUpper: the old content's exclusion bounds; -1 unset.
		oldLower, oldUpper float64
		reappearances      int32
		state              ContentState
	}{
		{name: "the update replaces the content between two probes",
			probes: []contentProbe{
				{Present, Absent, 12}, {Present, Absent, 13}, {Absent, Present, 14}, {Absent, Present, 15},
			},
			// new: after 13 (last unseen start) − 11 (ack) = 2, by 14.1 − 10 (req) = 4.1.
			settled: true, newLower: 2, newUpper: 4.1, oldLower: 2, oldUpper: 4.1, state: ContentSeen},
		{name: "new content appears before the old goes (two replicas)",
			probes: []contentProbe{
				{Present, Absent, 12}, {Present, Present, 13}, {Present, Present, 14}, {Absent, Present, 15}, {Absent, Present, 16},
			},
			// The old payload served in the probes at 13 and 14, after the new one appeared: two reappearances.
			settled: true, newLower: 1, newUpper: 3.1, oldLower: 3, oldUpper: 5.1, reappearances: 2, state: ContentSeen},
		{name: "errors are neither sightings nor absences of the new content",
			probes: []contentProbe{
				{Present, Absent, 12}, {Error, Error, 13}, {Error, Error, 14}, {Absent, Present, 15}, {Absent, Present, 16},
			},
			settled: true, newLower: 1, newUpper: 5.1, oldLower: 1, oldUpper: 5.1, state: ContentSeen},
		{name: "old gone but new content never seen is right-censored at the last probe that missed it",
			probes: []contentProbe{
				{Absent, Absent, 12}, {Absent, Absent, 13}, {Absent, Absent, 40},
			},
			newLower: 29, newUpper: -1, oldLower: 0, oldUpper: 2.1, state: ContentNotSeen},
		{name: "only errors about the new content: nothing established",
			probes: []contentProbe{
				{Absent, Error, 12}, {Absent, Error, 13},
			},
			newLower: -1, newUpper: -1, oldLower: 0, oldUpper: 2.1, state: ContentUnknown},
		{name: "old content back after it went and after the new was seen counts once per probe",
			probes: []contentProbe{
				{Absent, Present, 12}, {Present, Present, 13}, {Absent, Present, 14}, {Absent, Present, 15},
			},
			settled: true, newLower: 0, newUpper: 2.1, oldLower: 2, oldUpper: 4.1, reappearances: 1, state: ContentSeen},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := runContent(tc.probes, 2)
			if got := Settled(&m); got != tc.settled {
				t.Errorf("settled = %v, want %v", got, tc.settled)
			}
			if got := ClassifyContent(m.NewContent); got != tc.state {
				t.Errorf("content state = %v, want %v", got, tc.state)
			}
			checkBound(t, "new lower", m.NewContent.Bounds, true, tc.newLower)
			checkBound(t, "new upper", m.NewContent.Bounds, false, tc.newUpper)
			checkBound(t, "old lower", m.Bounds, true, tc.oldLower)
			checkBound(t, "old upper", m.Bounds, false, tc.oldUpper)
			if m.Reappearances != tc.reappearances {
				t.Errorf("reappearances = %d, want %d", m.Reappearances, tc.reappearances)
			}
		})
	}
}

// checkBound compares one bound with want seconds (-1: must be unset).
func checkBound(t *testing.T, what string, b *v1alpha1.ExclusionBounds, lower bool, want float64) {
	t.Helper()
	var got *time.Duration
	if b != nil {
		d := b.Upper
		if lower {
			d = b.Lower
		}
		if d != nil {
			got = &d.Duration
		}
	}
	switch {
	case want < 0 && got != nil:
		t.Errorf("%s = %s, want unset", what, *got)
	case want >= 0 && got == nil:
		t.Errorf("%s unset, want %gs", what, want)
	case want >= 0 && *got != secs(want):
		t.Errorf("%s = %s, want %s", what, *got, secs(want))
	}
}

func TestLater(t *testing.T) {
	b := func(lower, upper float64) *v1alpha1.ExclusionBounds {
		out := &v1alpha1.ExclusionBounds{Lower: dur(lower)}
		if upper >= 0 {
			out.Upper = dur(upper)
		}
		return out
	}
	tests := []struct {
		name string
		in   []*v1alpha1.ExclusionBounds
		// lower, upper of the result in seconds; -1 unset; nilOut: no result.
		lower, upper float64
		nilOut       bool
	}{
		{name: "larger of each bound", in: []*v1alpha1.ExclusionBounds{b(1, 4), b(2, 3)}, lower: 2, upper: 4},
		{name: "a censored side censors the result", in: []*v1alpha1.ExclusionBounds{b(1, 4), b(30, -1)}, lower: 30, upper: -1},
		{name: "an unknown side leaves nothing established", in: []*v1alpha1.ExclusionBounds{b(1, 4), nil}, nilOut: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Later(tc.in...)
			if tc.nilOut {
				if got != nil {
					t.Fatalf("Later = %+v, want nil", got)
				}
				return
			}
			checkBound(t, "lower", got, true, tc.lower)
			checkBound(t, "upper", got, false, tc.upper)
		})
	}
}

func TestContentVerdict(t *testing.T) {
	slo := func(v1alpha1.Surface) time.Duration { return 10 * time.Second }
	fresh := runContent([]contentProbe{{Present, Absent, 12}, {Absent, Present, 14}, {Absent, Present, 15}}, 2)
	late := runContent([]contentProbe{{Present, Absent, 12}, {Present, Absent, 20}, {Absent, Present, 25}, {Absent, Present, 26}}, 2)
	staleAtTimeout := runContent([]contentProbe{{Present, Present, 12}, {Present, Present, 13}}, 2)
	neverNewShort := runContent([]contentProbe{{Absent, Absent, 12}, {Absent, Absent, 13}, {Absent, Absent, 15}}, 2)
	neverNewLong := runContent([]contentProbe{{Absent, Absent, 12}, {Absent, Absent, 13}, {Absent, Absent, 40}}, 2)
	newUnknown := runContent([]contentProbe{{Absent, Error, 12}, {Absent, Error, 13}}, 2)
	tests := []struct {
		name     string
		surfaces []v1alpha1.SurfaceMeasurement
		want     v1alpha1.Verdict
	}{
		{name: "fresh within the SLO", surfaces: []v1alpha1.SurfaceMeasurement{fresh}, want: v1alpha1.VerdictSLOMet},
		{name: "fresh after the SLO", surfaces: []v1alpha1.SurfaceMeasurement{late}, want: v1alpha1.VerdictSLOBreached},
		{name: "old content at the timeout is not excluded", surfaces: []v1alpha1.SurfaceMeasurement{staleAtTimeout}, want: v1alpha1.VerdictNotExcluded},
		{name: "new content unseen, the run ended within the SLO", surfaces: []v1alpha1.SurfaceMeasurement{neverNewShort}, want: v1alpha1.VerdictInconclusive},
		{name: "new content unseen beyond the SLO is a certain breach", surfaces: []v1alpha1.SurfaceMeasurement{neverNewLong}, want: v1alpha1.VerdictSLOBreached},
		{name: "new content never answered about is inconclusive, never met", surfaces: []v1alpha1.SurfaceMeasurement{newUnknown}, want: v1alpha1.VerdictInconclusive},
		{name: "no surface is inconclusive", want: v1alpha1.VerdictInconclusive},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, msg := Verdict(RunOutcome{Surfaces: tc.surfaces, SLO: slo, Revocation: rev, Content: true})
			if got != tc.want {
				t.Errorf("verdict %s (%s), want %s", got, msg, tc.want)
			}
		})
	}
}

func TestContentFreshnessSLO(t *testing.T) {
	corpus := func(f v1alpha1.Freshness) *v1alpha1.Corpus {
		return &v1alpha1.Corpus{Spec: v1alpha1.CorpusSpec{Freshness: f}}
	}
	spec := &v1alpha1.CanarySpec{}
	tests := []struct {
		name   string
		corpus *v1alpha1.Corpus
		want   time.Duration
	}{
		{name: "contentFreshnessSLO", corpus: corpus(v1alpha1.Freshness{ContentFreshnessSLO: dur(7), ExclusionSLO: dur(60)}), want: 7 * time.Second},
		{name: "deprecated visibilitySLO is still read", corpus: corpus(v1alpha1.Freshness{VisibilitySLO: dur(8), ExclusionSLO: dur(60)}), want: 8 * time.Second},
		{name: "falls back to the exclusion SLO", corpus: corpus(v1alpha1.Freshness{ExclusionSLO: dur(60)}), want: time.Minute},
		{name: "no corpus: the default", want: DefaultExclusionSLO},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got, src := ContentFreshnessSLO(spec, tc.corpus, v1alpha1.SurfaceSearch); got != tc.want {
				t.Errorf("SLO %s (%s), want %s", got, src, tc.want)
			}
		})
	}
}

// TestJudgedSLO: an UpdateContent run is judged by the content-freshness
// SLO, every other method by the exclusion SLO, on the same corpus.
func TestJudgedSLO(t *testing.T) {
	corpus := &v1alpha1.Corpus{Spec: v1alpha1.CorpusSpec{Freshness: v1alpha1.Freshness{
		ContentFreshnessSLO: dur(7), ExclusionSLO: dur(60)}}}
	content := &v1alpha1.CanarySpec{Revocation: v1alpha1.Revocation{Method: v1alpha1.RevokeUpdateContent}}
	grant := &v1alpha1.CanarySpec{}
	if got, _ := JudgedSLO(content, corpus, v1alpha1.SurfaceAnswer); got != 7*time.Second {
		t.Errorf("UpdateContent judged by %s, want the 7s content-freshness SLO", got)
	}
	if got, _ := JudgedSLO(grant, corpus, v1alpha1.SurfaceAnswer); got != time.Minute {
		t.Errorf("RemoveGrant judged by %s, want the 1m exclusion SLO", got)
	}
}

// TestSLOSourcesFitStatus: every source text the SLO rules give fits the
// sloSource fields runs and summaries keep it in (their maxLength in the
// generated CRDs), or the API server would refuse the status write that
// carries the verdict.
func TestSLOSourcesFitStatus(t *testing.T) {
	limit := 0
	for _, crd := range []string{"ragcanary.dev_canaryruns.yaml", "ragcanary.dev_revocationcanaries.yaml"} {
		raw, err := os.ReadFile(filepath.Join("..", "..", "config", "crd", "bases", crd))
		if err != nil {
			t.Fatal(err)
		}
		m := regexp.MustCompile(`sloSource:\n(?:.*\n){0,8}?\s+maxLength: (\d+)`).FindSubmatch(raw)
		if m == nil {
			t.Fatalf("%s has no sloSource maxLength", crd)
		}
		n, _ := strconv.Atoi(string(m[1]))
		if limit == 0 || n < limit {
			limit = n
		}
	}
	d := &metav1.Duration{Duration: time.Minute}
	corpora := []*v1alpha1.Corpus{nil, {}, {Spec: v1alpha1.CorpusSpec{Freshness: v1alpha1.Freshness{
		ExclusionSLO: d, CacheInvalidationSLO: d}}}, {Spec: v1alpha1.CorpusSpec{Freshness: v1alpha1.Freshness{VisibilitySLO: d}}},
		{Spec: v1alpha1.CorpusSpec{Freshness: v1alpha1.Freshness{ContentFreshnessSLO: d}}}}
	for _, method := range []v1alpha1.RevocationMethod{v1alpha1.RevokeRemoveGrant, v1alpha1.RevokeUpdateContent} {
		for _, spec := range []v1alpha1.CanarySpec{{}, {ExclusionSLO: d}} {
			spec.Revocation.Method = method
			for _, c := range corpora {
				for _, s := range []v1alpha1.Surface{v1alpha1.SurfaceSearch, v1alpha1.SurfaceAnswer, v1alpha1.SurfaceConversation} {
					if _, source := JudgedSLO(&spec, c, s); len(source) > limit || source == "" {
						t.Errorf("source %q (%d bytes) does not fit sloSource (maxLength %d)", source, len(source), limit)
					}
				}
			}
		}
	}
}

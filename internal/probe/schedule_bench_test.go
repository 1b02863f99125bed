package probe

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"sync"
	"testing"
	"text/tabwriter"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/dev/testutil"
	"github.com/ragcanary/ragcanary/internal/dev/testutil/targettest"
	"github.com/ragcanary/ragcanary/internal/driver"
	"github.com/ragcanary/ragcanary/internal/measure"
	"github.com/ragcanary/ragcanary/internal/ragtarget"
	"github.com/ragcanary/ragcanary/internal/target"
)

// BenchmarkProbeSchedules measures Fixed (interval 1s) against Adaptive
// (precision 10%) on ragtarget served over real HTTP, with ACL lags of 10s,
// 2m and 20m and the SLO at 5m, in simulated time: the engine and ragtarget
// run on fake clocks the benchmark moves from one probe round to the next,
// so a 20-minute lag takes seconds. It prints probes per run, the bounds,
// their width and the verdict side by side, and the Fixed/Adaptive probe
// ratio, measured up to 20m and computed for 24h (Adaptive is run, Fixed's
// 86,400 rounds are counted, not sent). It fails if a goal is missed:
// width ≤ max(10% of the lag, interval + probe duration), the same verdict,
// ≥10× fewer probes at 20m and ≥100× at 24h. Run it once:
//
//	go test ./internal/probe/ -run '^$' -bench BenchmarkProbeSchedules -benchtime 1x
func BenchmarkProbeSchedules(b *testing.B) {
	const (
		interval      = time.Second
		precision     = 0.1
		confirmations = 3
		slo           = 5 * time.Minute
	)
	adaptive := Schedule{Adaptive: true, Precision: precision, MaxInterval: 10 * time.Minute}
	var out bytes.Buffer
	w := tabwriter.NewWriter(&out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "lag\tschedule\tprobes\tbounds\twidth\twidth goal\tverdict\tFixed/Adaptive probes\t")
	for _, lag := range []time.Duration{10 * time.Second, 2 * time.Minute, 20 * time.Minute} {
		fixed := runLag(b, lag, interval, confirmations, slo, Schedule{})
		adapt := runLag(b, lag, interval, confirmations, slo, adaptive)
		ratio := float64(fixed.probes) / float64(adapt.probes)
		// A probe takes no simulated time, so interval + probe duration is interval.
		goal := max(time.Duration(precision*float64(lag)), interval)
		for _, r := range []struct {
			name string
			res  lagResult
		}{{"Fixed", fixed}, {"Adaptive", adapt}} {
			cell := ""
			if r.name == "Adaptive" {
				cell = fmt.Sprintf("%.1f×", ratio)
			}
			fmt.Fprintf(w, "%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t\n", lag, r.name, r.res.probes, r.res.bounds(), r.res.width(), goal, r.res.verdict, cell)
			if !r.res.contains(lag) {
				b.Errorf("%s at %s: bounds %s miss the lag", r.name, lag, r.res.bounds())
			}
		}
		if adapt.width() > goal {
			b.Errorf("Adaptive at %s: width %s above the goal %s", lag, adapt.width(), goal)
		}
		if adapt.verdict != fixed.verdict {
			b.Errorf("at %s Adaptive's verdict %s differs from Fixed's %s", lag, adapt.verdict, fixed.verdict)
		}
		if lag == 20*time.Minute && ratio < 10 {
			b.Errorf("at 20m Fixed sent only %.1f× the probes of Adaptive, want ≥ 10×", ratio)
		}
	}
	// 24h: Adaptive is run; Fixed is counted: one round per interval until
	// the first negative, then the confirmations.
	const day = 24 * time.Hour
	adapt := runLag(b, day, interval, confirmations, slo, adaptive)
	fixedProbes := int(math.Ceil(float64(day)/float64(interval))) + confirmations
	ratio := float64(fixedProbes) / float64(adapt.probes)
	fmt.Fprintf(w, "%s\tFixed (computed)\t%d\t\t%s\t\t%s\t\t\n", day, fixedProbes, interval, v1alpha1.VerdictSLOBreached)
	fmt.Fprintf(w, "%s\tAdaptive\t%d\t%s\t%s\t%s\t%s\t%.0f×\t\n", day, adapt.probes, adapt.bounds(), adapt.width(), time.Duration(precision*float64(day)), adapt.verdict, ratio)
	if ratio < 100 {
		b.Errorf("at 24h Fixed would send only %.0f× the probes of Adaptive, want ≥ 100×", ratio)
	}
	if adapt.width() > time.Duration(precision*float64(day)) || !adapt.contains(day) {
		b.Errorf("Adaptive at 24h: bounds %s, want the lag inside and width ≤ 10%%", adapt.bounds())
	}
	// At the SLO's edge: Adaptive's verdict must be the one the lag
	// deserves; Fixed's is whatever its interval allows.
	for _, lag := range []time.Duration{slo - 500*time.Millisecond, slo + 500*time.Millisecond} {
		want := v1alpha1.VerdictSLOMet
		if lag > slo {
			want = v1alpha1.VerdictSLOBreached
		}
		fixed := runLag(b, lag, interval, confirmations, slo, Schedule{})
		adapt := runLag(b, lag, interval, confirmations, slo, adaptive)
		fmt.Fprintf(w, "%s\tFixed\t%d\t%s\t%s\t\t%s\t\t\n", lag, fixed.probes, fixed.bounds(), fixed.width(), fixed.verdict)
		fmt.Fprintf(w, "%s\tAdaptive\t%d\t%s\t%s\t\t%s\t%.1f×\t\n", lag, adapt.probes, adapt.bounds(), adapt.width(), adapt.verdict,
			float64(fixed.probes)/float64(adapt.probes))
		if adapt.verdict != want || !adapt.contains(lag) {
			b.Errorf("Adaptive at %s (SLO %s): %s with bounds %s, want %s", lag, slo, adapt.verdict, adapt.bounds(), want)
		}
	}
	_ = w.Flush()
	// Printed, not logged: the testing package trims a benchmark's log.
	fmt.Printf("probe schedules on ragtarget (real HTTP, simulated time), SLO %s, confirmations %d, Adaptive maxInterval %s:\n%s",
		slo, confirmations, adaptive.MaxInterval, out.String())
	b.ReportMetric(ratio, "fixed/adaptive-probes-24h")
}

// lagResult is one simulated run's exclusion measurement.
type lagResult struct {
	probes       int32
	lower, upper time.Duration
	verdict      v1alpha1.Verdict
}

func (r lagResult) width() time.Duration { return r.upper - r.lower }
func (r lagResult) bounds() string       { return fmt.Sprintf("[%s, %s]", r.lower, r.upper) }
func (r lagResult) contains(lag time.Duration) bool {
	return r.lower <= lag && lag <= r.upper
}

// runLag plants a canary on a fresh ragtarget whose ACL sync runs every
// lag, revokes it right after a sync (so the revocation reaches the index
// exactly lag later) and lets the probe engine measure exclusion under
// sched, stepping both fake clocks from one round to the next. ragtarget's
// clock always reaches a sync before the engine's clock reaches a round at
// or after it, so a probe never races the sync it should observe.
func runLag(b *testing.B, lag, interval time.Duration, confirmations int32, slo time.Duration, sched Schedule) lagResult {
	b.Helper()
	const (
		sourceToken              = "bench-source-token"
		alice       driver.Token = "bench-alice-token"
		doc                      = "rc-bench"
	)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	rtClock := testingclock.NewFakeClock(t0)
	tg := targettest.Start(b, ragtarget.Config{SourceToken: sourceToken, Tokens: map[string]string{alice.Reveal(): "alice"},
		ContentSyncInterval: lag, ACLSyncInterval: lag, Clock: rtClock})
	svc, drv := tg.Service, tg.Driver(b, 5*time.Second)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	tgt := Target{DocumentID: doc, Handle: "rcbenchhandle", Payload: "rcbenchpayload"}
	if err := drv.CreateDocument(ctx, driver.Document{ID: doc, Title: "canary",
		Body: "Its handle is " + tgt.Handle + " and its payload is " + tgt.Payload, Principals: []string{"alice"}}); err != nil {
		b.Fatal(err)
	}
	syncTo(b, rtClock, svc, t0.Add(lag), 1)
	if Probe(ctx, drv, v1alpha1.SurfaceSearch, alice, tgt) != measure.Present {
		b.Fatal("the canary is not visible after the first sync")
	}

	engClock := &armedClock{FakeClock: testingclock.NewFakeClock(t0.Add(lag)), armed: make(chan time.Time, 1)}
	requested := engClock.Now()
	if err := drv.Revoke(ctx, doc, "alice"); err != nil {
		b.Fatal(err)
	}
	rev := measure.Revocation{Requested: requested, Acknowledged: engClock.Now()}
	timeout := max(30*time.Minute, 2*lag)
	sched.Start = requested
	sched.Deadlines = []time.Time{requested.Add(slo), rev.Acknowledged.Add(timeout)}
	e := NewEngine(engClock, target.NewLimiters(engClock.FakeClock))
	key := types.NamespacedName{Namespace: "bench", Name: fmt.Sprint(lag)}
	st := e.Ensure(key, Plan{Stage: StageExclusion, Driver: drv, Corpus: "bench/ragtarget",
		Limit:    target.Limit{RequestsPerSecond: 100000, Burst: 100000},
		Interval: interval, Schedule: sched, Confirmations: confirmations,
		Surfaces: []v1alpha1.Surface{v1alpha1.SurfaceSearch}, Persona: alice, Target: tgt,
		RevokeAcknowledged: rev.Acknowledged})
	synced := false
	for {
		next := engClock.nextWait(b)
		if m := st.Snapshot().Surfaces[0]; m.Excluded || !next.Before(rev.Acknowledged.Add(timeout)) {
			break
		}
		if !synced && !next.Before(requested.Add(lag)) {
			syncTo(b, rtClock, svc, requested.Add(lag), 2)
			synced = true
		}
		engClock.SetTime(next)
	}
	m := e.Stop(key).Snapshot().Surfaces[0]
	measure.Finalize(&m, rev, timeout)
	verdict, _ := measure.Verdict(measure.RunOutcome{Surfaces: []v1alpha1.SurfaceMeasurement{m},
		SLO: func(v1alpha1.Surface) time.Duration { return slo }, Revocation: rev})
	res := lagResult{probes: m.Probes.Positive + m.Probes.Negative + m.Probes.Errors, verdict: verdict}
	if m.Bounds != nil && m.Bounds.Lower != nil && m.Bounds.Upper != nil {
		res.lower, res.upper = m.Bounds.Lower.Duration, m.Bounds.Upper.Duration
	}
	return res
}

// syncTo moves ragtarget's clock to t and waits, bounded, until its ACL
// sync has run n times.
func syncTo(b *testing.B, c *testingclock.FakeClock, svc *ragtarget.Service, t time.Time, n uint64) {
	b.Helper()
	c.SetTime(t)
	testutil.EventuallyTrue(b, 10*time.Second, fmt.Sprintf("ragtarget's ACL sync %d", n), func() bool {
		return svc.SyncCount(ragtarget.SyncACL) >= n
	})
}

// armedClock is a fake clock that reports when the probe loop starts
// waiting for its next round, and until when: the loop is then idle, every
// result of the last round applied, so the clock may move on.
type armedClock struct {
	*testingclock.FakeClock
	mu    sync.Mutex
	armed chan time.Time
}

var _ clock.WithTicker = (*armedClock)(nil)

func (c *armedClock) NewTimer(d time.Duration) clock.Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := c.FakeClock.NewTimer(d)
	c.armed <- c.Now().Add(d)
	return t
}

// nextWait is when the loop's next round is due, once it waits for it.
func (c *armedClock) nextWait(b testing.TB) time.Time {
	b.Helper()
	select {
	case t := <-c.armed:
		return t
	case <-time.After(10 * time.Second):
		b.Fatal("the probe loop did not wait for a next round")
		return time.Time{}
	}
}

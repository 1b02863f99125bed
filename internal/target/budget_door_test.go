package target_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/dev/testutil"
	"github.com/ragcanary/ragcanary/internal/driver"
	"github.com/ragcanary/ragcanary/internal/measure"
	"github.com/ragcanary/ragcanary/internal/probe"
	"github.com/ragcanary/ragcanary/internal/target"
)

const (
	// replyBudget is each corpus's budget in these tests.
	replyBudget = 256 << 10
	// dripPiece is what the hostile server writes per tick. At one piece
	// per dripTick a lone reply stays short of replyBudget (and far short
	// of the 1 MiB response limit) within callTimeout, so a call that
	// outlives the crowd ends at its timeout, not on the budget.
	dripPiece   = 8 << 10
	dripTick    = 50 * time.Millisecond
	callTimeout = time.Second
)

// budgetDoor is a door whose corpora get replyBudget and a rate limit high
// enough never to be what slows a test.
func budgetDoor() *target.Door {
	return &target.Door{Allow: target.AllowAny(), Limiters: target.NewLimiters(clock.RealClock{}),
		DefaultLimit: target.Limit{RequestsPerSecond: 1000, Burst: 1000, ReplyBytes: replyBudget},
		HTTPClient:   &http.Client{}}
}

// corpusAt resolves corpus ns/name served by url, with callTimeout per call.
func corpusAt(t *testing.T, door *target.Door, name, url string) *target.Corpus {
	t.Helper()
	c, err := door.FromRecipe("ns", name, target.Recipe{Credential: []byte("source"), Driver: v1alpha1.Driver{
		Type: v1alpha1.DriverHTTP, HTTP: &v1alpha1.HTTPDriver{URL: url},
		Timeout: &metav1.Duration{Duration: callTimeout}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Release)
	return c
}

// hostile drips an endless search reply to every caller and records the
// most of budget it saw in use each time it wrote.
type hostile struct {
	budget func() *target.ReplyBudget
	stop   chan struct{}
	peak   atomic.Int64
}

func (h *hostile) serve(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	tick := time.NewTicker(dripTick)
	defer tick.Stop()
	piece := []byte(`{"hits":[` + string(make([]byte, dripPiece)))
	for {
		h.sample()
		if _, err := w.Write(piece); err != nil {
			return
		}
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
			return
		case <-h.stop:
			return
		case <-tick.C:
		}
	}
}

func (h *hostile) sample() {
	inUse := h.budget().InUse()
	for {
		old := h.peak.Load()
		if inUse <= old || h.peak.CompareAndSwap(old, inUse) {
			return
		}
	}
}

// result is one call's error and how long it took.
type result struct {
	err  error
	took time.Duration
}

// TestReplyBudgetBoundsHostileCorpus checks that a target dripping slow
// replies to many probes of one corpus at once never makes the operator
// hold more than the corpus's reply budget, that the calls past the budget
// fail with the budget error and the others are cut at their timeout, that
// every call ends with an error and gives back what it held, and that
// another corpus's probes are unaffected meanwhile.
func TestReplyBudgetBoundsHostileCorpus(t *testing.T) {
	const probes = 8
	door := budgetDoor()
	h := &hostile{stop: make(chan struct{})}
	slow := httptest.NewServer(http.HandlerFunc(h.serve))
	t.Cleanup(slow.Close)
	t.Cleanup(func() { close(h.stop) })
	fast := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"hits":[{"chunkId":"d#0","documentId":"d","score":1}]}`))
	}))
	t.Cleanup(fast.Close)

	starved := corpusAt(t, door, "starved", slow.URL)
	h.budget = func() *target.ReplyBudget { return door.Limiters.Replies(starved.Key) }
	other := corpusAt(t, door, "other", fast.URL)

	results := make(chan result, probes)
	for range probes {
		go func() {
			start := time.Now()
			_, err := starved.Driver.Search(context.Background(), "persona", "q", 5)
			results <- result{err: err, took: time.Since(start)}
		}()
	}
	testutil.EventuallyTrue(t, callTimeout, "the hostile corpus fills half its budget", func() bool {
		return h.budget().InUse() >= replyBudget/2
	})
	searchAll(t, other, probes)

	reasons := map[string]int{}
	for range probes {
		r := <-results
		checkEnded(t, r)
		reasons[reason(r.err)]++
	}
	if reasons["reply budget exhausted"] == 0 || reasons["timeout"] == 0 ||
		reasons["reply budget exhausted"]+reasons["timeout"] != probes {
		t.Errorf("calls ended with %v, want some on the reply budget and the rest at their timeout", reasons)
	}
	if peak := h.peak.Load(); peak > replyBudget || peak == 0 {
		t.Errorf("the driver held at most %d bytes at once, want 1 to %d", peak, replyBudget)
	}
	if inUse := h.budget().InUse(); inUse != 0 {
		t.Errorf("%d bytes still held after every call returned", inUse)
	}
}

// searchAll runs n searches of c at once and fails t unless each succeeds.
func searchAll(t *testing.T, c *target.Corpus, n int) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			hits, err := c.Driver.Search(context.Background(), "persona", "q", 5)
			if err == nil && len(hits) != 1 {
				err = errors.New("reply lost its hit")
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("search of the unaffected corpus: %v", err)
		}
	}
}

// checkEnded fails t unless a hostile call ended with an error within its
// timeout and a scheduling allowance.
func checkEnded(t *testing.T, r result) {
	t.Helper()
	if r.err == nil {
		t.Errorf("a call to the hostile corpus succeeded")
	}
	if k, _ := driver.KindOf(r.err); k != driver.Transient {
		t.Errorf("err = %v, want a transient driver error", r.err)
	}
	if r.took > callTimeout+time.Second {
		t.Errorf("a call took %v with a %v timeout", r.took, callTimeout)
	}
}

func reason(err error) string {
	var de *driver.Error
	if errors.As(err, &de) {
		return de.Reason
	}
	return ""
}

// TestReplyBudgetErrorIsProbeError checks that a probe whose reply finds
// its corpus's budget full is a probe error, never an absence, though the
// target answered "no hits".
func TestReplyBudgetErrorIsProbeError(t *testing.T) {
	door := budgetDoor()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"hits":[]}`))
	}))
	t.Cleanup(srv.Close)
	c := corpusAt(t, door, "full", srv.URL)
	replies := door.Limiters.Replies(c.Key)
	if !replies.TryAcquire(replyBudget) {
		t.Fatal("could not fill the corpus's budget")
	}
	defer replies.Release(replyBudget)
	got := probe.Probe(context.Background(), c.Driver, v1alpha1.SurfaceSearch, "persona", probe.Target{DocumentID: "canary", Handle: "q"})
	if got != measure.Error {
		t.Fatalf("probe outcome = %v, want %v", got, measure.Error)
	}
}

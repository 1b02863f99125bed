package httpdriver_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ragcanary/ragcanary/internal/dev/testutil"
	"github.com/ragcanary/ragcanary/internal/driver"
	httpdriver "github.com/ragcanary/ragcanary/internal/driver/http"
)

// TestReplyBudgetHeldOnlyWhileReading checks that every reply body draws on
// the budget while it is read and gives everything back once the call
// returns, whether the reply was decoded or the call failed.
func TestReplyBudgetHeldOnlyWhileReading(t *testing.T) {
	hits := `{"hits":[{"chunkId":"d#0","documentId":"d","score":1}]}`
	for _, tc := range []struct {
		name string
		// max is the driver's response limit; zero is the default.
		max   int64
		reply http.HandlerFunc
		// ok says whether the call succeeds.
		ok bool
		// read says whether the body is read, and so drawn on the budget.
		read bool
	}{
		{name: "decoded", reply: reply(200, "application/json", hits), ok: true, read: true},
		{name: "malformed", reply: reply(200, "application/json", `{"hits":`), read: true},
		{name: "too large", max: 16, reply: reply(200, "application/json", hits)},
		{name: "error status", reply: reply(503, "text/plain", strings.Repeat("x", 4096))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			budget := &testutil.CountingBudget{Size: 1 << 20}
			d, _ := scripted(t, httpdriver.Config{ReplyBudget: budget, MaxResponseBytes: tc.max}, tc.reply)
			_, err := d.Search(context.Background(), persona, "q", 5)
			if (err == nil) != tc.ok {
				t.Fatalf("err = %v, want success %v", err, tc.ok)
			}
			inUse, peak := budget.Held()
			if inUse != 0 {
				t.Errorf("%d bytes still held after the call returned", inUse)
			}
			if tc.read && peak == 0 {
				t.Errorf("the reply was read without drawing on the budget")
			}
		})
	}
}

// TestReplyBudgetExhaustedIsTransient checks that a body the budget cannot
// hold is a transient error naming the budget, never an empty reply, on the
// read paths and on a write whose reply has a body.
func TestReplyBudgetExhaustedIsTransient(t *testing.T) {
	budget := &testutil.CountingBudget{Size: 8}
	d, _ := scripted(t, httpdriver.Config{ReplyBudget: budget}, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/search" {
			reply(200, "application/json", `{"hits":[]}`)(w, r)
			return
		}
		reply(200, "application/json", `{"answer":"a","citations":[]}`)(w, r)
	})
	ctx := context.Background()
	hits, err := d.Search(ctx, persona, "q", 5)
	checkBudgetError(t, "Search", err)
	if hits != nil {
		t.Errorf("Search returned hits %v beside its error", hits)
	}
	_, err = d.Answer(ctx, persona, "q")
	checkBudgetError(t, "Answer", err)
	checkBudgetError(t, "CreateDocument", d.CreateDocument(ctx, driver.Document{ID: "doc", Title: "t"}))
	if inUse, _ := budget.Held(); inUse != 0 {
		t.Errorf("%d bytes still held after the calls returned", inUse)
	}
}

func checkBudgetError(t *testing.T, op string, err error) {
	t.Helper()
	var de *driver.Error
	if !errors.As(err, &de) || de.Kind != driver.Transient || de.Reason != "reply budget exhausted" {
		t.Errorf("%s err = %v, want transient reply budget exhausted", op, err)
	}
}

// TestSlowBodyCutAtTimeout checks that a reply whose headers arrive at once
// but whose body drips forever ends the call at its timeout, and that the
// bytes it read by then go back to the budget.
func TestSlowBodyCutAtTimeout(t *testing.T) {
	const timeout = 200 * time.Millisecond
	budget := &testutil.CountingBudget{Size: 1 << 20}
	d, _ := scripted(t, httpdriver.Config{ReplyBudget: budget, Timeout: timeout}, drip(`{"hits":[`, `{"chunkId":"d#0","documentId":"d","score":1},`))
	start := time.Now()
	_, err := d.Search(context.Background(), persona, "q", 5)
	took := time.Since(start)
	var de *driver.Error
	if !errors.As(err, &de) || de.Kind != driver.Transient || de.Reason != "timeout" {
		t.Fatalf("err = %v, want transient timeout", err)
	}
	if took > timeout+2*time.Second {
		t.Errorf("call took %v with a %v timeout", took, timeout)
	}
	inUse, peak := budget.Held()
	if peak == 0 {
		t.Errorf("the server's drip never reached the driver")
	}
	if inUse != 0 {
		t.Errorf("%d bytes still held after the call timed out", inUse)
	}
}

// drip answers 200 with head, then writes piece on every tick until the
// client goes away.
func drip(head, piece string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write([]byte(head))
		w.(http.Flusher).Flush()
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-r.Context().Done():
				return
			case <-tick.C:
				if _, err := w.Write([]byte(piece)); err != nil {
					return
				}
				w.(http.Flusher).Flush()
			}
		}
	}
}

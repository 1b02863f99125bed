package surface

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/ragcanary/ragcanary/internal/dev/testutil"
	"github.com/ragcanary/ragcanary/internal/driver"
)

// TestReplyBudgetIsDrawnAndReturned checks both clients draw a reply's bytes
// from a shared budget while reading it, fail at once when it is full, and
// give everything back when the call returns.
func TestReplyBudgetIsDrawnAndReturned(t *testing.T) {
	big := strings.Repeat("x", 8000)
	rec := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/v1/") {
			writeJSON(w, 200, completion(big, nil))
			return
		}
		writeJSON(w, 200, esReply(esHit("d#0", big)))
	})
	calls := map[string]func(*testutil.CountingBudget) error{
		"search": func(b *testutil.CountingBudget) error {
			cfg := esConfig(rec.URL + "/search")
			cfg.ReplyBudget = b
			_, err := newSearch(t, cfg).Search(context.Background(), persona, "q", 5)
			return err
		},
		"chat": func(b *testutil.CountingBudget) error {
			cfg := chatConfig(rec.URL)
			cfg.ReplyBudget = b
			_, err := newChat(t, cfg).Answer(context.Background(), persona, "q")
			return err
		},
	}
	for name, call := range calls {
		roomy := &testutil.CountingBudget{Size: 1 << 20}
		if err := call(roomy); err != nil {
			t.Errorf("%s, roomy budget: %v", name, err)
		}
		if inUse, peak := roomy.Held(); inUse != 0 || peak < int64(len(big)) {
			t.Errorf("%s, roomy budget: %d bytes still held, peak %d; want 0 held after a peak of the reply", name, inUse, peak)
		}
		tight := &testutil.CountingBudget{Size: 1000}
		err := call(tight)
		if err == nil || !strings.Contains(err.Error(), reasonBudget) || !driver.IsTransient(err) {
			t.Errorf("%s, tight budget: err = %v, want a transient %q", name, err, reasonBudget)
		}
		if inUse, _ := tight.Held(); inUse != 0 {
			t.Errorf("%s, tight budget: %d bytes still held", name, inUse)
		}
	}
}

package ragtarget_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/ragcanary/ragcanary/internal/ragtarget"
)

// TestNotFoundAnswerEchoesTheQuestion: like a real assistant, ragtarget
// repeats the question when it finds nothing, so a detector that looks for
// the query text in answers is caught by every test. Each question is
// cached under its own key and never answers another.
func TestNotFoundAnswerEchoesTheQuestion(t *testing.T) {
	e := start(t, ragtarget.Config{AnswerCacheTTL: time.Minute})
	for _, q := range []string{"rcanaryfirst", "rcanarysecond", "rcanaryfirst"} {
		a, err := e.drv.Answer(context.Background(), alice, q)
		must(t, err)
		if !strings.Contains(a.Text, `"`+q+`"`) || len(a.Citations) != 0 {
			t.Errorf("answer to %q = %+v, want the question quoted and no citation", q, a)
		}
	}
}

// TestCanaryAnswerShowsPayloadOnlyWhenVisible: asked by a canary's handle,
// the persona allowed to read it gets the passage quoted, payload included;
// anyone else gets the handle echoed and never the payload.
func TestCanaryAnswerShowsPayloadOnlyWhenVisible(t *testing.T) {
	const handle, payload = "rcanaryhandle1", "rcpayload1"
	e := start(t, ragtarget.Config{})
	e.create("rc-1", "A ragcanary canary. The canary handle is "+handle+" and its payload is "+payload, "user:alice")
	e.advance()

	a, err := e.drv.Answer(context.Background(), alice, handle)
	must(t, err)
	if !strings.Contains(a.Text, payload) || len(a.Citations) != 1 || a.Citations[0] != "rc-1#0" {
		t.Errorf("allowed persona's answer = %+v, want the payload quoted and rc-1#0 cited", a)
	}
	a, err = e.drv.Answer(context.Background(), bob, handle)
	must(t, err)
	if strings.Contains(a.Text, payload) || len(a.Citations) != 0 || !strings.Contains(a.Text, handle) {
		t.Errorf("other persona's answer = %+v, want the handle echoed, no payload and no citation", a)
	}
}

package controllers

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/ragtarget"
)

// restylingProxy serves upstream with its answer surface turned into a
// model that re-styles what it quotes and cites nothing: every word of an
// answer upper-cased and broken into hyphenated groups of four. Only the
// payload quoted in the text can then show the canary.
func restylingProxy(t *testing.T, upstream string) string {
	t.Helper()
	u, err := url.Parse(upstream)
	if err != nil {
		t.Fatal(err)
	}
	p := httputil.NewSingleHostReverseProxy(u)
	p.ModifyResponse = restyleAnswerReply
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	return srv.URL
}

func restyleAnswerReply(resp *http.Response) error {
	if resp.Request.URL.Path != "/v1/answer" || resp.StatusCode != http.StatusOK {
		return nil
	}
	var reply map[string]any
	err := json.NewDecoder(resp.Body).Decode(&reply)
	_ = resp.Body.Close()
	if err != nil {
		return err
	}
	text, _ := reply["answer"].(string)
	reply["answer"] = restyleWords(text)
	reply["citations"] = []string{}
	out, err := json.Marshal(reply)
	if err != nil {
		return err
	}
	resp.Body = io.NopCloser(bytes.NewReader(out))
	resp.ContentLength = int64(len(out))
	resp.Header.Set("Content-Length", strconv.Itoa(len(out)))
	return nil
}

func restyleWords(text string) string {
	words := strings.Fields(text)
	for i, w := range words {
		var b strings.Builder
		for j, r := range w {
			if j > 0 && j%4 == 0 {
				b.WriteByte('-')
			}
			b.WriteRune(r)
		}
		words[i] = strings.ToUpper(b.String())
	}
	return strings.Join(words, " ")
}

// TestCanaryRunOnAnAnswerSurfaceThatRestylesThePayload: a model that
// re-styles the payload still shows the canary. The run becomes visible,
// alone on the answer surface or beside Search, instead of waiting for a
// sighting that never comes, and each surface's interval contains the sync
// that applied the revocation.
func TestCanaryRunOnAnAnswerSurfaceThatRestylesThePayload(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		surfaces []v1alpha1.Surface
	}{
		{name: "answer only", surfaces: []v1alpha1.Surface{v1alpha1.SurfaceAnswer}},
		{name: "search and answer", surfaces: []v1alpha1.Surface{v1alpha1.SurfaceSearch, v1alpha1.SurfaceAnswer}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tg := startCRTarget(t, ragtarget.Config{}, time.Second, false)
			ns := crFixture(t, restylingProxy(t, tg.URL))
			run := crRun(t, ns, 20*time.Second, tc.surfaces...)

			got := crWaitDone(t, run)
			crAssertSLOMet(t, got)
			for _, s := range tc.surfaces {
				crAssertBoundsContain(t, got, s, tg)
			}
			crAssertNoToken(t, got)
		})
	}
}

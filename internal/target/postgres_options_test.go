package target

import (
	"context"
	"strings"
	"testing"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
)

// poolOptions are every option pgxpool reads from a connection string.
var poolOptions = []string{
	"pool_max_conns=100000",
	"pool_min_conns=500",
	"pool_min_idle_conns=3000000",
	"pool_max_conn_lifetime=1ns",
	"pool_max_conn_idle_time=1ns",
	"pool_health_check_period=0s",
	"pool_max_conn_lifetime_jitter=1ns",
}

// TestPostgresDSNPoolOptionsAreRefused: a connection string carrying any
// pool option, in URL or keyword=value form, on the writer or the reader,
// is refused as the user's to fix, naming the option and never the
// connection string.
func TestPostgresDSNPoolOptionsAreRefused(t *testing.T) {
	allowed := "postgres://u:" + pgPassword + "@db.internal:5432/app"
	for _, opt := range poolOptions {
		key, _, _ := strings.Cut(opt, "=")
		for _, c := range []struct {
			form           string
			writer, reader string
			withReader     bool
			field          string
		}{
			{"URL", allowed + "?sslmode=disable&" + opt, "", false, fieldDSN},
			{"keyword", "host=db.internal port=5432 user=u password=" + pgPassword + " " + opt, "", false, fieldDSN},
			{"reader", allowed, "host=db.internal port=5432 user=u password=" + pgPassword + " " + opt, true, fieldReadDSN},
		} {
			t.Run(key+"/"+c.form, func(t *testing.T) {
				d := pgDoor(t, []string{"postgres://db.internal:5432"}, c.writer, c.reader)
				_, err := d.Corpus(context.Background(), pgCorpus(c.withReader))
				assertDSNRefused(t, err, c.field, key)
			})
		}
	}
}

// assertDSNRefused: err is a Stalled InvalidURL problem naming field and
// option, without the connection string's password.
func assertDSNRefused(t *testing.T, err error, field, option string) {
	t.Helper()
	p := AsProblem(err)
	if p == nil || p.Intent != Stalled || p.Reason != v1alpha1.ReasonInvalidURL {
		t.Fatalf("got %v, want Stalled %s", err, v1alpha1.ReasonInvalidURL)
	}
	if !strings.Contains(p.Message, field) || !strings.Contains(p.Message, option) {
		t.Fatalf("message %q does not name %s and %s", p.Message, field, option)
	}
	if strings.Contains(p.Message, pgPassword) {
		t.Fatalf("message %q leaks the connection string", p.Message)
	}
}

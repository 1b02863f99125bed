package target

import "net/http"

// sharedTransport keeps connections to each target alive across the many
// concurrent probes and suite executions (http.DefaultTransport keeps two
// idle connections per host, which capped live suites near 1,000 req/s).
// A corpus's probes arrive in random bursts; with 64 idle connections per
// host, 1,000 probes/s to one target still dialled new connections for a
// fifteenth of the manager's CPU (make bench-canaries, 10,000 canaries).
var sharedTransport = func() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns = 1024
	t.MaxIdleConnsPerHost = 256
	// Proxies from the environment would send credentials to a host the
	// allowlist never saw.
	t.Proxy = nil
	return t
}()

var sharedClient = &http.Client{Transport: sharedTransport, CheckRedirect: refuseRedirect}

// NoRedirects returns a client that never follows redirects, sharing c's
// transport (the shared keep-alive transport when c is nil). A 3xx reply then
// reaches the driver as a status, which it reports as an error naming it:
// following it would carry the bearer token to a URL nobody allowed, and the
// reply found there could read as an absence.
func NoRedirects(c *http.Client) *http.Client {
	if c == nil {
		return sharedClient
	}
	out := *c
	out.CheckRedirect = refuseRedirect
	return &out
}

func refuseRedirect(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

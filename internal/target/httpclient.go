package target

import "net/http"

// newTransport is the door's keep-alive transport: many concurrent probes
// and suite executions reach each target, so it keeps far more idle
// connections per host than http.DefaultTransport. Its dialer enforces the
// address policy on every connection.
func newTransport(policy AddressPolicy) *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns = 1024
	t.MaxIdleConnsPerHost = 256
	// Proxies from the environment would send credentials to a host the
	// allowlist never saw.
	t.Proxy = nil
	t.DialContext = policy.Dialer().DialContext
	return t
}

// NoRedirects returns a client that never follows redirects, sharing c's
// transport. A 3xx reply then reaches the driver as a status, which it
// reports as an error naming it: following it would carry the bearer token
// to a URL nobody allowed, and the reply found there could read as an
// absence.
func NoRedirects(c *http.Client) *http.Client {
	out := *c
	out.CheckRedirect = refuseRedirect
	return &out
}

func refuseRedirect(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

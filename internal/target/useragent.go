package target

import (
	"fmt"
	"net/http"
	"runtime/debug"
)

// UserAgent is the User-Agent of every request the door sends:
// "ragcanary/<version> (<replica>)", so a target's logs show which
// operator replica probed it. The version is the main module's from the
// build information, "devel" for a build without one.
func UserAgent(replica string) string {
	return fmt.Sprintf("ragcanary/%s (%s)", buildVersion(), replica)
}

func buildVersion() string {
	if info, ok := debug.ReadBuildInfo(); ok && info.Main.Version != "" && info.Main.Version != "(devel)" {
		return info.Main.Version
	}
	return "devel"
}

// withUserAgent returns a client whose requests carry agent, sharing c's
// connections. An empty agent leaves c as it is.
func withUserAgent(c *http.Client, agent string) *http.Client {
	if agent == "" {
		return c
	}
	out := *c
	base := c.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	out.Transport = userAgentTransport{base: base, agent: agent}
	return &out
}

// userAgentTransport sets the User-Agent on every request, overriding what
// a driver library would send.
type userAgentTransport struct {
	base  http.RoundTripper
	agent string
}

func (t userAgentTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	// A RoundTripper must not modify the caller's request.
	req = req.Clone(req.Context())
	req.Header.Set("User-Agent", t.agent)
	return t.base.RoundTrip(req)
}

package rest

import (
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"strings"
)

// named is all a request template sees: the named values, nothing else.
// It has no credential field, so no template can put the credential
// anywhere; it goes only into its own header, after rendering.
type named struct {
	// DocumentID is the run-derived document ID (the run-derived name).
	DocumentID string
	Title      string
	Body       string
	// Subject is the persona's principal.
	Subject string
	Group   string
	// Principal is the principal a grant or revoke is for.
	Principal string
	// Run is the run's name, when the caller gives it (WithRun).
	Run      string
	Values   map[string]string
	Captured map[string]string
}

// escaped is d with every value path-segment escaped, for the path
// template: a "/", "?", "#" or "%" in a value never moves the request.
func (d *named) escaped() *named {
	e := *d
	for _, s := range []*string{&e.DocumentID, &e.Title, &e.Body, &e.Subject, &e.Group, &e.Principal, &e.Run} {
		*s = url.PathEscape(*s)
	}
	e.Values, e.Captured = escapeMap(d.Values), escapeMap(d.Captured)
	return &e
}

func escapeMap(m map[string]string) map[string]string {
	out := maps.Clone(m)
	for k, v := range out {
		out[k] = url.PathEscape(v)
	}
	return out
}

// rendered is a request ready to send, the credential aside.
type rendered struct {
	url     *url.URL
	headers http.Header
	body    string
	hasBody bool
}

// sampleBase stands for the base URL when a request is checked at build.
var sampleBase = &url.URL{Scheme: "http", Host: "sample.invalid", Path: "/base"}

// render renders the request against base. With sample set (the build's
// check) a header value is not checked: the sample holds a newline on
// purpose, for the body's sake.
func (r *request) render(base *url.URL, d *named, sample bool) (*rendered, error) {
	out := &rendered{headers: http.Header{}}
	path := ""
	if r.path != nil {
		p, err := r.path.Render(d.escaped().values())
		if err != nil {
			return nil, err // names the field
		}
		path = p
	}
	u, err := joinPath(base, path)
	if err != nil {
		return nil, fmt.Errorf("path: %v", err)
	}
	q := url.Values{}
	for _, p := range r.query {
		v, err := p.t.Render(d.values())
		if err != nil {
			return nil, err
		}
		q.Set(p.name, v)
	}
	u.RawQuery = q.Encode()
	out.url = u
	for _, h := range r.headers {
		v, err := h.t.Render(d.values())
		if err != nil {
			return nil, err
		}
		if !sample && !validHeaderValue(v) {
			return nil, fmt.Errorf("headers[%s]: the rendered value is not a valid header value", label(h.name))
		}
		out.headers.Set(h.name, v)
	}
	if r.body != nil {
		b, err := r.body.Render(d.values())
		if err != nil {
			return nil, err
		}
		if !validJSON(b) {
			return nil, errors.New("body: does not render JSON; write values as {{json .Title}}")
		}
		out.body, out.hasBody = b, true
	}
	return out, nil
}

// joinPath appends a rendered path to base's path. The result never
// leaves base's path: no scheme or host, no "?" or "#", no empty segment
// ("//") but a trailing slash, and no segment that is, or decodes to
// something holding, a "." or ".." element (a server decoding %2F before
// routing would otherwise walk up).
func joinPath(base *url.URL, rendered string) (*url.URL, error) {
	switch {
	case strings.ContainsAny(rendered, "?#"):
		return nil, errors.New(`a path holds no "?" or "#" (query parameters go in query)`)
	case strings.Contains(rendered, "://") || strings.HasPrefix(rendered, "//"):
		return nil, errors.New("a path names no scheme or host")
	}
	prefix := strings.TrimSuffix(base.EscapedPath(), "/")
	rest := strings.TrimPrefix(rendered, "/")
	u := *base
	u.RawQuery, u.Fragment = "", ""
	if rest == "" {
		return &u, nil
	}
	segments := strings.Split(rest, "/")
	for i, seg := range segments {
		if seg == "" && i < len(segments)-1 {
			return nil, errors.New(`a path holds no empty segment ("//")`)
		}
		plain, err := url.PathUnescape(seg)
		if err != nil {
			return nil, errors.New("a path segment is not validly escaped")
		}
		if strings.Contains(plain, "//") || strings.Contains(plain, `\\`) {
			return nil, errors.New(`a path segment holds no "//" even escaped (a server decoding it would read a host or an empty segment)`)
		}
		for _, el := range strings.FieldsFunc(plain, func(r rune) bool { return r == '/' || r == '\\' }) {
			if el == "." || el == ".." {
				return nil, errors.New(`a path holds no "." or ".." segment`)
			}
		}
		if plain == "." || plain == ".." {
			return nil, errors.New(`a path holds no "." or ".." segment`)
		}
	}
	escaped := prefix + "/" + rest
	plain, err := url.PathUnescape(escaped)
	if err != nil {
		return nil, errors.New("the path is not validly escaped")
	}
	u.Path, u.RawPath = plain, escaped
	if u.EscapedPath() != escaped || !strings.HasPrefix(u.EscapedPath(), prefix+"/") {
		return nil, errors.New("the path is not a valid escaped path (escape spaces and other characters)")
	}
	return &u, nil
}

// validHeaderValue refuses control characters, CR and LF among them.
func validHeaderValue(v string) bool {
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c < 0x20 && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
}

package surface

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/ragcanary/ragcanary/internal/driver"
	httpdriver "github.com/ragcanary/ragcanary/internal/driver/http"
	"github.com/ragcanary/ragcanary/internal/safetemplate"
	"github.com/ragcanary/ragcanary/internal/safetext"
)

// maxK mirrors the contract's bound on k, checked before any call.
const maxK = 100

// SearchConfig configures a Search over any JSON search API.
type SearchConfig struct {
	// URL is the search endpoint; required. It must be an absolute http(s)
	// URL without userinfo, query or fragment: query parameters go in Query.
	// The caller checks it against the door's allowlist.
	URL string
	// Method is GET or POST; POST when empty.
	Method string
	// Headers are static request headers. None may be CredentialHeader, Host
	// or Content-Length.
	Headers map[string]string
	// Body is a text/template rendering the POST body, which must be JSON;
	// required for POST, refused for GET (a GET sends no body). Its data is
	// {{.Query}} and {{.K}}; {{json .Query}} renders the query as a JSON
	// string so no query can break out of it.
	Body string
	// Query maps URL query parameter names to templates of their values,
	// with the same data as Body; values are URL-encoded after rendering.
	Query map[string]string
	// Credentials are credentials the caller knows besides the calling
	// persona's (other personas'): none may appear in the URL, a query
	// value, the body or a static header. NewSearch refuses a config that
	// writes one in, naming the field, and a request that would carry one
	// is refused before it is sent (see Guard).
	Credentials []driver.Token
	// Hits is an RFC 6901 JSON pointer to the array of hits in the reply;
	// "" is the reply itself.
	Hits string
	// ID points, within each hit, to its ID (a string or a number); "" is
	// the hit itself. The ID is the hit's ChunkID, and the part before its
	// first '#' (all of it without one) its DocumentID.
	ID string
	// Text points, within each hit, to its text (a string); "" when the
	// surface returns none.
	Text string
	// CredentialHeader is the only header, and the only place, the persona's
	// credential is sent in, as CredentialPrefix followed by the token:
	// "Authorization"/"Bearer ", "api-key"/"", "Authorization"/"ApiKey ".
	// An empty CredentialHeader is "Authorization", with "Bearer " when
	// CredentialPrefix is empty too. An empty token sends no credential
	// header at all.
	CredentialHeader string
	CredentialPrefix string
	// Timeout bounds each call, reading the reply included; DefaultTimeout
	// when zero.
	Timeout time.Duration
	// MaxReplyBytes bounds a reply body; DefaultMaxReplyBytes when zero.
	MaxReplyBytes int64
	// ReplyBudget, when set, bounds the reply bytes held at once by this
	// client's calls and every other client sharing it.
	ReplyBudget httpdriver.ReplyBudget
	// HTTPClient sends the requests; required. The operator passes the
	// door's client (address-policy dialer); its redirect policy is
	// replaced, since a surface client never follows redirects.
	HTTPClient *http.Client
}

// Search reads a JSON search API as a persona. It is safe for concurrent use.
type Search struct {
	url        *url.URL
	method     string
	headers    http.Header
	body       *safetemplate.Template
	query      []queryParam
	hits, id   pointer
	text       *pointer
	credHeader string
	credPrefix string
	timeout    time.Duration
	limits     limits
	client     *http.Client
	guard      credentialGuard
}

var _ driver.Searcher = (*Search)(nil)

type queryParam struct {
	name string
	tmpl *safetemplate.Template
}

// NewSearch validates cfg and returns a Search. Every error names the field.
func NewSearch(cfg SearchConfig) (*Search, error) {
	s := &Search{}
	steps := []func(SearchConfig) error{s.setDoor, s.setMethodAndBody, s.setQuery, s.setPointers, s.setHeaders}
	for _, step := range steps {
		if err := step(cfg); err != nil {
			return nil, err
		}
	}
	for _, tok := range cfg.Credentials {
		if err := s.Guard(tok); err != nil {
			return nil, err
		}
	}
	return s, nil
}

func (s *Search) setDoor(cfg SearchConfig) error {
	u, err := validURL("URL", cfg.URL)
	if err != nil {
		return err
	}
	if cfg.HTTPClient == nil {
		return configError("HTTPClient", "required (the door's client)")
	}
	if cfg.Timeout < 0 || cfg.MaxReplyBytes < 0 {
		return configError("Timeout/MaxReplyBytes", "must not be negative")
	}
	s.url = u
	s.client = withoutRedirects(cfg.HTTPClient)
	s.timeout = orDefault(cfg.Timeout, DefaultTimeout)
	s.limits = limits{maxBytes: orDefault(cfg.MaxReplyBytes, DefaultMaxReplyBytes), budget: cfg.ReplyBudget}
	return nil
}

func (s *Search) setMethodAndBody(cfg SearchConfig) error {
	s.method = strings.ToUpper(orDefault(cfg.Method, http.MethodPost))
	switch {
	case s.method != http.MethodGet && s.method != http.MethodPost:
		return configError("Method", "must be GET or POST")
	case s.method == http.MethodGet && cfg.Body != "":
		return configError("Body", "a GET sends no body; put the query in Query")
	case s.method == http.MethodGet:
		return nil
	case cfg.Body == "":
		return configError("Body", "required for POST (e.g. {\"query\": {{json .Query}}, \"size\": {{.K}}})")
	}
	t, err := parseTemplate("Body", cfg.Body)
	if err != nil {
		return err
	}
	out, _ := render(t, sampleData)
	if !json.Valid([]byte(out)) {
		return configError("Body", "does not render JSON for a query holding a quote, backslash or newline; write the query as {{json .Query}}")
	}
	s.body = t
	return nil
}

func (s *Search) setQuery(cfg SearchConfig) error {
	for _, name := range slices.Sorted(maps.Keys(cfg.Query)) {
		field := "Query[" + label(name) + "]"
		if name == "" {
			return configError(field, "a parameter needs a name")
		}
		t, err := parseTemplate(field, cfg.Query[name])
		if err != nil {
			return err
		}
		s.query = append(s.query, queryParam{name: name, tmpl: t})
	}
	return nil
}

func (s *Search) setPointers(cfg SearchConfig) error {
	var err error
	if s.hits, err = parsePointer(cfg.Hits); err != nil {
		return configError("Hits", err.Error())
	}
	if s.id, err = parsePointer(cfg.ID); err != nil {
		return configError("ID", err.Error())
	}
	if cfg.Text != "" {
		p, err := parsePointer(cfg.Text)
		if err != nil {
			return configError("Text", err.Error())
		}
		s.text = &p
	}
	return nil
}

func (s *Search) setHeaders(cfg SearchConfig) error {
	s.credHeader, s.credPrefix = cfg.CredentialHeader, cfg.CredentialPrefix
	if s.credHeader == "" {
		s.credHeader = "Authorization"
		if s.credPrefix == "" {
			s.credPrefix = "Bearer "
		}
	}
	if !validHeaderName(s.credHeader) {
		return configError("CredentialHeader", "not a valid header name")
	}
	if !validHeaderValue(s.credPrefix) {
		return configError("CredentialPrefix", "not a valid header value")
	}
	s.headers = http.Header{}
	for name, value := range cfg.Headers {
		if err := s.checkStaticHeader(name, value); err != nil {
			return err
		}
		s.headers.Set(name, value)
	}
	return nil
}

// checkStaticHeader refuses a header that is malformed, that the request
// sets itself, or that is the credential's: a static value there would
// either be overwritten or, worse, be someone's credential written into
// the config.
func (s *Search) checkStaticHeader(name, value string) error {
	field := "Headers[" + label(name) + "]"
	canon := http.CanonicalHeaderKey(name)
	switch {
	case !validHeaderName(name):
		return configError(field, "not a valid header name")
	case !validHeaderValue(value):
		return configError(field, "not a valid header value")
	case canon == http.CanonicalHeaderKey(s.credHeader):
		return configError(field, "is the CredentialHeader; the persona's credential is the only value it carries")
	case canon == "Host" || canon == "Content-Length" || canon == "Transfer-Encoding":
		return configError(field, "is set by the request itself")
	}
	return nil
}

// Search implements driver.Searcher.
func (s *Search) Search(ctx context.Context, persona driver.Token, query string, k int) ([]driver.Hit, error) {
	hits, err := s.search(ctx, persona, query, k)
	return hits, redact(err, persona)
}

const opSearch = "Search"

func (s *Search) search(ctx context.Context, persona driver.Token, query string, k int) ([]driver.Hit, error) {
	if k < 1 || k > maxK {
		return nil, driver.NewError(driver.Permanent, opSearch, 0, fmt.Sprintf("k must be between 1 and %d", maxK), nil)
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	req, err := s.request(ctx, persona, templateData{Query: query, K: k})
	if err != nil {
		return nil, err
	}
	body, status, err := s.do(req)
	if err != nil {
		return nil, err
	}
	return s.decode(body, status, k)
}

// request renders the request. The credential is set last, only in its
// header, after checking that nothing rendered from config or query holds it.
func (s *Search) request(ctx context.Context, persona driver.Token, data templateData) (*http.Request, error) {
	if !validHeaderValue(persona.Reveal()) {
		return nil, driver.NewError(driver.Permanent, opSearch, 0, reasonCredential, nil)
	}
	u, values, err := s.renderURL(data)
	if err != nil {
		return nil, err
	}
	body, err := s.renderBody(data)
	if err != nil {
		return nil, err
	}
	parts := append(values, u.String(), body)
	if leaks(persona, parts...) || s.headersLeak(persona) || s.guard.leaks(parts...) || s.guard.leaks(s.headerValues()...) {
		return nil, driver.NewError(driver.Permanent, opSearch, 0, reasonLeak, nil)
	}
	var reader *bytes.Reader
	if s.body != nil {
		reader = bytes.NewReader([]byte(body))
	}
	req, err := newRequest(ctx, s.method, u.String(), reader)
	if err != nil {
		return nil, driver.NewError(driver.Permanent, opSearch, 0, "request could not be built", nil)
	}
	s.setRequestHeaders(req, persona)
	return req, nil
}

// newRequest keeps a nil body a true nil: a typed nil *bytes.Reader would
// make http.NewRequest dereference it.
func newRequest(ctx context.Context, method, u string, body *bytes.Reader) (*http.Request, error) {
	if body == nil {
		return http.NewRequestWithContext(ctx, method, u, nil)
	}
	return http.NewRequestWithContext(ctx, method, u, body)
}

func (s *Search) setRequestHeaders(req *http.Request, persona driver.Token) {
	req.Header.Set("Accept", "application/json")
	if s.body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for name, values := range s.headers {
		req.Header[name] = slices.Clone(values)
	}
	if persona != "" {
		req.Header.Set(s.credHeader, s.credPrefix+persona.Reveal())
	}
}

func (s *Search) headerValues() []string {
	var out []string
	for _, values := range s.headers {
		out = append(out, values...)
	}
	return out
}

func (s *Search) headersLeak(persona driver.Token) bool {
	for _, values := range s.headers {
		if leaks(persona, values...) {
			return true
		}
	}
	return false
}

// renderURL renders the query parameters onto the URL; it returns the
// rendered values too, for the leak check before encoding.
func (s *Search) renderURL(data templateData) (*url.URL, []string, error) {
	u := *s.url
	q := url.Values{}
	var values []string
	for _, p := range s.query {
		v, err := render(p.tmpl, data)
		if err != nil {
			return nil, nil, driver.NewError(driver.Permanent, opSearch, 0, "Query["+label(p.name)+"] template failed to render", nil)
		}
		q.Set(p.name, v)
		values = append(values, v)
	}
	u.RawQuery = q.Encode()
	return &u, values, nil
}

// renderBody renders the POST body and refuses one that is not JSON: the
// Body template was checked with a hostile sample query, so this is a query
// that still broke it.
func (s *Search) renderBody(data templateData) (string, error) {
	if s.body == nil {
		return "", nil
	}
	out, err := render(s.body, data)
	if err != nil {
		return "", driver.NewError(driver.Permanent, opSearch, 0, "Body template failed to render", nil)
	}
	if !json.Valid([]byte(out)) {
		return "", driver.NewError(driver.Permanent, opSearch, 0, "Body template rendered something that is not JSON", nil)
	}
	return out, nil
}

// do sends req and reads the bounded reply of a 2xx; any other status is an
// error naming it, its body unread.
func (s *Search) do(req *http.Request) ([]byte, int, error) {
	resp, err := s.client.Do(req)
	if err != nil {
		return nil, 0, classify(opSearch, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		_ = resp.Body.Close()
		return nil, resp.StatusCode, statusError(opSearch, resp.StatusCode)
	}
	if err := s.limits.wrap(resp); err != nil {
		return nil, resp.StatusCode, withStatus(classify(opSearch, err), resp.StatusCode)
	}
	body, err := readAll(resp.Body)
	if err != nil {
		return nil, resp.StatusCode, withStatus(classify(opSearch, err), resp.StatusCode)
	}
	return body, resp.StatusCode, nil
}

// withStatus records the status a failure arrived with.
func withStatus(err error, status int) error {
	if de, ok := err.(*driver.Error); ok && de.StatusCode == 0 {
		de.StatusCode = status
	}
	return err
}

// decode reads the hits from a reply. A reply without the configured hit
// array is not "nothing found" but a reply we could not understand.
func (s *Search) decode(body []byte, status, k int) ([]driver.Hit, error) {
	doc, err := decodeJSON(body)
	if err != nil {
		return nil, malformed(opSearch, status, "not JSON")
	}
	v, err := s.hits.get(doc)
	if err != nil {
		return nil, malformed(opSearch, status, "hits pointer "+label(s.hits.raw)+": not found")
	}
	items, ok := v.([]any)
	if !ok {
		return nil, malformed(opSearch, status, "hits pointer "+label(s.hits.raw)+": not an array")
	}
	out := make([]driver.Hit, 0, min(len(items), k))
	for i, item := range items[:min(len(items), k)] {
		h, err := s.hit(item, i, status)
		if err != nil {
			return nil, err
		}
		out = append(out, h)
	}
	return out, nil
}

// hit reads one hit. An ID becomes both ChunkID and, up to its first '#',
// DocumentID, the contract's convention for chunk IDs.
func (s *Search) hit(item any, i, status int) (driver.Hit, error) {
	id, err := idValue(s.id, item)
	if err != nil {
		return driver.Hit{}, malformed(opSearch, status, fmt.Sprintf("id pointer %s in hit %d: %v", label(s.id.raw), i, err))
	}
	h := driver.Hit{ChunkID: id, DocumentID: documentID(id)}
	if s.text != nil {
		text, err := textValue(*s.text, item)
		if err != nil {
			return driver.Hit{}, malformed(opSearch, status, fmt.Sprintf("text pointer %s in hit %d: %v", label(s.text.raw), i, err))
		}
		h.Text = text
	}
	return h, nil
}

// idValue reads an ID: a string, or a number kept as its digits. IDs are
// compared and end up in status, so one that is empty, longer than
// httpdriver.MaxReplyID bytes or not printable is refused, not rewritten:
// rewriting it could make it match another.
func idValue(p pointer, item any) (string, error) {
	v, err := p.get(item)
	if err != nil {
		return "", err
	}
	var id string
	switch v := v.(type) {
	case string:
		id = v
	case json.Number:
		id = v.String()
	default:
		return "", errNotString
	}
	if id == "" || len(id) > httpdriver.MaxReplyID || !safetext.Printable(id) {
		return "", errBadID
	}
	return id, nil
}

// textValue reads a hit's text. It is kept as the target sent it: payload
// detection looks for the planted text in it, which cleaning could hide.
func textValue(p pointer, item any) (string, error) {
	v, err := p.get(item)
	if err != nil {
		return "", err
	}
	text, ok := v.(string)
	if !ok {
		return "", errNotString
	}
	return text, nil
}

var (
	errNotString = fmt.Errorf("not a string")
	errBadID     = fmt.Errorf("%s", reasonBadID)
)

// documentID is the part of a chunk ID before its first '#'; the whole ID
// when there is none, or nothing before it.
func documentID(id string) string {
	if doc, _, _ := strings.Cut(id, "#"); doc != "" {
		return doc
	}
	return id
}

// validHeaderName reports an RFC 9110 token.
func validHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !tokenChar(s[i]) {
			return false
		}
	}
	return true
}

func tokenChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
		strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}

// validHeaderValue refuses control characters (bar tab), which would split
// or smuggle headers.
func validHeaderValue(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < ' ' && c != '\t') || c == 0x7f {
			return false
		}
	}
	return true
}

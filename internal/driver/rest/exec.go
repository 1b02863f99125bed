package rest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"

	"github.com/ragcanary/ragcanary/internal/driver"
	httpdriver "github.com/ragcanary/ragcanary/internal/driver/http"
	"github.com/ragcanary/ragcanary/internal/jsonpointer"
	"github.com/ragcanary/ragcanary/internal/safetext"
)

// MissingCapture is a request needing a captured value the driver does not
// hold (lost with a restart before it was persisted, or never captured).
// It is not a driver error of any kind: it says nothing about the target,
// so no caller may read it as "already gone".
type MissingCapture struct {
	Operation string
	Request   int
	Name      string
}

func (e *MissingCapture) Error() string {
	return fmt.Sprintf("rest source: operations.%s[%d] needs the captured value %s, which is not held (not captured, or lost before it was persisted)",
		e.Operation, e.Request, label(e.Name))
}

// Refused is a request the driver would not send: a value that would move
// it off the base path, a rendering that failed, a credential outside its
// header. Like MissingCapture it is no driver error of any kind, so no
// caller reads it as "already gone".
type Refused struct {
	Operation string
	Request   int
	Reason    string
}

func (e *Refused) Error() string {
	return fmt.Sprintf("rest source: operations.%s[%d] refused: %s", e.Operation, e.Request, e.Reason)
}

// ErrNotDeclared is an operation the spec does not declare; it is not a
// driver error of any kind, so no caller reads it as "already gone".
var ErrNotDeclared = errors.New("operation not declared")

func notDeclared(op string) error {
	return fmt.Errorf("rest source: %s is not declared in spec.driver.rest.operations: %w", op, ErrNotDeclared)
}

// call is one run of an operation: its named values and the captures it
// has made so far, which later requests of the same call read.
type call struct {
	op   *operation
	data named
	// captured are the values this call captured.
	captured map[string]string
}

// run sends the operation's requests in order. The document's held
// captures and this call's own are visible to each request; this call's
// are returned.
func (d *Driver) run(ctx context.Context, c *call) (map[string]string, error) {
	c.captured = map[string]string{}
	for _, r := range c.op.requests {
		if err := d.send(ctx, c, r); err != nil {
			return nil, err
		}
	}
	return c.captured, nil
}

// send renders, sends and reads one request, bounded by the driver's
// per-call timeout.
func (d *Driver) send(ctx context.Context, c *call, r *request) error {
	op := c.op.op()
	data := c.data
	data.Captured = mergeMaps(c.data.Captured, c.captured)
	for _, name := range r.captured {
		if _, ok := data.Captured[name]; !ok {
			return &MissingCapture{Operation: c.op.name, Request: r.index, Name: name}
		}
	}
	out, err := r.render(d.base, &data, false)
	if err != nil {
		return &Refused{Operation: c.op.name, Request: r.index, Reason: configText(err)}
	}
	ctx, cancel := context.WithTimeout(ctx, d.timeout)
	defer cancel()
	req, err := d.newRequest(ctx, op, c.op.name, r, out)
	if err != nil {
		return err
	}
	resp, err := d.client.Do(req)
	if err != nil {
		return transportError(op, r.index, err)
	}
	if err := httpdriver.BoundBody(resp, d.maxReply, d.budget); err != nil {
		return transportError(op, r.index, err)
	}
	defer func() { _ = resp.Body.Close() }()
	if !r.accepts(resp.StatusCode) {
		return statusError(op, r, resp.StatusCode)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return transportError(op, r.index, err)
	}
	return r.capture(op, body, resp.StatusCode, c.captured, c.op.name)
}

// newRequest builds the request and sets the credential, last, after
// checking that nothing rendered holds it.
func (d *Driver) newRequest(ctx context.Context, op, opName string, r *request, out *rendered) (*http.Request, error) {
	var body io.Reader
	if out.hasBody {
		body = strings.NewReader(out.body)
	}
	req, err := http.NewRequestWithContext(ctx, r.method, out.url.String(), body)
	if err != nil {
		return nil, driver.NewError(driver.Permanent, op, 0, fmt.Sprintf("request %d could not be built", r.index), nil)
	}
	req.Header.Set("Accept", "application/json")
	if out.hasBody {
		req.Header.Set("Content-Type", "application/json")
	}
	for name, values := range out.headers {
		req.Header[name] = slices.Clone(values)
	}
	secrets, err := d.auth.set(ctx, req)
	if err != nil {
		return nil, err
	}
	parts := []string{out.url.String(), out.url.Path, out.body}
	for _, vs := range out.url.Query() {
		parts = append(parts, vs...)
	}
	for name, vs := range out.headers {
		if http.CanonicalHeaderKey(name) != http.CanonicalHeaderKey(d.auth.headerName()) {
			parts = append(parts, vs...)
		}
	}
	if leaks(secrets, parts...) {
		return nil, &Refused{Operation: opName, Request: r.index,
			Reason: "the credential would appear outside its header (in the path, query, a header or the body)"}
	}
	return req, nil
}

// accepts reports whether status is one the request expects.
func (r *request) accepts(status int) bool {
	if r.expect == nil {
		return status >= 200 && status < 300
	}
	return slices.Contains(r.expect, status)
}

// statusError classifies a status the request does not accept as the
// contract driver does (a 404 is Permanent "not found", so a revocation
// finding the grant gone is "already gone"), naming the request.
func statusError(op string, r *request, status int) error {
	base := httpdriver.StatusError(op, status)
	var de *driver.Error
	if !errors.As(base, &de) {
		return base
	}
	de.Reason = fmt.Sprintf("request %d (%s): %s, status not accepted", r.index, r.method, de.Reason)
	return de
}

// capture reads the request's capture pointers out of the reply into into.
func (r *request) capture(op string, body []byte, status int, into map[string]string, opName string) error {
	if len(r.captures) == 0 {
		return nil
	}
	doc, err := jsonpointer.Decode(body)
	if err != nil {
		return driver.NewError(driver.Transient, op, status, fmt.Sprintf("request %d: the reply is not JSON, so nothing can be captured", r.index), nil)
	}
	for _, c := range r.captures {
		v, err := captureValue(doc, c.ptr)
		if err != nil {
			return driver.NewError(driver.Transient, op, status,
				fmt.Sprintf("operations.%s[%d].capture[%s]: pointer %s %v", opName, r.index, label(c.name), label(c.ptr.String()), err), nil)
		}
		into[c.name] = v
	}
	return nil
}

// captureValue resolves p in doc to a string or a number, validated.
func captureValue(doc any, p jsonpointer.Pointer) (string, error) {
	v, err := p.Get(doc)
	if err != nil {
		return "", errors.New("names nothing in the reply")
	}
	var s string
	switch v := v.(type) {
	case string:
		s = v
	case json.Number:
		s = v.String()
	case nil:
		return "", errors.New("names null, not a string or a number")
	case map[string]any, []any:
		return "", errors.New("names an object or an array, not a string or a number")
	default:
		return "", errors.New("names a boolean, not a string or a number")
	}
	if why := validCapture(s); why != "" {
		return "", fmt.Errorf("names a value that is %s", why)
	}
	return s, nil
}

func mergeMaps(a, b map[string]string) map[string]string {
	out := make(map[string]string, len(a)+len(b))
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}

// configText is a rendering failure's text: it names fields and the
// configured template, never a value (the template engine's errors quote
// the template, which is config).
func configText(err error) string {
	s, _, _ := strings.Cut(err.Error(), "\n")
	return safetext.Clean(s, 300)
}

package rest

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strings"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/jsonpointer"
	"github.com/ragcanary/ragcanary/internal/safetemplate"
	"github.com/ragcanary/ragcanary/internal/safetext"
)

// The operations, named as in spec.driver.rest.operations.
const (
	opCreate          = "createDocument"
	opDelete          = "deleteDocument"
	opGrant           = "grant"
	opRevoke          = "revoke"
	opGrantGroup      = "grantGroup"
	opRevokeGroup     = "revokeGroup"
	opAddToGroup      = "addToGroup"
	opRemoveFromGroup = "removeFromGroup"
	opUpdate          = "updateContent"
	opLookup          = "lookupDocument"
)

// driverOps are the driver operations' names in errors.
var driverOps = map[string]string{
	opCreate: "CreateDocument", opDelete: "DeleteDocument", opGrant: "Grant", opRevoke: "Revoke",
	opGrantGroup: "GrantGroup", opRevokeGroup: "RevokeGroup", opAddToGroup: "AddMember",
	opRemoveFromGroup: "RemoveMember", opUpdate: "UpdateContent", opLookup: "LookupDocument",
}

// operation is one declared operation, compiled.
type operation struct {
	name     string
	requests []*request
}

// op is the driver operation's name for errors.
func (o *operation) op() string { return driverOps[o.name] }

// request is one declared request, compiled.
type request struct {
	index    int
	method   string
	path     *safetemplate.Template // nil: the base URL itself
	query    []param
	headers  []param
	body     *safetemplate.Template // nil: no body
	expect   []int                  // nil: any 2xx
	captures []capture
	// captured are the names its templates read from .Captured.
	captured []string
}

type param struct {
	name string
	t    *safetemplate.Template
}

type capture struct {
	name string
	ptr  jsonpointer.Pointer
}

// maxLabel bounds a configured name quoted in a message.
const maxLabel = 120

// label quotes a configured name for a message, cleaned of control runes.
func label(s string) string { return safetext.Clean(fmt.Sprintf("%q", s), maxLabel) }

var nameRE = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_]{0,63}$`)

// validName: a declared name starts with a letter (names starting with _
// are the driver's own, see createdMark).
func validName(s string) bool { return nameRE.MatchString(s) }

var (
	capturedRef = regexp.MustCompile(`\.Captured\.([A-Za-z_][A-Za-z0-9_]*)`)
	valuesRef   = regexp.MustCompile(`\.Values\.([A-Za-z_][A-Za-z0-9_]*)`)
)

// refused are the header names a request may not set: the credential's,
// the connection's and the request's own.
var refused = map[string]bool{
	"Authorization": true, "Proxy-Authorization": true, "Cookie": true, "Host": true,
	"Content-Length": true, "Transfer-Encoding": true, "Connection": true, "Keep-Alive": true,
	"Proxy-Connection": true, "Te": true, "Trailer": true, "Upgrade": true,
}

// compile checks the declared operations and parses their templates. Each
// error names the field (spec.driver.rest.operations.<op>[i].<field>).
func compile(spec *v1alpha1.RESTDriver, authHeader string) (map[string]*operation, error) {
	declared := declaredOperations(&spec.Operations)
	for _, required := range []string{opCreate, opDelete} {
		if len(declared[required]) == 0 {
			return nil, fmt.Errorf("operations.%s is required: every run creates and deletes its document", required)
		}
	}
	capturedAnywhere := map[string]bool{}
	for _, reqs := range declared {
		for _, r := range reqs {
			for name := range r.Capture {
				capturedAnywhere[name] = true
			}
		}
	}
	ops := map[string]*operation{}
	for _, name := range slices.Sorted(maps.Keys(declared)) {
		reqs := declared[name]
		if len(reqs) > 8 {
			return nil, fmt.Errorf("operations.%s: at most 8 requests", name)
		}
		o := &operation{name: name}
		for i := range reqs {
			field := fmt.Sprintf("operations.%s[%d]", name, i)
			r, err := compileRequest(field, i, &reqs[i], spec.Values, capturedAnywhere, authHeader)
			if err != nil {
				return nil, err
			}
			o.requests = append(o.requests, r)
		}
		ops[name] = o
	}
	if err := checkLookup(ops); err != nil {
		return nil, err
	}
	return ops, nil
}

// declaredOperations are the operations with at least one request.
func declaredOperations(o *v1alpha1.RESTOperations) map[string][]v1alpha1.RESTRequest {
	all := map[string][]v1alpha1.RESTRequest{
		opCreate: o.CreateDocument, opDelete: o.DeleteDocument, opGrant: o.Grant, opRevoke: o.Revoke,
		opGrantGroup: o.GrantGroup, opRevokeGroup: o.RevokeGroup, opAddToGroup: o.AddToGroup,
		opRemoveFromGroup: o.RemoveFromGroup, opUpdate: o.UpdateContent, opLookup: o.LookupDocument,
	}
	for name, reqs := range all {
		if len(reqs) == 0 {
			delete(all, name)
		}
	}
	return all
}

// checkLookup: lookupDocument must capture every name createDocument
// captures, since it stands in for createDocument's replies.
func checkLookup(ops map[string]*operation) error {
	lookup := ops[opLookup]
	if lookup == nil {
		return nil
	}
	has := map[string]bool{}
	for _, r := range lookup.requests {
		for _, c := range r.captures {
			has[c.name] = true
		}
	}
	for _, r := range ops[opCreate].requests {
		for _, c := range r.captures {
			if !has[c.name] {
				return fmt.Errorf("operations.lookupDocument must capture %s, which createDocument captures", label(c.name))
			}
		}
	}
	return nil
}

func compileRequest(field string, index int, spec *v1alpha1.RESTRequest, values map[string]v1alpha1.RESTValue, captured map[string]bool, authHeader string) (*request, error) {
	r := &request{index: index, method: string(spec.Method)}
	switch r.method {
	case http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
	default:
		return nil, fmt.Errorf("%s.method must be GET, POST, PUT, PATCH or DELETE", field)
	}
	texts := []string{spec.Path, spec.Body}
	for _, m := range []map[string]v1alpha1.RESTValue{spec.Query, spec.Headers} {
		for _, v := range m {
			texts = append(texts, string(v))
		}
	}
	if err := r.compileRefs(field, texts, values, captured); err != nil {
		return nil, err
	}
	sample := sampleData(values, slices.Sorted(maps.Keys(captured)))
	var err error
	if spec.Path != "" {
		if r.path, err = parseTemplate(field+".path", spec.Path, sample.escaped()); err != nil {
			return nil, err
		}
	}
	if spec.Body != "" {
		if r.method == http.MethodGet {
			return nil, fmt.Errorf("%s.body: a GET sends no body", field)
		}
		if r.body, err = parseTemplate(field+".body", spec.Body, sample); err != nil {
			return nil, err
		}
	}
	if r.query, err = compileParams(field+".query", spec.Query, sample, validQueryName); err != nil {
		return nil, err
	}
	if r.headers, err = compileParams(field+".headers", spec.Headers, sample, headerNameCheck(authHeader)); err != nil {
		return nil, err
	}
	if err := r.compileExpect(field, spec.Expect); err != nil {
		return nil, err
	}
	if err := r.compileCaptures(field, spec.Capture); err != nil {
		return nil, err
	}
	return r, r.checkSample(field, sample)
}

func compileParams(field string, in map[string]v1alpha1.RESTValue, sample *named, check func(string) string) ([]param, error) {
	var out []param
	for _, name := range slices.Sorted(maps.Keys(in)) {
		f := field + "[" + label(name) + "]"
		if why := check(name); why != "" {
			return nil, fmt.Errorf("%s: %s", f, why)
		}
		t, err := parseTemplate(f, string(in[name]), sample)
		if err != nil {
			return nil, err
		}
		out = append(out, param{name: name, t: t})
	}
	return out, nil
}

func validQueryName(name string) string {
	if name == "" || len(name) > 128 || safetext.Clean(name, 128) != name {
		return "a parameter needs a printable name of at most 128 bytes"
	}
	return ""
}

// headerNameCheck refuses malformed header names and those a request may
// not set, the auth header among them.
func headerNameCheck(authHeader string) func(string) string {
	return func(name string) string {
		canon := http.CanonicalHeaderKey(name)
		switch {
		case !validToken(name):
			return "not a valid header name"
		case refused[canon]:
			return "may not be set by a request (credential, hop-by-hop or set by the request itself)"
		case authHeader != "" && canon == http.CanonicalHeaderKey(authHeader):
			return "is the auth header; the credential is the only value it carries"
		}
		return ""
	}
}

func validToken(s string) bool {
	if s == "" || len(s) > 128 {
		return false
	}
	for _, c := range []byte(s) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return true
}

func (r *request) compileExpect(field string, expect []int32) error {
	for _, code := range expect {
		if code < 200 || code > 499 || code >= 300 && code < 400 {
			return fmt.Errorf("%s.expect: %d is not a 2xx or 4xx status (redirects are never followed)", field, code)
		}
		r.expect = append(r.expect, int(code))
	}
	return nil
}

func (r *request) compileCaptures(field string, in map[string]v1alpha1.RESTValue) error {
	if len(in) > MaxCapturesPerDocument {
		return fmt.Errorf("%s.capture: at most %d names", field, MaxCapturesPerDocument)
	}
	for _, name := range slices.Sorted(maps.Keys(in)) {
		if !validName(name) {
			return fmt.Errorf("%s.capture[%s]: a name is a letter then letters, digits or _ (at most 64)", field, label(name))
		}
		p, err := jsonpointer.Parse(string(in[name]))
		if err != nil {
			return fmt.Errorf("%s.capture[%s]: %v", field, label(name), err)
		}
		r.captures = append(r.captures, capture{name: name, ptr: p})
	}
	return nil
}

// compileRefs finds the named values the templates read: a .Values name
// must be declared, a .Captured name captured by some request.
func (r *request) compileRefs(field string, texts []string, values map[string]v1alpha1.RESTValue, captured map[string]bool) error {
	seen := map[string]bool{}
	for _, text := range texts {
		for _, m := range valuesRef.FindAllStringSubmatch(text, -1) {
			if _, ok := values[m[1]]; !ok {
				return fmt.Errorf("%s reads .Values.%s, which spec.driver.rest.values does not declare", field, safetext.Clean(m[1], maxLabel))
			}
		}
		for _, m := range capturedRef.FindAllStringSubmatch(text, -1) {
			if !captured[m[1]] {
				return fmt.Errorf("%s reads .Captured.%s, which no request captures", field, safetext.Clean(m[1], maxLabel))
			}
			if !seen[m[1]] {
				seen[m[1]] = true
				r.captured = append(r.captured, m[1])
			}
		}
	}
	slices.Sort(r.captured)
	return nil
}

// sampleText fills every named value when a request is checked at build:
// a quote, a backslash, a newline and the characters a path must escape,
// so a body that is JSON only for tame values is refused before any run.
const sampleText = "sample \"quoted\" \\ back\nslash </script> /?#% .."

// checkSample renders the request once with sample values: the path must
// stay under the base, the body must be JSON.
func (r *request) checkSample(field string, sample *named) error {
	if _, err := r.render(sampleBase, sample, true); err != nil {
		return fmt.Errorf("%s: with sample values: %v", field, err)
	}
	return nil
}

func sampleData(values map[string]v1alpha1.RESTValue, captured []string) *named {
	d := &named{DocumentID: sampleText, Title: sampleText, Body: sampleText, Subject: sampleText,
		Group: sampleText, Principal: sampleText, Run: sampleText,
		Values: staticValues(values), Captured: map[string]string{}}
	for _, name := range captured {
		d.Captured[name] = "12345"
	}
	return d
}

func staticValues(values map[string]v1alpha1.RESTValue) map[string]string {
	out := make(map[string]string, len(values))
	for k, v := range values {
		out[k] = string(v)
	}
	return out
}

// validJSON reports whether s is one JSON document.
func validJSON(s string) bool { return json.Valid([]byte(s)) }

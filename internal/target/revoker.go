package target

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/driver"
)

// The revocation URL field messages name.
const revocationURLField = "spec.oauth2.revocation.url"

// maxRevocationReply bounds what a reply to a revocation request may put
// into memory: it is read to reuse the connection and thrown away.
const maxRevocationReply = 64 << 10

// CredentialRevoker revokes a persona's OAuth2 client at its
// authorization server and restores it, by the requests the Persona
// declares (spec.oauth2.revocation), for RevokeCredential canaries. Its
// errors are driver errors naming the step and status only: never the
// token, the body sent or the reply.
type CredentialRevoker struct {
	url    string
	token  string
	spec   v1alpha1.CredentialRevocation
	client *http.Client
}

// CredentialRevoker builds obj's revoker: nil, nil when the persona
// declares no revocation. The URL passes the allowlist and the bodies must
// be JSON before anything is sent.
func (d *Door) CredentialRevoker(ctx context.Context, obj *v1alpha1.Persona) (*CredentialRevoker, error) {
	if obj.Spec.OAuth2 == nil || obj.Spec.OAuth2.Revocation == nil {
		return nil, nil
	}
	r := obj.Spec.OAuth2.Revocation
	u, err := d.Allow.Check(revocationURLField, r.URL)
	if err != nil {
		return nil, Named("Persona", obj.Name, err)
	}
	for name, req := range map[string]v1alpha1.CredentialRequest{"revoke": r.Revoke, "restore": r.Restore} {
		if req.Body != "" && !json.Valid([]byte(req.Body)) {
			return nil, Named("Persona", obj.Name, Stall(v1alpha1.ReasonInvalidRevocation, "spec.oauth2.revocation.%s.body is not JSON", name))
		}
	}
	c := &CredentialRevoker{url: u.String(), spec: *r, client: NoRedirects(d.httpClient())}
	if ref := r.TokenSecretRef; ref != nil {
		tok, err := Credential(ctx, d.Reader, obj.Namespace, *ref)
		if err != nil {
			return nil, Named("Persona", obj.Name, err)
		}
		c.token = string(tok)
	}
	return c, nil
}

// Revoke sends the revoke request.
func (c *CredentialRevoker) Revoke(ctx context.Context) error {
	return c.send(ctx, "RevokeCredential", c.spec.Revoke)
}

// Restore sends the restore request.
func (c *CredentialRevoker) Restore(ctx context.Context) error {
	return c.send(ctx, "RestoreCredential", c.spec.Restore)
}

// send makes one request, bounded by DefaultTimeout; a status outside
// expect (any 2xx by default) is an error of the kind a driver's would be.
func (c *CredentialRevoker) send(ctx context.Context, op string, r v1alpha1.CredentialRequest) error {
	ctx, cancel := context.WithTimeout(ctx, DefaultTimeout)
	defer cancel()
	var body io.Reader
	if r.Body != "" {
		body = bytes.NewReader([]byte(r.Body))
	}
	req, err := http.NewRequestWithContext(ctx, r.Method, c.url, body)
	if err != nil {
		return driver.NewError(driver.Permanent, op, 0, "invalid request", err)
	}
	if r.Body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.client.Do(req)
	if err != nil {
		return driver.NewError(driver.Transient, op, 0, "unreachable", err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxRevocationReply))
	if expected(r.Expect, resp.StatusCode) {
		return nil
	}
	switch s := resp.StatusCode; {
	case s == http.StatusUnauthorized || s == http.StatusForbidden:
		return driver.NewError(driver.Unauthorized, op, s, "the administrative API refused the request", nil)
	case s >= 400 && s < 500:
		return driver.NewError(driver.Permanent, op, s, "the administrative API rejected the request", nil)
	default:
		return driver.NewError(driver.Transient, op, s, "unexpected status", nil)
	}
}

// expected: a status listed in expect, or any 2xx when none is listed.
func expected(expect []int32, status int) bool {
	if len(expect) == 0 {
		return status >= 200 && status < 300
	}
	return slices.Contains(expect, int32(status))
}

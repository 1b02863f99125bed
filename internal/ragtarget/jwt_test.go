package ragtarget_test

import (
	"context"
	"crypto"
	"crypto/hmac"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ragcanary/ragcanary/internal/driver"
	"github.com/ragcanary/ragcanary/internal/ragtarget"
)

// issuer is a JWKS endpoint with one RSA key, counting its fetches.
type issuer struct {
	key     *rsa.PrivateKey
	kid     string
	url     string
	fetches atomic.Int32
}

func newIssuer(t *testing.T) *issuer {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	is := &issuer{key: key, kid: "k1"}
	b64 := base64.RawURLEncoding.EncodeToString
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		is.fetches.Add(1)
		_ = json.NewEncoder(w).Encode(map[string]any{"keys": []map[string]string{{
			"kty": "RSA", "kid": is.kid, "use": "sig", "alg": "RS256",
			"n": b64(key.N.Bytes()), "e": b64(big.NewInt(int64(key.E)).Bytes()),
		}}})
	}))
	t.Cleanup(srv.Close)
	is.url = srv.URL
	return is
}

// sign makes a JWT with header and claims, signed RS256 by key.
func sign(t *testing.T, key *rsa.PrivateKey, header, claims map[string]any) string {
	t.Helper()
	unsigned := segment(t, header) + "." + segment(t, claims)
	digest := sha256.Sum256([]byte(unsigned))
	sig, err := rsa.SignPKCS1v15(rand.Reader, key, crypto.SHA256, digest[:])
	if err != nil {
		t.Fatal(err)
	}
	return unsigned + "." + base64.RawURLEncoding.EncodeToString(sig)
}

func segment(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

// TestJWTAccessTokensUntilTheirExpiry: a JWT access token of the
// configured issuer is a persona whose principal is its sub, accepted
// until its exp by the issuer's keys alone; forgeries (alg none, HMAC
// keyed with the public key, another key under the same kid, another
// issuer or audience, altered claims) are refused, and tokens naming
// unknown keys fetch the key set at most once per ten seconds.
func TestJWTAccessTokensUntilTheirExpiry(t *testing.T) {
	is := newIssuer(t)
	e := start(t, ragtarget.Config{JWT: &ragtarget.JWTConfig{JWKSURL: is.url, Issuer: "https://issuer.test", Audience: "ragtarget"}})
	e.create("memo", "quarterly zephyr forecast", "carol-client")
	e.advanceTo(3 * time.Second)
	now := e.clk.Now()
	claims := func(mut func(map[string]any)) map[string]any {
		c := map[string]any{"iss": "https://issuer.test", "sub": "carol-client", "aud": []string{"ragtarget"},
			"exp": now.Add(10 * time.Second).Unix(), "iat": now.Unix()}
		if mut != nil {
			mut(c)
		}
		return c
	}
	rs256 := map[string]any{"alg": "RS256", "kid": is.kid, "typ": "at+jwt"}
	valid := sign(t, is.key, rs256, claims(nil))
	if !e.visible(driver.Token(valid), "zephyr", "memo") {
		t.Fatal("a valid JWT access token did not read the document granted to its sub")
	}

	other, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	pub := is.key.N.Bytes()
	mac := hmac.New(sha256.New, pub)
	hsUnsigned := segment(t, map[string]any{"alg": "HS256", "kid": is.kid}) + "." + segment(t, claims(nil))
	mac.Write([]byte(hsUnsigned))
	parts := strings.Split(valid, ".")
	forged := map[string]string{
		"alg none":          segment(t, map[string]any{"alg": "none", "kid": is.kid}) + "." + segment(t, claims(nil)) + ".",
		"HMAC with the key": hsUnsigned + "." + base64.RawURLEncoding.EncodeToString(mac.Sum(nil)),
		"another key":       sign(t, other, rs256, claims(nil)),
		"another issuer":    sign(t, is.key, rs256, claims(func(c map[string]any) { c["iss"] = "https://evil.test" })),
		"another audience":  sign(t, is.key, rs256, claims(func(c map[string]any) { c["aud"] = "elsewhere" })),
		"no exp":            sign(t, is.key, rs256, claims(func(c map[string]any) { delete(c, "exp") })),
		"not yet valid":     sign(t, is.key, rs256, claims(func(c map[string]any) { c["nbf"] = now.Add(time.Minute).Unix() })),
		"altered claims":    parts[0] + "." + segment(t, claims(func(c map[string]any) { c["sub"] = "mallory" })) + "." + parts[2],
		"too long":          valid + strings.Repeat("A", 9<<10),
		"not a JWT":         "carol-client",
	}
	for name, tok := range forged {
		if _, err := e.drv.Search(context.Background(), driver.Token(tok), "zephyr", 10); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}

	// Unknown key IDs within 10 s of the last fetch fetch nothing.
	before := is.fetches.Load()
	for _, kid := range []string{"made-up-1", "made-up-2", "made-up-3"} {
		tok := sign(t, is.key, map[string]any{"alg": "RS256", "kid": kid}, claims(nil))
		if _, err := e.drv.Search(context.Background(), driver.Token(tok), "zephyr", 10); err == nil {
			t.Errorf("kid %s: accepted", kid)
		}
	}
	if n := is.fetches.Load() - before; n != 0 {
		t.Errorf("unknown key IDs fetched the key set %d times within 10 s of the last fetch, want 0", n)
	}

	// Accepted up to its exp, refused from it on.
	e.advanceTo(12 * time.Second)
	if !e.visible(driver.Token(valid), "zephyr", "memo") {
		t.Fatal("the token was refused a second before its exp")
	}
	e.advance()
	if _, err := e.drv.Search(context.Background(), driver.Token(valid), "zephyr", 10); err == nil {
		t.Fatal("the token was accepted at its exp")
	}
}

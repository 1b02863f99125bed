package ragtarget

import (
	"context"
	"crypto"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"strings"
	"sync"
	"time"
)

// JWTConfig makes ragtarget a resource server that accepts OAuth2 access
// tokens issued as JWTs (RFC 9068) by one authorization server, verified
// locally against the server's published keys, as most resource servers
// do: a token is accepted until its exp, whatever the server has revoked
// since. That is the lag a credential-revocation canary measures.
type JWTConfig struct {
	// JWKSURL is where the issuer publishes its signing keys.
	JWKSURL string
	// Issuer is the iss every token must carry.
	Issuer string
	// Audience, when set, must be one of a token's aud values.
	Audience string
	// PrincipalClaim names the claim that is the principal ("sub" by
	// default; for a client-credentials token that is the client ID).
	PrincipalClaim string
	// HTTPClient fetches the keys (http.DefaultClient when nil).
	HTTPClient *http.Client
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

const (
	// maxJWT bounds a token ragtarget parses: a token is a header value.
	maxJWT = 8 << 10
	// maxJWKS bounds the key set it reads.
	maxJWKS = 1 << 20
	// jwksRefetchEvery bounds how often an unknown key ID fetches the key
	// set again, so tokens naming made-up keys cannot make ragtarget hammer
	// the issuer.
	jwksRefetchEvery = 10 * time.Second
	jwksTimeout      = 10 * time.Second
)

// errJWT is every refusal: a caller sees that the token was not accepted,
// never which check failed (the reason is for ragtarget's own tests).
var errJWT = errors.New("the bearer token was not accepted")

// jwtVerifier checks RS256 JWTs against the issuer's key set.
type jwtVerifier struct {
	cfg JWTConfig

	mu        sync.Mutex
	keys      map[string]*rsa.PublicKey
	fetchedAt time.Time
}

func newJWTVerifier(cfg JWTConfig) (*jwtVerifier, error) {
	if cfg.JWKSURL == "" || cfg.Issuer == "" {
		return nil, errors.New("an OAuth2 JWT verifier needs a JWKS URL and an issuer")
	}
	if cfg.PrincipalClaim == "" {
		cfg.PrincipalClaim = "sub"
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = http.DefaultClient
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &jwtVerifier{cfg: cfg}, nil
}

// looksLikeJWT: three dot-separated parts; anything else is a plain
// persona token.
func looksLikeJWT(token string) bool { return strings.Count(token, ".") == 2 }

// principal verifies token and returns its principal claim.
func (v *jwtVerifier) principal(ctx context.Context, token string) (string, error) {
	if len(token) > maxJWT || !looksLikeJWT(token) {
		return "", fmt.Errorf("%w: not a JWT of at most %d bytes", errJWT, maxJWT)
	}
	parts := strings.Split(token, ".")
	var header struct {
		Alg string `json:"alg"`
		Kid string `json:"kid"`
	}
	if err := decodeSegment(parts[0], &header); err != nil {
		return "", fmt.Errorf("%w: header: %v", errJWT, err)
	}
	// Only RS256: "none" and HMAC (which a public key would "verify") are
	// the classic forgeries.
	if header.Alg != "RS256" {
		return "", fmt.Errorf("%w: alg %q is not RS256", errJWT, header.Alg)
	}
	key, err := v.key(ctx, header.Kid)
	if err != nil {
		return "", err
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil {
		return "", fmt.Errorf("%w: signature encoding", errJWT)
	}
	digest := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if err := rsa.VerifyPKCS1v15(key, crypto.SHA256, digest[:], sig); err != nil {
		return "", fmt.Errorf("%w: signature", errJWT)
	}
	var claims map[string]any
	if err := decodeSegment(parts[1], &claims); err != nil {
		return "", fmt.Errorf("%w: claims: %v", errJWT, err)
	}
	return v.checkClaims(claims)
}

// checkClaims applies iss, exp, nbf and aud, and reads the principal.
func (v *jwtVerifier) checkClaims(claims map[string]any) (string, error) {
	if iss, _ := claims["iss"].(string); iss != v.cfg.Issuer {
		return "", fmt.Errorf("%w: issuer", errJWT)
	}
	now := v.cfg.Now()
	exp, ok := claims["exp"].(float64)
	if !ok {
		return "", fmt.Errorf("%w: no exp", errJWT)
	}
	if !now.Before(time.Unix(int64(exp), 0)) {
		return "", fmt.Errorf("%w: expired", errJWT)
	}
	if nbf, ok := claims["nbf"].(float64); ok && now.Before(time.Unix(int64(nbf), 0)) {
		return "", fmt.Errorf("%w: not yet valid", errJWT)
	}
	if v.cfg.Audience != "" && !hasAudience(claims["aud"], v.cfg.Audience) {
		return "", fmt.Errorf("%w: audience", errJWT)
	}
	p, _ := claims[v.cfg.PrincipalClaim].(string)
	if p == "" {
		return "", fmt.Errorf("%w: no %s claim", errJWT, v.cfg.PrincipalClaim)
	}
	return p, nil
}

// hasAudience: aud is a string or an array of strings (RFC 7519 4.1.3).
func hasAudience(aud any, want string) bool {
	switch a := aud.(type) {
	case string:
		return a == want
	case []any:
		for _, x := range a {
			if s, _ := x.(string); s == want {
				return true
			}
		}
	}
	return false
}

func decodeSegment(seg string, into any) error {
	b, err := base64.RawURLEncoding.DecodeString(seg)
	if err != nil {
		return errors.New("not base64url")
	}
	if err := json.Unmarshal(b, into); err != nil {
		return errors.New("not a JSON object")
	}
	return nil
}

// key returns the key kid names, fetching the key set when it is unknown
// (at most every jwksRefetchEvery).
func (v *jwtVerifier) key(ctx context.Context, kid string) (*rsa.PublicKey, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if k, ok := v.keys[kid]; ok {
		return k, nil
	}
	if !v.fetchedAt.IsZero() && v.cfg.Now().Sub(v.fetchedAt) < jwksRefetchEvery {
		return nil, fmt.Errorf("%w: unknown key", errJWT)
	}
	v.fetchedAt = v.cfg.Now()
	keys, err := v.fetch(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w: fetching the issuer's keys: %v", errJWT, err)
	}
	v.keys = keys
	if k, ok := keys[kid]; ok {
		return k, nil
	}
	return nil, fmt.Errorf("%w: unknown key", errJWT)
}

// fetch reads the JWKS: its RSA signing keys of at least 2048 bits.
func (v *jwtVerifier) fetch(ctx context.Context) (map[string]*rsa.PublicKey, error) {
	ctx, cancel := context.WithTimeout(ctx, jwksTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, v.cfg.JWKSURL, nil)
	if err != nil {
		return nil, err
	}
	resp, err := v.cfg.HTTPClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("status %d", resp.StatusCode)
	}
	var set struct {
		Keys []struct {
			Kty, Kid, Use, Alg, N, E string
		} `json:"keys"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxJWKS)).Decode(&set); err != nil {
		return nil, errors.New("the key set is not JSON")
	}
	keys := map[string]*rsa.PublicKey{}
	for _, k := range set.Keys {
		if k.Kty != "RSA" || (k.Use != "" && k.Use != "sig") || (k.Alg != "" && k.Alg != "RS256") {
			continue
		}
		n, errN := base64.RawURLEncoding.DecodeString(k.N)
		e, errE := base64.RawURLEncoding.DecodeString(k.E)
		if errN != nil || errE != nil || len(e) == 0 || len(e) > 4 {
			continue
		}
		pub := &rsa.PublicKey{N: new(big.Int).SetBytes(n), E: int(new(big.Int).SetBytes(e).Int64())}
		if pub.N.BitLen() < 2048 || pub.E < 3 {
			continue
		}
		keys[k.Kid] = pub
	}
	return keys, nil
}

// Package httpdriver implements driver.Driver over the versioned REST contract
// in api/contract/driver.v1.yaml, using the client generated from it.
//
// Source-side calls carry the configured source credential; persona-side calls
// carry the persona's own token, so the system under test authenticates and
// filters exactly as it would for a real user.
package httpdriver

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"time"

	"github.com/ragcanary/ragcanary/internal/contract"
	"github.com/ragcanary/ragcanary/internal/driver"
)

// Defaults applied when a Config field is zero.
const (
	DefaultTimeout          = 10 * time.Second
	DefaultMaxResponseBytes = 1 << 20
	DefaultRetryBackoff     = 200 * time.Millisecond
	// maxBackoff caps the exponential backoff between retries.
	maxBackoff = 5 * time.Second
	// maxK mirrors the contract's upper bound on k, checked before any call.
	maxK = 100
)

// Config configures a Driver.
type Config struct {
	// BaseURL is the root of the contract, e.g. "https://rag.example/"; required.
	BaseURL string
	// SourceToken is the bearer credential for source-side calls.
	SourceToken string
	// Timeout bounds each attempt of each call, reading the reply body
	// included; DefaultTimeout when zero.
	Timeout time.Duration
	// MaxResponseBytes bounds a reply body; DefaultMaxResponseBytes when zero.
	MaxResponseBytes int64
	// ReplyBudget, when set, bounds the reply bytes held at once by this
	// driver's calls and every other driver sharing it; a body that finds
	// it full fails at once with a transient "reply budget exhausted".
	// Nil bounds each reply alone.
	ReplyBudget ReplyBudget
	// Retries is how many times a call failing with a transient error is
	// retried; zero disables retries.
	Retries int
	// RetryBackoff is the first delay between retries, doubled each time;
	// DefaultRetryBackoff when zero.
	RetryBackoff time.Duration
	// HTTPClient is used for requests; http.DefaultClient when nil. Its
	// redirect policy is replaced: the driver never follows redirects.
	HTTPClient *http.Client
}

// Driver talks to one RAG system over the http contract. It is safe for
// concurrent use.
type Driver struct {
	client      contract.ClientInterface
	sourceToken string
	timeout     time.Duration
	retries     int
	backoff     time.Duration
}

var (
	_ driver.Driver        = (*Driver)(nil)
	_ driver.Conversations = (*Driver)(nil)
)

// New validates cfg and returns a Driver.
func New(cfg Config) (*Driver, error) {
	if err := validateBaseURL(cfg.BaseURL); err != nil {
		return nil, err
	}
	if cfg.Retries < 0 || cfg.Timeout < 0 || cfg.MaxResponseBytes < 0 || cfg.RetryBackoff < 0 {
		return nil, errors.New("httpdriver: retries, timeout, backoff and response limit must not be negative")
	}
	hc := withoutRedirects(cfg.HTTPClient)
	limit := orDefault(cfg.MaxResponseBytes, DefaultMaxResponseBytes)
	client, err := contract.NewClient(cfg.BaseURL, contract.WithHTTPClient(&limitedDoer{doer: hc, limit: limit, budget: cfg.ReplyBudget}))
	if err != nil {
		return nil, errors.New("httpdriver: invalid base URL")
	}
	return &Driver{
		client:      client,
		sourceToken: cfg.SourceToken,
		timeout:     orDefault(cfg.Timeout, DefaultTimeout),
		retries:     cfg.Retries,
		backoff:     orDefault(cfg.RetryBackoff, DefaultRetryBackoff),
	}, nil
}

// withoutRedirects copies c (http.DefaultClient when nil) so that it never
// follows a redirect: the bearer token would travel to a URL nobody allowed,
// and whatever that URL answers could read as an absence. A 3xx reaches
// checkResponse as a status and becomes an error naming it.
func withoutRedirects(c *http.Client) *http.Client {
	if c == nil {
		c = http.DefaultClient
	}
	out := *c
	out.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &out
}

// validateBaseURL rejects URLs the driver cannot call. The URL is not echoed
// back because it may carry userinfo.
func validateBaseURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return errors.New("httpdriver: base URL must be an absolute http or https URL")
	}
	return nil
}

func orDefault[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// bearer returns a request editor that sets the Authorization header.
func bearer(token string) contract.RequestEditorFn {
	return func(_ context.Context, req *http.Request) error {
		req.Header.Set("Authorization", "Bearer "+token)
		return nil
	}
}

// attempt is one try of an operation; it returns a classified error or nil.
type attempt func(ctx context.Context) error

// do runs op with a per-attempt timeout, retrying transient failures with
// exponential backoff and jitter. Every operation of contract v1 is idempotent
// (PUT/DELETE writes, read-only search and answer), so any of them may be
// retried; permanent and unauthorized errors are returned at once because a
// repeat cannot change the outcome.
func (d *Driver) do(ctx context.Context, op attempt) error {
	delay := d.backoff
	for try := 0; ; try++ {
		err := d.once(ctx, op)
		if err == nil || !driver.IsTransient(err) || try >= d.retries || ctx.Err() != nil {
			return err
		}
		if !sleep(ctx, jitter(delay)) {
			return err
		}
		delay = min(2*delay, maxBackoff)
	}
}

func (d *Driver) once(ctx context.Context, op attempt) error {
	ctx, cancel := context.WithTimeout(ctx, d.timeout)
	defer cancel()
	return op(ctx)
}

// jitter spreads retries of many probes over [d/2, d) so they do not hit a
// recovering target in lockstep.
func jitter(d time.Duration) time.Duration {
	half := d / 2
	if half <= 0 {
		return d
	}
	return half + rand.N(half)
}

// sleep waits for d or until ctx ends; it reports whether the full wait elapsed.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// Capabilities implements driver.CapabilityReporter.
func (d *Driver) Capabilities(ctx context.Context) (driver.Capabilities, error) {
	const op = "Capabilities"
	var out driver.Capabilities
	err := d.do(ctx, func(ctx context.Context) error {
		resp, err := d.client.GetCapabilities(ctx)
		if err := checkResponse(op, resp, err); err != nil {
			return err
		}
		out, err = decodeCapabilities(resp)
		return err
	})
	return out, err
}

// CreateDocument implements driver.Documents.
func (d *Driver) CreateDocument(ctx context.Context, doc driver.Document) error {
	principals := doc.Principals
	if principals == nil {
		principals = []string{} // the contract requires the field, even when empty
	}
	body := contract.DocumentInput{Title: doc.Title, Body: doc.Body, Principals: principals}
	return d.write(ctx, "CreateDocument", func(ctx context.Context) (*http.Response, error) {
		return d.client.PutDocument(ctx, doc.ID, body, bearer(d.sourceToken))
	})
}

// DeleteDocument implements driver.Documents.
func (d *Driver) DeleteDocument(ctx context.Context, id string) error {
	return d.write(ctx, "DeleteDocument", func(ctx context.Context) (*http.Response, error) {
		return d.client.DeleteDocument(ctx, id, bearer(d.sourceToken))
	})
}

// Grant implements driver.Permissions.
func (d *Driver) Grant(ctx context.Context, documentID, principal string) error {
	return d.write(ctx, "Grant", func(ctx context.Context) (*http.Response, error) {
		return d.client.PutGrant(ctx, documentID, principal, bearer(d.sourceToken))
	})
}

// Revoke implements driver.Permissions.
func (d *Driver) Revoke(ctx context.Context, documentID, principal string) error {
	return d.write(ctx, "Revoke", func(ctx context.Context) (*http.Response, error) {
		return d.client.DeleteGrant(ctx, documentID, principal, bearer(d.sourceToken))
	})
}

// AddMember implements driver.Permissions.
func (d *Driver) AddMember(ctx context.Context, group, principal string) error {
	return d.write(ctx, "AddMember", func(ctx context.Context) (*http.Response, error) {
		return d.client.PutGroupMember(ctx, group, principal, bearer(d.sourceToken))
	})
}

// RemoveMember implements driver.Permissions.
func (d *Driver) RemoveMember(ctx context.Context, group, principal string) error {
	return d.write(ctx, "RemoveMember", func(ctx context.Context) (*http.Response, error) {
		return d.client.DeleteGroupMember(ctx, group, principal, bearer(d.sourceToken))
	})
}

// write runs a source-side call whose success reply carries no body.
func (d *Driver) write(ctx context.Context, op string, call func(context.Context) (*http.Response, error)) error {
	return d.do(ctx, func(ctx context.Context) error {
		resp, err := call(ctx)
		if err := checkResponse(op, resp, err); err != nil {
			return err
		}
		return drain(op, resp)
	})
}

// Search implements driver.Searcher.
func (d *Driver) Search(ctx context.Context, persona driver.Token, query string, k int) ([]driver.Hit, error) {
	const op = "Search"
	if k < 1 || k > maxK {
		return nil, driver.NewError(driver.Permanent, op, 0, fmt.Sprintf("k must be between 1 and %d", maxK), nil)
	}
	var hits []driver.Hit
	err := d.do(ctx, func(ctx context.Context) error {
		resp, err := d.client.Search(ctx, contract.SearchRequest{Query: query, K: k}, bearer(persona.Reveal()))
		if err := checkResponse(op, resp, err); err != nil {
			return err
		}
		hits, err = decodeHits(resp)
		return err
	})
	return hits, err
}

// Answer implements driver.Answerer.
func (d *Driver) Answer(ctx context.Context, persona driver.Token, question string) (driver.Answer, error) {
	const op = "Answer"
	var out driver.Answer
	err := d.do(ctx, func(ctx context.Context) error {
		resp, err := d.client.Answer(ctx, contract.AnswerRequest{Question: question}, bearer(persona.Reveal()))
		if err := checkResponse(op, resp, err); err != nil {
			return err
		}
		out, err = decodeAnswer(resp)
		return err
	})
	return out, err
}

// StartConversation implements driver.Conversations. A retried start may
// leave an unused conversation behind at the target; the retry's ID is the
// one returned, and the target bounds what it keeps.
func (d *Driver) StartConversation(ctx context.Context, persona driver.Token, question string) (string, driver.Answer, error) {
	const op = "StartConversation"
	var (
		id  string
		out driver.Answer
	)
	err := d.do(ctx, func(ctx context.Context) error {
		resp, err := d.client.StartConversation(ctx, contract.AnswerRequest{Question: question}, bearer(persona.Reveal()))
		if err := checkResponse(op, resp, err); err != nil {
			return err
		}
		id, out, err = decodeConversation(resp)
		return err
	})
	if err != nil {
		return "", driver.Answer{}, err
	}
	return id, out, nil
}

// FollowUp implements driver.Conversations. A conversation that is gone or
// not the persona's is a 404: a permanent error, never an empty answer.
func (d *Driver) FollowUp(ctx context.Context, persona driver.Token, id, question string) (driver.Answer, error) {
	const op = "FollowUp"
	if !validConversationID(id) {
		return driver.Answer{}, driver.NewError(driver.Permanent, op, 0, "invalid conversation ID", nil)
	}
	var out driver.Answer
	err := d.do(ctx, func(ctx context.Context) error {
		resp, err := d.client.FollowUp(ctx, id, contract.AnswerRequest{Question: question}, bearer(persona.Reveal()))
		if err := checkResponse(op, resp, err); err != nil {
			return err
		}
		out, err = decodeFollowUp(resp)
		return err
	})
	return out, err
}

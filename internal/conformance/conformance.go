// Package conformance drives an implementation of the driver contract through
// a full canary lifecycle (create, grant, visible, revoke, excluded, delete)
// and reports each check by name, so a shim author learns exactly which
// promise of the contract their system breaks.
package conformance

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/driver"
)

// Check names, in the order they run.
const (
	CheckCapabilities         = "capabilities"
	CheckCreateDocument       = "create-document"
	CheckCreateIdempotent     = "create-idempotent"
	CheckGrant                = "grant"
	CheckSearchVisible        = "search-visible"
	CheckAnswerVisible        = "answer-visible"
	CheckUnauthorized         = "unauthorized-persona"
	CheckRevoke               = "revoke"
	CheckSearchExcluded       = "search-excluded"
	CheckAnswerExcluded       = "answer-excluded"
	CheckConversationVisible  = "conversation-visible"
	CheckConversationUnknown  = "conversation-unknown"
	CheckConversationExcluded = "conversation-excluded"
	CheckStreamVisible        = "stream-visible"
	CheckStreamExcluded       = "stream-excluded"
	CheckDeleteDocument       = "delete-document"
	CheckDeleteIdempotent     = "delete-idempotent"
	confirmationsForAbsence   = 2
	searchK                   = 10
)

// Config says what to check and how long to wait.
type Config struct {
	Driver driver.Driver
	// PersonaToken is the credential of a persona the check may grant access to.
	PersonaToken driver.Token
	// PersonaPrincipal is the principal PersonaToken resolves to.
	PersonaPrincipal string
	// Timeout bounds each wait for visibility or exclusion.
	Timeout time.Duration
	// PollInterval is the pause between probes while waiting.
	PollInterval time.Duration
	// Chat says the Answer and Conversation surfaces are the assistant's
	// own chat API (spec.surfaces.chat), whatever the driver's
	// capabilities say; Stream that its streaming answer is checked too.
	Chat, Stream bool
}

// Status of one check.
type Status string

const (
	Pass Status = "PASS"
	Fail Status = "FAIL"
	Skip Status = "SKIP"
)

// Result is the outcome of one named check. Detail never holds credentials.
type Result struct {
	Name   string
	Status Status
	Detail string
}

// Report lists every check in order.
type Report struct{ Results []Result }

// Passed reports whether no check failed.
func (r Report) Passed() bool { return len(r.Failed()) == 0 }

// Failed returns the names of failed checks.
func (r Report) Failed() []string {
	var out []string
	for _, res := range r.Results {
		if res.Status == Fail {
			out = append(out, res.Name)
		}
	}
	return out
}

// runner carries state between checks.
type runner struct {
	cfg    Config
	report Report
	docID  string
	token  string // the query handle searched and asked for
	// payload is in the document but never in a request, so an answer that
	// merely echoes the question is not mistaken for one quoting the document.
	payload string
	caps    driver.Capabilities
	// conversation is the persona's conversation whose first turn showed
	// the document; its follow-ups must stop showing it after the revoke.
	conversation  string
	conversations driver.Conversations
}

// Run executes the checks. The test document is always deleted at the end.
func Run(ctx context.Context, cfg Config) Report {
	r := &runner{cfg: cfg, docID: "ragcanary-conformance-" + randomHex(6), token: "rcconf" + randomHex(8), payload: "rcconfpayload" + randomHex(8)}
	defer r.cleanup(ctx)
	if !r.step(CheckCapabilities, r.capabilities(ctx)) {
		r.skipRest(CheckCreateDocument, CheckCreateIdempotent, CheckGrant, CheckSearchVisible, CheckAnswerVisible, CheckUnauthorized, CheckRevoke, CheckSearchExcluded, CheckAnswerExcluded, CheckConversationVisible, CheckConversationUnknown, CheckConversationExcluded, CheckStreamVisible, CheckStreamExcluded, CheckDeleteDocument, CheckDeleteIdempotent)
		return r.report
	}
	if !r.step(CheckCreateDocument, r.create(ctx)) {
		r.skipRest(CheckCreateIdempotent, CheckGrant, CheckSearchVisible, CheckAnswerVisible, CheckUnauthorized, CheckRevoke, CheckSearchExcluded, CheckAnswerExcluded, CheckConversationVisible, CheckConversationUnknown, CheckConversationExcluded, CheckStreamVisible, CheckStreamExcluded, CheckDeleteDocument, CheckDeleteIdempotent)
		return r.report
	}
	r.step(CheckCreateIdempotent, r.create(ctx))
	granted := r.step(CheckGrant, r.grantTwice(ctx))
	visible := granted && r.step(CheckSearchVisible, r.await(ctx, r.searchShows, true))
	if !visible {
		r.skip(CheckSearchVisible, "grant failed")
	}
	r.answerCheck(ctx, CheckAnswerVisible, visible, true)
	r.streamCheck(ctx, CheckStreamVisible, visible, true)
	r.conversationCheck(CheckConversationVisible, visible, func() error { return r.await(ctx, r.conversationStarts, true) })
	r.conversationCheck(CheckConversationUnknown, true, func() error { return r.unknownConversation(ctx) })
	r.step(CheckUnauthorized, r.unauthorized(ctx))
	revoked := r.step(CheckRevoke, r.revokeTwice(ctx))
	if visible && revoked {
		r.step(CheckSearchExcluded, r.await(ctx, r.searchShows, false))
	} else {
		r.skip(CheckSearchExcluded, "the document was never visible or the revoke failed")
	}
	r.answerCheck(ctx, CheckAnswerExcluded, visible && revoked, false)
	r.streamCheck(ctx, CheckStreamExcluded, visible && revoked, false)
	r.conversationCheck(CheckConversationExcluded, r.conversation != "" && revoked, func() error { return r.await(ctx, r.followUpShows, false) })
	r.step(CheckDeleteDocument, r.cfg.Driver.DeleteDocument(ctx, r.docID))
	r.step(CheckDeleteIdempotent, r.cfg.Driver.DeleteDocument(ctx, r.docID))
	return r.report
}

// step records a check and reports whether it passed.
func (r *runner) step(name string, err error) bool {
	if err != nil {
		r.report.Results = append(r.report.Results, Result{Name: name, Status: Fail, Detail: err.Error()})
		return false
	}
	r.report.Results = append(r.report.Results, Result{Name: name, Status: Pass})
	return true
}

func (r *runner) skip(name, why string) {
	if slices.ContainsFunc(r.report.Results, func(res Result) bool { return res.Name == name }) {
		return
	}
	r.report.Results = append(r.report.Results, Result{Name: name, Status: Skip, Detail: why})
}

func (r *runner) skipRest(names ...string) {
	for _, n := range names {
		r.skip(n, "an earlier check failed")
	}
}

func (r *runner) answerCheck(ctx context.Context, name string, ready, want bool) {
	switch {
	case !r.caps.Answer && !r.cfg.Chat:
		r.skip(name, "no answer surface")
	case !ready:
		r.skip(name, "an earlier check failed")
	default:
		r.step(name, r.await(ctx, r.answerShows, want))
	}
}

// streamCheck runs the answer check on the streaming chat surface, when
// one is declared.
func (r *runner) streamCheck(ctx context.Context, name string, ready, want bool) {
	s, ok := r.cfg.Driver.(driver.Streamer)
	switch {
	case !r.cfg.Stream || !ok:
		r.skip(name, "no streaming chat surface declared")
	case !ready:
		r.skip(name, "an earlier check failed")
	default:
		r.step(name, r.await(ctx, func(ctx context.Context) (bool, error) {
			a, err := s.AnswerStream(ctx, r.cfg.PersonaToken, r.question())
			if err != nil {
				return false, err
			}
			return r.shows(a), nil
		}, want))
	}
}

// conversationCheck runs check when the target serves conversations
// (contract v1.1) and the checks it depends on passed.
func (r *runner) conversationCheck(name string, ready bool, check func() error) {
	conv, ok := r.cfg.Driver.(driver.Conversations)
	switch {
	case !r.caps.Conversation && !r.cfg.Chat:
		r.skip(name, "no conversation surface")
	case !ok:
		r.skip(name, "the driver has no conversation API")
	case !ready:
		r.skip(name, "an earlier check failed")
	default:
		r.conversations = conv
		r.step(name, check())
	}
}

func (r *runner) capabilities(ctx context.Context) error {
	caps, err := r.cfg.Driver.Capabilities(ctx)
	if err != nil {
		return err
	}
	r.caps = caps
	if caps.ContractVersion != driver.ContractVersion {
		return fmt.Errorf("contract version %q, want %q", caps.ContractVersion, driver.ContractVersion)
	}
	if !caps.Supports(v1alpha1.RevokeRemoveGrant) {
		return errors.New("RemoveGrant is not a supported revocation method")
	}
	return nil
}

// create writes the test document with no grant: access comes only from the
// grant step, so visibility proves the grant path works.
func (r *runner) create(ctx context.Context) error {
	return r.cfg.Driver.CreateDocument(ctx, driver.Document{
		ID:         r.docID,
		Title:      "ragcanary conformance " + r.token,
		Body:       "This document exists to check the driver contract. Marker " + r.token + " and payload " + r.payload + ".",
		Principals: []string{},
	})
}

func (r *runner) grantTwice(ctx context.Context) error {
	if err := r.cfg.Driver.Grant(ctx, r.docID, r.cfg.PersonaPrincipal); err != nil {
		return err
	}
	if err := r.cfg.Driver.Grant(ctx, r.docID, r.cfg.PersonaPrincipal); err != nil {
		return fmt.Errorf("second identical grant: %w", err)
	}
	return nil
}

func (r *runner) revokeTwice(ctx context.Context) error {
	if err := r.cfg.Driver.Revoke(ctx, r.docID, r.cfg.PersonaPrincipal); err != nil {
		return err
	}
	if err := r.cfg.Driver.Revoke(ctx, r.docID, r.cfg.PersonaPrincipal); err != nil {
		return fmt.Errorf("second identical revoke: %w", err)
	}
	return nil
}

func (r *runner) unauthorized(ctx context.Context) error {
	_, err := r.cfg.Driver.Search(ctx, driver.Token("ragcanary-invalid-"+randomHex(8)), r.token, searchK)
	if driver.IsUnauthorized(err) {
		return nil
	}
	if err == nil {
		return errors.New("a search with an unknown persona token succeeded; want 401 or 403")
	}
	return fmt.Errorf("a search with an unknown persona token failed as %v, want unauthorized", err)
}

// probe answers whether the persona sees the test document; an error is a
// failed probe, never an answer.
type probe func(ctx context.Context) (bool, error)

func (r *runner) searchShows(ctx context.Context) (bool, error) {
	hits, err := r.cfg.Driver.Search(ctx, r.cfg.PersonaToken, r.token, searchK)
	if err != nil {
		return false, err
	}
	// A search surface of the assistant's own may name hits by its own
	// IDs: the payload in a hit's text is the document too.
	return slices.ContainsFunc(hits, func(h driver.Hit) bool {
		return h.DocumentID == r.docID || (h.Text != "" && strings.Contains(h.Text, r.payload))
	}), nil
}

func (r *runner) answerShows(ctx context.Context) (bool, error) {
	a, err := r.cfg.Driver.Answer(ctx, r.cfg.PersonaToken, r.question())
	if err != nil {
		return false, err
	}
	return r.shows(a), nil
}

func (r *runner) question() string { return "What is the marker " + r.token + "?" }

// shows: the answer cites the document or quotes its payload; the marker
// echoed from the question is no evidence.
func (r *runner) shows(a driver.Answer) bool {
	cited := slices.ContainsFunc(a.Citations, func(c string) bool { return strings.HasPrefix(c, r.docID+"#") })
	return cited || strings.Contains(a.Text, r.payload)
}

// conversationStarts starts a conversation asking about the document and
// keeps it when its first turn shows the document.
func (r *runner) conversationStarts(ctx context.Context) (bool, error) {
	id, a, err := r.conversations.StartConversation(ctx, r.cfg.PersonaToken, r.question())
	if err != nil {
		return false, err
	}
	if !r.shows(a) {
		return false, nil
	}
	r.conversation = id
	return true, nil
}

// followUpShows asks again in the kept conversation. The system must
// authorise each turn anew: after the revoke, history is no evidence.
func (r *runner) followUpShows(ctx context.Context) (bool, error) {
	a, err := r.conversations.FollowUp(ctx, r.cfg.PersonaToken, r.conversation, r.question())
	if err != nil {
		return false, err
	}
	return r.shows(a), nil
}

// unknownConversation: a follow-up in a conversation that does not exist
// must fail as not found, never come back as an empty answer.
func (r *runner) unknownConversation(ctx context.Context) error {
	_, err := r.conversations.FollowUp(ctx, r.cfg.PersonaToken, "ragcanary-conformance-missing-"+randomHex(6), r.question())
	switch {
	case err == nil:
		return errors.New("a follow-up in a conversation that does not exist succeeded; want 404")
	case !driver.IsPermanent(err):
		return fmt.Errorf("a follow-up in a conversation that does not exist failed as %v, want 404", err)
	}
	return nil
}

// await polls p until it reports want; absence needs consecutive
// confirmations so one lucky probe against a lagging replica does not pass.
// A refused persona credential ends the wait at once: it will not heal.
func (r *runner) await(ctx context.Context, p probe, want bool) error {
	ctx, cancel := context.WithTimeout(ctx, r.cfg.Timeout)
	defer cancel()
	need := 1
	if !want {
		need = confirmationsForAbsence
	}
	streak, probeErrors := 0, 0
	var lastErr error
	for {
		got, err := p(ctx)
		switch {
		case driver.IsUnauthorized(err):
			return fmt.Errorf("persona refused: %w", err)
		case err != nil && ctx.Err() != nil:
			// The wait's own deadline cut this probe short: that says
			// nothing about the target, so the error before it is kept.
			return timeoutError(want, r.cfg.Timeout, probeErrors, lastErr)
		case err != nil:
			probeErrors++
			lastErr = err
			streak = 0
		case got == want:
			streak++
		default:
			streak = 0
		}
		if streak >= need {
			return nil
		}
		if !wait(ctx, r.cfg.PollInterval) {
			return timeoutError(want, r.cfg.Timeout, probeErrors, lastErr)
		}
	}
}

func timeoutError(want bool, timeout time.Duration, probeErrors int, lastErr error) error {
	state := "visible"
	if !want {
		state = "absent"
	}
	msg := fmt.Sprintf("the document was not %s within %v", state, timeout)
	if probeErrors > 0 {
		msg += fmt.Sprintf(" (%d probe errors, last: %v)", probeErrors, lastErr)
	}
	return errors.New(msg)
}

func wait(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// cleanup deletes the document whatever happened, with its own deadline so a
// cancelled run still tidies up.
func (r *runner) cleanup(ctx context.Context) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	_ = r.cfg.Driver.DeleteDocument(ctx, r.docID)
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

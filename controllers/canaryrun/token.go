package canaryrun

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/driver"
	"github.com/ragcanary/ragcanary/internal/probe"
	"github.com/ragcanary/ragcanary/internal/schedule"
)

// Keys of the run's token Secret.
const (
	HandleSecretKey  = "handle"
	PayloadSecretKey = "payload"
	// UpdatedPayloadSecretKey holds a content-freshness run's second
	// payload, the one the revocation step writes over the first.
	UpdatedPayloadSecretKey = "updatedPayload"
	// legacyTokenSecretKey is the single key written by builds before the
	// handle and the payload were split.
	legacyTokenSecretKey = "token"
)

// Prefixes of the terms. Answers are matched after probe.Normalize, which
// keeps only letters and digits, so each prefix holds a letter that neither
// hex digits nor the other prefixes have ("n" in the handle's, "l" in the
// payload's, "u" in the updated payload's): no term can ever be part of
// another, however an answer re-styles them.
const (
	handlePrefix  = "rcanary"
	payloadPrefix = "rcpayload"
	UpdatedPrefix = "rcupdated"
)

// runSecretLabels are the labels of a Secret created for run.
func runSecretLabels(run *v1alpha1.CanaryRun) map[string]string {
	return map[string]string{v1alpha1.LabelManagedBy: v1alpha1.ManagedBy, v1alpha1.LabelRun: schedule.LabelValue(run.Name)}
}

// withRunSecretLabels adds run's Secret labels to labels, keeping the others;
// changed says whether any was missing or different.
func withRunSecretLabels(labels map[string]string, run *v1alpha1.CanaryRun) (out map[string]string, changed bool) {
	out = maps.Clone(labels)
	if out == nil {
		out = map[string]string{}
	}
	for k, v := range runSecretLabels(run) {
		if out[k] != v {
			out[k], changed = v, true
		}
	}
	return out, changed
}

// CanaryToken is the pair of secrets a run plants in its document. Probes
// search and ask by Handle; Payload is never sent in a probe, so an answer
// can show it only by quoting the document, never by echoing the question.
// Both are secret: never log them, never put them in status or events.
type CanaryToken struct {
	Handle  string
	Payload string
	// Updated is a content-freshness run's second payload; empty otherwise.
	Updated string
}

// target is what the run's probes look for.
func (t CanaryToken) target(DocumentID string) probe.Target {
	return probe.Target{DocumentID: DocumentID, Handle: t.Handle, Payload: t.Payload, UpdatedPayload: t.Updated}
}

// newToken draws a handle and a payload of 128 random bits each, lower-case
// letters and digits only: every tokenizer keeps each one term, and
// probe.Normalize leaves each unchanged, so the payload is matched in
// normalised answer text as drawn. 128 bits keep an accidental match in
// any answer out of reach.
func newToken() (CanaryToken, error) {
	handle, err := randomTerm(handlePrefix)
	if err != nil {
		return CanaryToken{}, err
	}
	payload, err := randomTerm(payloadPrefix)
	if err != nil {
		return CanaryToken{}, err
	}
	return CanaryToken{Handle: handle, Payload: payload}, nil
}

func randomTerm(prefix string) (string, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return prefix + hex.EncodeToString(b), nil
}

// tokenHash is the short, non-reversible fingerprint status keeps to
// correlate a run with its document. It hashes the payload only, so a run
// from before the split (payload = its old token) keeps the hash it has.
func tokenHash(t CanaryToken) string {
	sum := sha256.Sum256([]byte(t.Payload))
	return hex.EncodeToString(sum[:6])
}

// canaryDocument is the planted document.
func canaryDocument(run *v1alpha1.CanaryRun, t CanaryToken) driver.Document {
	return driver.Document{
		ID:    run.Status.DocumentID,
		Title: "ragcanary revocation canary",
		Body:  canaryBody(t.Handle, t.Payload),
	}
}

// canaryBody is a canary's text. The handle and the payload are its only
// rare terms, and the handle sits in the first sentence with the payload:
// a search for the handle finds this document and nothing else, and an
// answer quoting that passage quotes the payload. Every sentence carries
// the payload and the text ends with it, so any part of it is recognisable
// to the end: a streamed answer (the InFlight surface), a derived document
// quoting one sentence (a digest, caught by sentinels). It stays below 400
// characters, which answers quote whole, and far below a passage, so
// chunking keeps it whole. Neither term is followed by punctuation a
// tokenizer might glue to it.
func canaryBody(handle, payload string) string {
	return "This ragcanary canary has the handle " + handle + " and the payload " + payload + " here. " +
		"Every sentence carries " + payload + " so any part of an answer quoting it shows it. " +
		"Content delivered after its revocation still shows " + payload
}

// ensureToken returns the run's token, creating its Secret (owned by the
// run) on first use. A Secret of that name not owned by the run is a
// problem for the user, reported as a message. It creates first and reads
// only when the Secret exists (a restart after an earlier attempt): a new
// run's planting then costs no Secret read.
func (r *CanaryRunReconciler) ensureToken(ctx context.Context, run *v1alpha1.CanaryRun) (CanaryToken, string, error) {
	t, err := newToken()
	if err != nil {
		return CanaryToken{}, "", err
	}
	data := map[string][]byte{HandleSecretKey: []byte(t.Handle), PayloadSecretKey: []byte(t.Payload)}
	if isContentRun(run) {
		if t.Updated, err = randomTerm(UpdatedPrefix); err != nil {
			return CanaryToken{}, "", err
		}
		data[UpdatedPayloadSecretKey] = []byte(t.Updated)
	}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: run.Namespace, Name: run.Status.TokenSecretName, Labels: runSecretLabels(run)},
		Type:       corev1.SecretTypeOpaque,
		Data:       data,
	}
	if err := controllerutil.SetControllerReference(run, secret, r.Scheme()); err != nil {
		return CanaryToken{}, "", err
	}
	err = r.wroteSecret(secret, r.Create(ctx, secret))
	if apierrors.IsAlreadyExists(err) {
		return r.readToken(ctx, run)
	}
	if err != nil {
		return CanaryToken{}, "", err
	}
	return t, "", nil
}

// readToken reads the token from the run's Secret, through the Secret
// value cache (the Secret is written once, at planting). A missing
// Secret is returned as a NotFound error.
func (r *CanaryRunReconciler) readToken(ctx context.Context, run *v1alpha1.CanaryRun) (CanaryToken, string, error) {
	var secret corev1.Secret
	key := types.NamespacedName{Namespace: run.Namespace, Name: run.Status.TokenSecretName}
	if err := r.Secrets.Get(ctx, key, &secret); err != nil {
		return CanaryToken{}, "", err
	}
	if !metav1.IsControlledBy(&secret, run) {
		return CanaryToken{}, fmt.Sprintf("Secret %q exists and is not owned by this run; delete or rename it", key.Name), nil
	}
	t, missing := tokenFromSecret(secret.Data)
	if missing != "" {
		return CanaryToken{}, fmt.Sprintf("Secret %q has no canary %s", key.Name, missing), nil
	}
	if isContentRun(run) {
		if t.Updated = string(secret.Data[UpdatedPayloadSecretKey]); t.Updated == "" {
			return CanaryToken{}, fmt.Sprintf("Secret %q has no canary updated payload", key.Name), nil
		}
	}
	return t, "", nil
}

// tokenFromSecret decodes the Secret's data; missing names what is absent.
//
// A run planted by a build before the split holds only the old single token,
// and its document holds nothing else. It reads as handle = payload = that
// token, so an in-flight run finishes with the rule it started with: the
// visibility it measured and the exclusion it will measure are judged alike.
// Such a run still counts an answer echoing its token as a sighting; only
// runs planted from now on are immune to the echo.
func tokenFromSecret(data map[string][]byte) (t CanaryToken, missing string) {
	handle, payload := string(data[HandleSecretKey]), string(data[PayloadSecretKey])
	if handle == "" && payload == "" {
		if legacy := string(data[legacyTokenSecretKey]); legacy != "" {
			return CanaryToken{Handle: legacy, Payload: legacy}, ""
		}
		return CanaryToken{}, "handle and payload"
	}
	switch {
	case handle == "":
		return CanaryToken{}, "handle"
	case payload == "":
		return CanaryToken{}, "payload"
	}
	return CanaryToken{Handle: handle, Payload: payload}, ""
}

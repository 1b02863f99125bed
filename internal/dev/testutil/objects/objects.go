// Package objects builds the six ragcanary kinds for tests with sound
// defaults, so a test names only what it is about.
//
// Every duration is set. A metav1.Duration field is a struct: a typed client
// sends it as "0s" even when the test never set it, so the CRD's default
// never applies and the API server (or the controller) would see zero.
// Pointer durations get the value the CRD would default them to, so a test
// without an API server sees what one would have stored.
package objects

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
)

// Default names the builders refer to; tests that create the referenced
// objects with these names need no options.
const (
	// CorpusName is the Corpus a canary or suite refers to by default.
	CorpusName = "corpus"
	// PersonaName is the persona a canary shares with and revokes from.
	PersonaName = "alice"
	// ControlName is the control persona that must never see the canary.
	ControlName = "mallory"
	// SourceSecretName holds a corpus's source credential under TokenKey.
	SourceSecretName = "source"
	// TokenKey is the Secret key every builder's credential refers to.
	TokenKey = "token"
)

// Duration is d as a metav1.Duration.
func Duration(d time.Duration) metav1.Duration { return metav1.Duration{Duration: d} }

// DurationPtr is d as a *metav1.Duration.
func DurationPtr(d time.Duration) *metav1.Duration { return &metav1.Duration{Duration: d} }

// Ref is a LocalObjectReference to name.
func Ref(name string) v1alpha1.LocalObjectReference { return v1alpha1.LocalObjectReference{Name: name} }

// SecretKey selects key of Secret name.
func SecretKey(name, key string) v1alpha1.SecretKeyReference {
	return v1alpha1.SecretKeyReference{Name: name, Key: key}
}

func meta(ns, name string) metav1.ObjectMeta { return metav1.ObjectMeta{Namespace: ns, Name: name} }

// Bounds is an exclusion interval as status keeps it; a negative duration
// leaves that bound unknown.
func Bounds(lower, upper time.Duration) *v1alpha1.ExclusionBounds {
	b := &v1alpha1.ExclusionBounds{}
	if lower >= 0 {
		b.Lower = DurationPtr(lower)
	}
	if upper >= 0 {
		b.Upper = DurationPtr(upper)
	}
	return b
}

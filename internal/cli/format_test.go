package cli

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
)

// bounds builds an ExclusionBounds for the plugin's tests; a negative
// duration leaves that bound unknown. The formatting itself is tested in
// internal/format.
func bounds(lower, upper time.Duration) *v1alpha1.ExclusionBounds {
	b := &v1alpha1.ExclusionBounds{}
	if lower >= 0 {
		b.Lower = &metav1.Duration{Duration: lower}
	}
	if upper >= 0 {
		b.Upper = &metav1.Duration{Duration: upper}
	}
	return b
}

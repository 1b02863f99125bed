package canaryrun

import (
	"maps"
	"strings"
	"testing"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/schedule"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestWithRunSecretLabels(t *testing.T) {
	run := &v1alpha1.CanaryRun{ObjectMeta: metav1.ObjectMeta{Name: "nightly-1767225600"}}
	long := &v1alpha1.CanaryRun{ObjectMeta: metav1.ObjectMeta{Name: strings.Repeat("a", 100)}}
	tests := []struct {
		name string
		// run the Secret belongs to.
		run *v1alpha1.CanaryRun
		// labels the Secret has.
		labels map[string]string
		// want is the labels after; wantChanged whether they changed.
		want        map[string]string
		wantChanged bool
	}{
		{name: "no labels", run: run, labels: nil, wantChanged: true,
			want: map[string]string{v1alpha1.LabelManagedBy: "ragcanary", v1alpha1.LabelRun: "nightly-1767225600"}},
		{name: "the user's labels are kept", run: run, labels: map[string]string{"team": "search"}, wantChanged: true,
			want: map[string]string{"team": "search", v1alpha1.LabelManagedBy: "ragcanary", v1alpha1.LabelRun: "nightly-1767225600"}},
		{name: "already labelled", run: run,
			labels: map[string]string{v1alpha1.LabelManagedBy: "ragcanary", v1alpha1.LabelRun: "nightly-1767225600"},
			want:   map[string]string{v1alpha1.LabelManagedBy: "ragcanary", v1alpha1.LabelRun: "nightly-1767225600"}},
		{name: "another manager's label is corrected", run: run, wantChanged: true,
			labels: map[string]string{v1alpha1.LabelManagedBy: "helm", v1alpha1.LabelRun: "nightly-1767225600"},
			want:   map[string]string{v1alpha1.LabelManagedBy: "ragcanary", v1alpha1.LabelRun: "nightly-1767225600"}},
		// Label values are at most 63 characters; run names up to 253.
		{name: "a long run name is shortened", run: long, wantChanged: true,
			want: map[string]string{v1alpha1.LabelManagedBy: "ragcanary", v1alpha1.LabelRun: schedule.LabelValue(long.Name)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := maps.Clone(tc.labels)
			got, changed := withRunSecretLabels(tc.labels, tc.run)
			if !maps.Equal(got, tc.want) || changed != tc.wantChanged {
				t.Errorf("labels %v changed %v, want %v changed %v", got, changed, tc.want, tc.wantChanged)
			}
			if len(got[v1alpha1.LabelRun]) > 63 {
				t.Errorf("run label %d characters, more than a label value may hold", len(got[v1alpha1.LabelRun]))
			}
			if !maps.Equal(tc.labels, before) {
				t.Error("the Secret's own label map was modified")
			}
		})
	}
}

package target

import (
	"testing"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
)

func TestCorpusLimit(t *testing.T) {
	operator := Limit{RequestsPerSecond: 7, Burst: 9, ReplyBytes: 1 << 20}
	tests := []struct {
		name string
		// spec is the corpus's own rate limit.
		spec v1alpha1.RateLimit
		// def is the operator default handed to the reconciler.
		def  Limit
		want Limit
	}{
		{"corpus sets both", v1alpha1.RateLimit{RequestsPerSecond: 2, Burst: 3}, operator,
			Limit{RequestsPerSecond: 2, Burst: 3, ReplyBytes: 1 << 20}},
		{"corpus sets none", v1alpha1.RateLimit{}, operator, operator},
		{"corpus sets only the rate", v1alpha1.RateLimit{RequestsPerSecond: 2}, operator,
			Limit{RequestsPerSecond: 2, Burst: 9, ReplyBytes: 1 << 20}},
		{"no operator default either", v1alpha1.RateLimit{}, Limit{}, DefaultLimit},
		{"operator sets only the rate limit", v1alpha1.RateLimit{}, Limit{RequestsPerSecond: 7, Burst: 9},
			Limit{RequestsPerSecond: 7, Burst: 9, ReplyBytes: DefaultReplyBytes}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &v1alpha1.Corpus{Spec: v1alpha1.CorpusSpec{RateLimit: tt.spec}}
			if got := CorpusLimit(c, tt.def); got != tt.want {
				t.Errorf("corpusRateLimit = %+v, want %+v", got, tt.want)
			}
		})
	}
}

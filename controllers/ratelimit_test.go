package controllers

import (
	"testing"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/probe"
)

func TestCorpusRateLimit(t *testing.T) {
	operator := probe.Limit{RequestsPerSecond: 7, Burst: 9}
	tests := []struct {
		name string
		// spec is the corpus's own rate limit.
		spec v1alpha1.RateLimit
		// def is the operator default handed to the reconciler.
		def  probe.Limit
		want probe.Limit
	}{
		{"corpus sets both", v1alpha1.RateLimit{RequestsPerSecond: 2, Burst: 3}, operator, probe.Limit{RequestsPerSecond: 2, Burst: 3}},
		{"corpus sets none", v1alpha1.RateLimit{}, operator, operator},
		{"corpus sets only the rate", v1alpha1.RateLimit{RequestsPerSecond: 2}, operator, probe.Limit{RequestsPerSecond: 2, Burst: 9}},
		{"no operator default either", v1alpha1.RateLimit{}, probe.Limit{}, DefaultSettings().RateLimit},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &v1alpha1.Corpus{Spec: v1alpha1.CorpusSpec{RateLimit: tt.spec}}
			if got := corpusRateLimit(c, tt.def); got != tt.want {
				t.Errorf("corpusRateLimit = %+v, want %+v", got, tt.want)
			}
		})
	}
}

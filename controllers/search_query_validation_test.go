package controllers

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
)

// TestSearchQueryValidation checks the API server's bounds on
// spec.surfaces.search.query: at most 16 parameters, names of 1-128
// characters, values of at most 1024; within them a Corpus is accepted.
func TestSearchQueryValidation(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	many := map[string]v1alpha1.SearchQueryValue{}
	for i := range 17 {
		many[fmt.Sprintf("p%d", i)] = "v"
	}
	for _, tc := range []struct {
		name  string
		query map[string]v1alpha1.SearchQueryValue
		want  string // "" when accepted
	}{
		{name: "ok", query: map[string]v1alpha1.SearchQueryValue{"api-version": "2025-05-01-preview", "search": "{{.Query}}"}},
		{name: "too-many", query: many, want: "must have at most 16 items"},
		{name: "long-value", query: map[string]v1alpha1.SearchQueryValue{"q": v1alpha1.SearchQueryValue(strings.Repeat("x", 1025))}, want: "may not be more than 1024"},
		{name: "long-name", query: map[string]v1alpha1.SearchQueryValue{strings.Repeat("n", 129): "v"}, want: "query parameter names must be 1-128 characters"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCorpus(ns, tc.name, "http://127.0.0.1:1")
			c.Spec.Surfaces = searchSurface("http://127.0.0.1:1", `{"search": {{json .Query}}}`)
			c.Spec.Surfaces.Search.Query = tc.query
			err := k8sClient.Create(context.Background(), c)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("create: %v, want accepted", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("create: %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

package controllers

import (
	"context"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
)

// TestProbeScheduleValidation sends spec.probing schedules to the real API
// server: a bad precision or maxInterval is rejected with a message naming
// the field, and a canary that says nothing gets the documented defaults.
func TestProbeScheduleValidation(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	const base = `
apiVersion: ragcanary.dev/v1alpha1
kind: RevocationCanary
metadata: {name: c}
spec:
  corpusRef: {name: corpus}
  personaRef: {name: alice}
  schedule: {every: 5m}
`
	rejected := []struct {
		name string
		// probing is the flow-style spec.probing sent.
		probing string
		// want are substrings the rejection must contain.
		want []string
	}{
		{"unknown schedule", "{schedule: Exponential}", []string{"spec.probing.schedule", "Unsupported value"}},
		{"precision without a percent sign", "{precision: '0.1'}", []string{"spec.probing.precision", "precision must be a percentage"}},
		{"zero precision", "{precision: '0%'}", []string{"spec.probing.precision", "precision must be a percentage"}},
		{"precision above 100%", "{precision: '150%'}", []string{"spec.probing.precision", "precision must be a percentage"}},
		{"negative precision", "{precision: '-5%'}", []string{"spec.probing.precision", "precision must be a percentage"}},
		{"maxInterval below interval", "{schedule: Adaptive, interval: 10s, maxInterval: 5s}", []string{"spec.probing", "maxInterval must not be smaller than interval"}},
		// interval is unset: its default of 5s is above 2s.
		{"maxInterval below the default interval", "{schedule: Adaptive, maxInterval: 2s}", []string{"spec.probing", "maxInterval must not be smaller than interval"}},
	}
	for _, tc := range rejected {
		t.Run(tc.name, func(t *testing.T) {
			obj := decodeOne(t, base+"  probing: "+tc.probing+"\n")
			obj.SetNamespace(ns)
			err := k8sClient.Create(context.Background(), obj)
			if err == nil {
				t.Fatalf("probing %s was accepted", tc.probing)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("rejection %q does not contain %q", err, w)
				}
			}
		})
	}

	accepted := []struct {
		name    string
		probing string
		// want is the schedule as stored.
		schedule    v1alpha1.ProbeSchedule
		precision   string
		maxInterval time.Duration
	}{
		{"defaults", "{}", v1alpha1.ScheduleFixed, "10%", 10 * time.Minute},
		{"adaptive with a fractional percentage", "{schedule: Adaptive, precision: '2.5%', maxInterval: 1h}", v1alpha1.ScheduleAdaptive, "2.5%", time.Hour},
		{"precision of 100%", "{schedule: Adaptive, precision: '100%'}", v1alpha1.ScheduleAdaptive, "100%", 10 * time.Minute},
		{"maxInterval equal to interval", "{schedule: Adaptive, interval: 1s, maxInterval: 1s}", v1alpha1.ScheduleAdaptive, "10%", time.Second},
		// What a Go client sends when it leaves the field unset; probing uses the default.
		{"maxInterval 0s", "{schedule: Adaptive, interval: 1s, maxInterval: 0s}", v1alpha1.ScheduleAdaptive, "10%", 0},
	}
	for i, tc := range accepted {
		t.Run(tc.name, func(t *testing.T) {
			obj := decodeOne(t, base+"  probing: "+tc.probing+"\n")
			obj.SetNamespace(ns)
			obj.SetName("ok-" + string(rune('a'+i)))
			if err := k8sClient.Create(context.Background(), obj); err != nil {
				t.Fatalf("probing %s was rejected: %v", tc.probing, err)
			}
			var got v1alpha1.RevocationCanary
			if err := k8sClient.Get(context.Background(), client.ObjectKeyFromObject(obj), &got); err != nil {
				t.Fatal(err)
			}
			p := got.Spec.Probing
			if p.Schedule != tc.schedule || p.Precision != tc.precision || p.MaxInterval.Duration != tc.maxInterval {
				t.Fatalf("stored schedule %q precision %q maxInterval %s; want %q %q %s",
					p.Schedule, p.Precision, p.MaxInterval.Duration, tc.schedule, tc.precision, tc.maxInterval)
			}
		})
	}
}

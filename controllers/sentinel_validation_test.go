package controllers

import (
	"context"
	"fmt"
	"testing"

	"github.com/ragcanary/ragcanary/controllers/canaryrun"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
)

// TestSentinelSpecValidation sends sentinel specs to the API server: the
// rules a sentinel adds reject what cannot be watched (no outsiders), what
// would revoke (a method or group other than the default grant) and a
// lifetime too short to watch, on both kinds, and accept the plain form.
func TestSentinelSpecValidation(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	canary := func(spec string) string {
		return `
apiVersion: ragcanary.dev/v1alpha1
kind: RevocationCanary
metadata: {name: c}
spec:
  corpusRef: {name: corpus}
  personaRef: {name: alice}
  schedule: {every: 1h}
` + spec
	}
	run := func(spec string) string {
		return `
apiVersion: ragcanary.dev/v1alpha1
kind: CanaryRun
metadata: {name: r}
spec:
  corpusRef: {name: corpus}
  personaRef: {name: alice}
` + spec
	}
	const controls = "  controlPersonaRefs: [{name: mallory}]\n"
	const noControls = "a sentinel needs at least one controlPersonaRefs entry"
	const revokes = "a sentinel is shared with its owner by a grant and never revoked"
	tests := []struct {
		name string
		// manifest is the object sent to the API server.
		manifest string
		// want are substrings of the rejection; none means it must be accepted.
		want []string
	}{
		{name: "canary without controls", manifest: canary("  sentinel: {}\n"), want: []string{"spec", noControls}},
		{name: "canary with empty controls", manifest: canary("  sentinel: {}\n  controlPersonaRefs: []\n"), want: []string{noControls}},
		{name: "run without controls", manifest: run("  sentinel: {lifetime: 1h}\n"), want: []string{"spec", noControls}},
		{name: "canary deleting its document", manifest: canary("  sentinel: {}\n" + controls + "  revocation: {method: DeleteDocument}\n"), want: []string{revokes}},
		{name: "run updating its content", manifest: run("  sentinel: {}\n" + controls + "  revocation: {method: UpdateContent}\n"), want: []string{revokes}},
		{name: "canary shared through a group", manifest: canary("  sentinel: {}\n" + controls + "  revocation: {method: RemoveFromGroup, group: readers}\n"), want: []string{revokes}},
		{name: "canary reading streams in flight", manifest: canary("  sentinel: {}\n" + controls + "  probing: {surfaces: [Search, InFlight]}\n"), want: []string{"remove InFlight from probing.surfaces"}},
		{name: "lifetime under a second", manifest: canary("  sentinel: {lifetime: 500ms}\n" + controls), want: []string{"spec.sentinel.lifetime", "lifetime must be at least 1s"}},
		{name: "canary with controls", manifest: canary("  sentinel: {}\n" + controls)},
		{name: "run with controls and the default grant", manifest: run("  sentinel: {lifetime: 2h}\n" + controls + "  revocation: {method: RemoveGrant}\n")},
		{name: "ordinary canary without controls", manifest: canary("  revocation: {method: DeleteDocument}\n")},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj := decodeOne(t, tt.manifest)
			obj.SetNamespace(ns)
			obj.SetName(fmt.Sprintf("%s-%d", obj.GetName(), i))
			err := k8sClient.Create(context.Background(), obj)
			if len(tt.want) == 0 {
				if err != nil {
					t.Fatalf("API server rejected a valid object: %v", err)
				}
				return
			}
			assertRejected(t, err, tt.want)
		})
	}
}

// TestSentinelLifetimeDefaults: an empty sentinel is watched for the
// documented default lifetime.
func TestSentinelLifetimeDefaults(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	obj := decodeOne(t, `
apiVersion: ragcanary.dev/v1alpha1
kind: RevocationCanary
metadata: {name: defaults}
spec:
  corpusRef: {name: corpus}
  personaRef: {name: alice}
  controlPersonaRefs: [{name: mallory}]
  schedule: {every: 1h}
  sentinel: {}
`)
	obj.SetNamespace(ns)
	if err := k8sClient.Create(context.Background(), obj); err != nil {
		t.Fatal(err)
	}
	var got v1alpha1.RevocationCanary
	if err := k8sClient.Get(context.Background(), client.ObjectKeyFromObject(obj), &got); err != nil {
		t.Fatal(err)
	}
	if got.Spec.Sentinel == nil || got.Spec.Sentinel.Lifetime.Duration != canaryrun.DefaultSentinelLifetime {
		t.Fatalf("sentinel %+v, want lifetime %s", got.Spec.Sentinel, canaryrun.DefaultSentinelLifetime)
	}
}

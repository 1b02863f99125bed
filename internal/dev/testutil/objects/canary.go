package objects

import (
	"time"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
)

// CanaryOption adjusts the canary spec a CanaryRun or RevocationCanary
// carries.
type CanaryOption func(*v1alpha1.CanarySpec)

// CanarySpec is a canary against CorpusName shared with PersonaName,
// watched by ControlName, revoked by removing the grant and probed on the
// search surface every 200ms with two confirmations; visibility must come
// within 20s, exclusion within 30s, and the exclusion SLO is 30s. The
// adaptive schedule's maxInterval is its CRD default, 10m.
func CanarySpec(opts ...CanaryOption) v1alpha1.CanarySpec {
	s := v1alpha1.CanarySpec{
		CorpusRef:          Ref(CorpusName),
		PersonaRef:         Ref(PersonaName),
		ControlPersonaRefs: []v1alpha1.LocalObjectReference{Ref(ControlName)},
		ExclusionSLO:       DurationPtr(30 * time.Second),
		Revocation:         v1alpha1.Revocation{Method: v1alpha1.RevokeRemoveGrant},
		Probing: v1alpha1.Probing{
			Interval:          Duration(200 * time.Millisecond),
			Confirmations:     2,
			VisibilityTimeout: Duration(20 * time.Second),
			ExclusionTimeout:  Duration(30 * time.Second),
			MaxInterval:       Duration(10 * time.Minute),
			Surfaces:          []v1alpha1.Surface{v1alpha1.SurfaceSearch},
		},
	}
	for _, o := range opts {
		o(&s)
	}
	return s
}

// CanaryRun is one run of CanarySpec(opts...).
func CanaryRun(ns, name string, opts ...CanaryOption) *v1alpha1.CanaryRun {
	return &v1alpha1.CanaryRun{
		ObjectMeta: meta(ns, name),
		Spec:       v1alpha1.CanaryRunSpec{CanarySpec: CanarySpec(opts...)},
	}
}

// RevocationCanary runs CanarySpec(opts...) every interval, never
// overlapping runs, without jitter.
func RevocationCanary(ns, name string, every time.Duration, opts ...CanaryOption) *v1alpha1.RevocationCanary {
	return &v1alpha1.RevocationCanary{
		ObjectMeta: meta(ns, name),
		Spec: v1alpha1.RevocationCanarySpec{
			Scheduling: v1alpha1.Scheduling{
				Schedule:          v1alpha1.Schedule{Every: DurationPtr(every)},
				ConcurrencyPolicy: v1alpha1.ForbidConcurrent,
			},
			CanarySpec: CanarySpec(opts...),
		},
	}
}

// OnCorpus targets the Corpus named name.
func OnCorpus(name string) CanaryOption {
	return func(s *v1alpha1.CanarySpec) { s.CorpusRef = Ref(name) }
}

// SharedWith shares the canary with (and revokes it from) persona.
func SharedWith(persona string) CanaryOption {
	return func(s *v1alpha1.CanarySpec) { s.PersonaRef = Ref(persona) }
}

// Controls are the personas that must never see the canary; none when empty.
func Controls(personas ...string) CanaryOption {
	return func(s *v1alpha1.CanarySpec) {
		s.ControlPersonaRefs = nil
		for _, p := range personas {
			s.ControlPersonaRefs = append(s.ControlPersonaRefs, Ref(p))
		}
	}
}

// Revoke takes access away by method; group is the group the persona is
// removed from under RemoveFromGroup, empty otherwise.
func Revoke(method v1alpha1.RevocationMethod, group string) CanaryOption {
	return func(s *v1alpha1.CanarySpec) { s.Revocation = v1alpha1.Revocation{Method: method, Group: group} }
}

// Probe probes surfaces (Search when none is named).
func Probe(surfaces ...v1alpha1.Surface) CanaryOption {
	return func(s *v1alpha1.CanarySpec) {
		if len(surfaces) > 0 {
			s.Probing.Surfaces = surfaces
		}
	}
}

// Every probes every interval and confirms exclusion by confirmations
// consecutive negative probes.
func Every(interval time.Duration, confirmations int32) CanaryOption {
	return func(s *v1alpha1.CanarySpec) {
		s.Probing.Interval, s.Probing.Confirmations = Duration(interval), confirmations
	}
}

// Timeouts bound the wait for visibility and, after the revocation, for
// exclusion.
func Timeouts(visibility, exclusion time.Duration) CanaryOption {
	return func(s *v1alpha1.CanarySpec) {
		s.Probing.VisibilityTimeout, s.Probing.ExclusionTimeout = Duration(visibility), Duration(exclusion)
	}
}

// SLO is the canary's exclusion SLO, overriding the corpus's; zero sets
// none, so the corpus's SLO judges the canary.
func SLO(d time.Duration) CanaryOption {
	return func(s *v1alpha1.CanarySpec) {
		s.ExclusionSLO = nil
		if d > 0 {
			s.ExclusionSLO = DurationPtr(d)
		}
	}
}

// Sentinel makes the canary a sentinel watched for lifetime; nothing is
// revoked.
func Sentinel(lifetime time.Duration) CanaryOption {
	return func(s *v1alpha1.CanarySpec) {
		s.Sentinel = &v1alpha1.Sentinel{Lifetime: Duration(lifetime)}
		s.Revocation = v1alpha1.Revocation{Method: v1alpha1.RevokeRemoveGrant}
	}
}

// Adaptive spaces probes geometrically, aiming for precision ("10%"), never
// more than maxInterval apart.
func Adaptive(precision string, maxInterval time.Duration) CanaryOption {
	return func(s *v1alpha1.CanarySpec) {
		s.Probing.Schedule, s.Probing.Precision, s.Probing.MaxInterval = v1alpha1.ScheduleAdaptive, precision, Duration(maxInterval)
	}
}

package report

import (
	"time"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/measure"
)

// CanaryInput is a CanaryRun and the objects it names, as read. A nil
// Corpus, Persona or Controls entry means the object was not found.
type CanaryInput struct {
	Run      *v1alpha1.CanaryRun
	Corpus   *v1alpha1.Corpus
	Persona  *v1alpha1.Persona
	Controls map[string]*v1alpha1.Persona
}

// CanaryEvidence is what a CanaryRun measured, when, and why it got its verdict.
type CanaryEvidence struct {
	// Canary is the RevocationCanary that created the run; empty for a run
	// created by hand.
	Canary string `json:"canary"`
	Phase  string `json:"phase"`
	// Verdict is empty while the run is undecided.
	Verdict    string `json:"verdict"`
	Message    string `json:"message"`
	DocumentID string `json:"documentID"`
	// TokenHash correlates the canary token; the token itself stays in its Secret.
	TokenHash string `json:"tokenHash"`
	// Spec is the measurement configuration, frozen in the run at creation.
	Spec             v1alpha1.CanarySpec                `json:"spec"`
	Corpus           Referenced[v1alpha1.CorpusSpec]    `json:"corpus"`
	Persona          Referenced[v1alpha1.PersonaSpec]   `json:"persona"`
	ControlPersonas  []Referenced[v1alpha1.PersonaSpec] `json:"controlPersonas"`
	Secrets          []SecretName                       `json:"secrets"`
	TimeToVisibility *Seconds                           `json:"timeToVisibilitySeconds"`
	VisibilitySLO    *Seconds                           `json:"visibilitySLOSeconds"`
	// Timeline is every timestamp the run persisted, in time order, with
	// offsets from the revocation request (status.revokeRequestedTime).
	Timeline []Event           `json:"timeline"`
	Surfaces []SurfaceEvidence `json:"surfaces"`
	// IsolationViolations counts control-persona probes that saw the canary.
	IsolationViolations int32             `json:"isolationViolations"`
	Controls            []ControlEvidence `json:"controls"`
	// InFlight is the streams read across the revocation; absent for a run
	// that read none.
	InFlight   *InFlightEvidence `json:"inFlight,omitempty"`
	Conditions []Condition       `json:"conditions"`
	// Sentinel is a sentinel run's watch and sightings; absent otherwise.
	Sentinel *SentinelEvidence `json:"sentinel,omitempty"`
}

// Comparison of a surface's bounds with its SLO, stated only as far as the
// bounds establish it.
const (
	WithinSLO      = "WithinSLO"      // upper ≤ SLO
	UpperAboveSLO  = "UpperAboveSLO"  // upper > SLO, lower ≤ SLO: may or may not have breached
	CertainBreach  = "CertainBreach"  // lower > SLO
	NotEstablished = "NotEstablished" // no upper bound, lower within SLO
)

// SurfaceEvidence is the exclusion measurement of one surface.
type SurfaceEvidence struct {
	Surface string `json:"surface"`
	// SLO is the objective as configured now; SLOSource says where it comes from.
	SLO       Seconds `json:"sloSeconds"`
	SLOSource string  `json:"sloSource"`
	// Lower and Upper are the interval-censored time-to-exclusion; null
	// when the run did not establish them.
	Lower             *Seconds    `json:"lowerSeconds"`
	Upper             *Seconds    `json:"upperSeconds"`
	AgainstSLO        string      `json:"againstSLO"`
	Excluded          bool        `json:"excluded"`
	NegativeStreak    int32       `json:"negativeStreak"`
	Reappearances     int32       `json:"reappearances"`
	LastReply         string      `json:"lastReply"`
	LastPositiveStart *time.Time  `json:"lastPositiveStart"`
	FirstNegativeEnd  *time.Time  `json:"firstNegativeEnd"`
	Probes            ProbeCounts `json:"probes"`
	// NewContent is a content-freshness (UpdateContent) run's measurement
	// of the new content; the fields above then measure the old content,
	// and SLO, SLOSource and AgainstSLO judge the surface's freshness.
	NewContent *ContentEvidence `json:"newContent,omitempty"`
}

// ContentEvidence is when a content-freshness run's new content appeared
// on a surface, and the surface's freshness: the later of the new content
// appearing and the old going.
type ContentEvidence struct {
	// Lower and Upper bound the new content's appearance; Upper is null
	// when it was not seen.
	Lower           *Seconds    `json:"lowerSeconds"`
	Upper           *Seconds    `json:"upperSeconds"`
	Visible         bool        `json:"visible"`
	LastUnseenStart *time.Time  `json:"lastUnseenStart"`
	FirstSeenEnd    *time.Time  `json:"firstSeenEnd"`
	Probes          ProbeCounts `json:"probes"`
	// FreshnessLower and FreshnessUpper bound the time until the surface
	// served only the new content.
	FreshnessLower *Seconds `json:"freshnessLowerSeconds"`
	FreshnessUpper *Seconds `json:"freshnessUpperSeconds"`
}

// ProbeCounts are a surface's probes after revocation, by outcome.
type ProbeCounts struct {
	Positive int32 `json:"positive"`
	Negative int32 `json:"negative"`
	Errors   int32 `json:"errors"`
	Total    int32 `json:"total"`
}

// ControlEvidence is what one control persona's probes got. Answered and
// Errors are null when the run recorded nothing for the persona: it never
// tested isolation, which is not the same as zero sightings.
type ControlEvidence struct {
	Persona  string `json:"persona"`
	Answered *int64 `json:"answered"`
	Errors   *int64 `json:"errors"`
}

// BuildCanary assembles a CanaryRun's evidence; now is when it was read.
func BuildCanary(in CanaryInput, now time.Time) Evidence {
	run := in.Run
	created := run.CreationTimestamp.UTC()
	st := run.Status
	ev := &CanaryEvidence{
		Canary:              canaryName(run),
		Phase:               string(st.Phase),
		Verdict:             string(st.Verdict),
		Message:             st.Message,
		DocumentID:          st.DocumentID,
		TokenHash:           st.TokenHash,
		Spec:                run.Spec.CanarySpec,
		Corpus:              referCorpus(run.Spec.CorpusRef.Name, in.Corpus, created),
		Persona:             referPersona(run.Spec.PersonaRef.Name, in.Persona, created),
		TimeToVisibility:    secondsOf(st.TimeToVisibility),
		Timeline:            canaryTimeline(run),
		IsolationViolations: st.IsolationViolations,
		Controls:            controls(run),
		InFlight:            inFlightEvidence(st.InFlight),
		Conditions:          conditions(st.Conditions),
		ControlPersonas:     []Referenced[v1alpha1.PersonaSpec]{},
		Surfaces:            []SurfaceEvidence{},
	}
	for _, ref := range run.Spec.ControlPersonaRefs {
		ev.ControlPersonas = append(ev.ControlPersonas, referPersona(ref.Name, in.Controls[ref.Name], created))
	}
	if in.Corpus != nil {
		ev.VisibilitySLO = secondsOf(in.Corpus.Spec.Freshness.VisibilitySLO)
	}
	ev.Sentinel = sentinelEvidence(run)
	ev.Secrets = canarySecrets(run, ev)
	for _, m := range st.Surfaces {
		ev.Surfaces = append(ev.Surfaces, surface(m, run, in.Corpus))
	}
	return Evidence{Kind: KindCanaryRun, Namespace: run.Namespace, Name: run.Name, UID: string(run.UID),
		GeneratedAt: now.UTC(), Canary: ev}
}

// canaryName is the RevocationCanary a run belongs to: its controller
// owner, else the label the scheduler sets (v1alpha1.LabelCanary).
func canaryName(run *v1alpha1.CanaryRun) string {
	for _, ref := range run.OwnerReferences {
		if ref.Controller != nil && *ref.Controller && ref.Kind == "RevocationCanary" {
			return ref.Name
		}
	}
	return run.Labels["ragcanary.dev/canary"]
}

func referCorpus(name string, c *v1alpha1.Corpus, created time.Time) Referenced[v1alpha1.CorpusSpec] {
	if c == nil {
		return reference[v1alpha1.CorpusSpec](name, nil, nil, created)
	}
	return reference(name, &c.ObjectMeta, &c.Spec, created)
}

func referPersona(name string, p *v1alpha1.Persona, created time.Time) Referenced[v1alpha1.PersonaSpec] {
	if p == nil {
		return reference[v1alpha1.PersonaSpec](name, nil, nil, created)
	}
	return reference(name, &p.ObjectMeta, &p.Spec, created)
}

func canarySecrets(run *v1alpha1.CanaryRun, ev *CanaryEvidence) []SecretName {
	out := []SecretName{}
	if n := run.Status.TokenSecretName; n != "" {
		out = append(out, SecretName{Use: "canary token (owned by the run)", Name: n})
	}
	out = append(out, corpusSecrets(ev.Corpus.Spec)...)
	out = append(out, personaSecret("persona credential", ev.Persona.Spec)...)
	for _, c := range ev.ControlPersonas {
		out = append(out, personaSecret("control persona "+c.Name+" credential", c.Spec)...)
	}
	return out
}

// canaryTimeline lists every timestamp in the run's metadata and status,
// each with its offset from the revocation request.
func canaryTimeline(run *v1alpha1.CanaryRun) []Event {
	st := run.Status
	tl := timeline{origin: microTimeOf(st.RevokeRequestedTime)}
	created := run.CreationTimestamp.UTC()
	tl.add("metadata.creationTimestamp", "Run created", &created)
	tl.add("status.startTime", "Run started", timeOf(st.StartTime))
	tl.add("status.shareRequestedTime", "Share requested", microTimeOf(st.ShareRequestedTime))
	tl.add("status.visibleTime", "Canary visible to the persona", microTimeOf(st.VisibleTime))
	tl.add("status.revokeRequestedTime", "Revocation requested", microTimeOf(st.RevokeRequestedTime))
	tl.add("status.revokeAcknowledgedTime", "Revocation acknowledged by the source", microTimeOf(st.RevokeAcknowledgedTime))
	for _, m := range st.Surfaces {
		prefix := "status.surfaces[" + string(m.Surface) + "]."
		tl.add(prefix+"lastPositiveStart", string(m.Surface)+": last positive probe started", microTimeOf(m.LastPositiveStart))
		tl.add(prefix+"firstNegativeEnd", string(m.Surface)+": first negative probe of the streak ended", microTimeOf(m.FirstNegativeEnd))
		if c := m.NewContent; c != nil {
			tl.add(prefix+"newContent.lastUnseenStart", string(m.Surface)+": last probe without the new content started", microTimeOf(c.LastUnseenStart))
			tl.add(prefix+"newContent.firstSeenEnd", string(m.Surface)+": first probe with the new content ended", microTimeOf(c.FirstSeenEnd))
		}
	}
	tl.add("status.lastHeartbeatTime", "Last status heartbeat", timeOf(st.LastHeartbeatTime))
	tl.add("status.completionTime", "Run completed", timeOf(st.CompletionTime))
	return tl.sorted()
}

func surface(m v1alpha1.SurfaceMeasurement, run *v1alpha1.CanaryRun, corpus *v1alpha1.Corpus) SurfaceEvidence {
	// The SLO the verdict judged by, as the run kept it; a run that has
	// no verdict yet is shown against the rule applied now.
	slo, source := measure.JudgedSLO(&run.Spec.CanarySpec, corpus, m.Surface)
	if m.SLO != nil {
		slo, source = m.SLO.Duration, m.SLOSource
	}
	s := SurfaceEvidence{
		Surface:           string(m.Surface),
		SLO:               Seconds(slo),
		SLOSource:         source,
		Excluded:          m.Excluded,
		NegativeStreak:    m.NegativeStreak,
		Reappearances:     m.Reappearances,
		LastReply:         m.LastReply,
		LastPositiveStart: microTimeOf(m.LastPositiveStart),
		FirstNegativeEnd:  microTimeOf(m.FirstNegativeEnd),
		Probes: ProbeCounts{Positive: m.Probes.Positive, Negative: m.Probes.Negative, Errors: m.Probes.Errors,
			Total: m.Probes.Positive + m.Probes.Negative + m.Probes.Errors},
	}
	if m.Bounds != nil {
		s.Lower, s.Upper = secondsOf(m.Bounds.Lower), secondsOf(m.Bounds.Upper)
	}
	s.AgainstSLO = againstSLO(s.Lower, s.Upper, slo)
	if m.NewContent != nil {
		contentSurface(&s, &m, run, corpus)
	}
	return s
}

// contentSurface adds a content-freshness run's new-content measurement
// and judges the surface by its freshness against the content-freshness SLO.
func contentSurface(s *SurfaceEvidence, m *v1alpha1.SurfaceMeasurement, run *v1alpha1.CanaryRun, corpus *v1alpha1.Corpus) {
	c := m.NewContent
	ce := &ContentEvidence{Visible: c.Visible, LastUnseenStart: microTimeOf(c.LastUnseenStart), FirstSeenEnd: microTimeOf(c.FirstSeenEnd),
		Probes: ProbeCounts{Positive: c.Probes.Positive, Negative: c.Probes.Negative, Errors: c.Probes.Errors,
			Total: c.Probes.Positive + c.Probes.Negative + c.Probes.Errors}}
	if c.Bounds != nil {
		ce.Lower, ce.Upper = secondsOf(c.Bounds.Lower), secondsOf(c.Bounds.Upper)
	}
	if f := measure.Freshness(m); f != nil {
		ce.FreshnessLower, ce.FreshnessUpper = secondsOf(f.Lower), secondsOf(f.Upper)
	}
	slo, source := measure.ContentFreshnessSLO(&run.Spec.CanarySpec, corpus, m.Surface)
	s.SLO, s.SLOSource = Seconds(slo), source
	s.AgainstSLO = againstSLO(ce.FreshnessLower, ce.FreshnessUpper, slo)
	s.NewContent = ce
}

// againstSLO says what the bounds establish about the SLO and no more.
func againstSLO(lower, upper *Seconds, slo time.Duration) string {
	switch {
	case lower != nil && lower.Duration() > slo:
		return CertainBreach
	case upper == nil:
		return NotEstablished
	case upper.Duration() > slo:
		return UpperAboveSLO
	}
	return WithinSLO
}

// controls pairs every control persona in the spec with its recorded
// counts, summed over surfaces (status keeps them per surface; the verdict
// message names a surface that never got a reply).
func controls(run *v1alpha1.CanaryRun) []ControlEvidence {
	recorded := map[string]*[2]int64{}
	for _, c := range run.Status.ControlProbes {
		sum := recorded[c.Persona]
		if sum == nil {
			sum = &[2]int64{}
			recorded[c.Persona] = sum
		}
		sum[0] += c.Answered
		sum[1] += c.Errors
	}
	out := []ControlEvidence{}
	for _, ref := range run.Spec.ControlPersonaRefs {
		ce := ControlEvidence{Persona: ref.Name}
		if sum, ok := recorded[ref.Name]; ok {
			answered, errs := sum[0], sum[1]
			ce.Answered, ce.Errors = &answered, &errs
		}
		out = append(out, ce)
	}
	return out
}

package report

import (
	"fmt"
	"strings"
	"time"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
)

// SentinelEvidence is what a sentinel run watched and saw. Sightings are
// the ones status kept (the first 16); TotalSightings counts them all.
type SentinelEvidence struct {
	Lifetime       Seconds            `json:"lifetimeSeconds"`
	WatchStart     *time.Time         `json:"watchStart"`
	WatchUntil     *time.Time         `json:"watchUntil"`
	TotalSightings int32              `json:"totalSightings"`
	Sightings      []SightingEvidence `json:"sightings"`
}

// SightingEvidence is one probe by a persona outside the sentinel's access
// list that saw its payload.
type SightingEvidence struct {
	Persona string `json:"persona"`
	Surface string `json:"surface"`
	// Carriers are the document or chunk IDs that carried the payload.
	Carriers    []string  `json:"carriers"`
	OwnDocument bool      `json:"ownDocument"`
	Time        time.Time `json:"time"`
	// SinceWatchStart is the sighting's offset from the start of watching;
	// negative when an outsider saw it before the owner did.
	SinceWatchStart *Seconds `json:"sinceWatchStartSeconds"`
}

// sentinelEvidence is a sentinel run's evidence; nil for other runs.
func sentinelEvidence(run *v1alpha1.CanaryRun) *SentinelEvidence {
	if run.Spec.Sentinel == nil {
		return nil
	}
	ev := &SentinelEvidence{Lifetime: Seconds(run.Spec.Sentinel.Lifetime.Duration), Sightings: []SightingEvidence{}}
	st := run.Status.Sentinel
	if st == nil {
		return ev
	}
	ev.TotalSightings = st.TotalSightings
	if st.WatchStartTime != nil {
		t := st.WatchStartTime.UTC()
		ev.WatchStart = &t
	}
	if st.WatchUntil != nil {
		t := st.WatchUntil.UTC()
		ev.WatchUntil = &t
	}
	for _, s := range st.Sightings {
		got := SightingEvidence{Persona: s.Persona, Surface: string(s.Surface), Carriers: append([]string{}, s.Carriers...),
			OwnDocument: s.OwnDocument, Time: s.Time.UTC()}
		if ev.WatchStart != nil {
			d := Seconds(got.Time.Sub(*ev.WatchStart))
			got.SinceWatchStart = &d
		}
		ev.Sightings = append(ev.Sightings, got)
	}
	return ev
}

// sentinelSection is the sentinel's watch and its sightings table.
func sentinelSection(s *SentinelEvidence) section {
	blocks := []block{
		para("A sentinel is planted for its owner alone and never shared or revoked; the control personas probe it on every surface for its lifetime. Any sighting, through any document, is an isolation violation; its carriers are the document or chunk IDs that carried the payload (for an answer, the citations it quoted from)."),
		facts(fact{"Lifetime", humanSeconds(&s.Lifetime)}, fact{"Watched from", humanTimePtr(s.WatchStart)},
			fact{"Watched until", humanTimePtr(s.WatchUntil)}, fact{"Sightings", fmt.Sprint(s.TotalSightings)}),
	}
	if len(s.Sightings) == 0 {
		return section{ID: "sentinel", Title: "Sentinel", Blocks: append(blocks, para("No persona outside the sentinel's access list saw its payload."))}
	}
	t := table{ID: "sentinel-sightings", Caption: "Sentinel sightings (the first kept in status)",
		Header: []string{"When (UTC)", "Since watching", "Persona", "Surface", "Carriers", "Sentinel's own document"}}
	for _, g := range s.Sightings {
		t.Rows = append(t.Rows, []string{humanTime(g.Time), humanOffset(g.SinceWatchStart), g.Persona, g.Surface,
			orNone(strings.Join(g.Carriers, ", ")), yesNo(g.OwnDocument)})
	}
	if n := int(s.TotalSightings) - len(s.Sightings); n > 0 {
		blocks = append(blocks, para("%d later sightings are counted but not listed.", n))
	}
	return section{ID: "sentinel", Title: "Sentinel", Blocks: append(blocks, tableBlock(t))}
}

// sentinelSections puts the sentinel's section right after the verdict, the
// evidence it was judged by, and drops the revocation's: a sentinel is never
// revoked, so it has no exclusion to show.
func sentinelSections(base []section, s *SentinelEvidence) []section {
	out := make([]section, 0, len(base)+1)
	for i, sec := range base {
		if sec.ID == "exclusion" || sec.ID == "probes" {
			continue
		}
		out = append(out, sec)
		if i == 0 {
			out = append(out, sentinelSection(s))
		}
	}
	return out
}

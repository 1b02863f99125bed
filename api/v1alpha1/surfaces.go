package v1alpha1

// Surface returns the run's measurement of surface s, nil when it has none.
func (st *CanaryRunStatus) Surface(s Surface) *SurfaceMeasurement {
	for i := range st.Surfaces {
		if st.Surfaces[i].Surface == s {
			return &st.Surfaces[i]
		}
	}
	return nil
}

// Surface returns the summary's result on surface s, nil when it has none.
func (r *RunSummary) Surface(s Surface) *SurfaceSummary {
	for i := range r.Surfaces {
		if r.Surfaces[i].Surface == s {
			return &r.Surfaces[i]
		}
	}
	return nil
}

// Probed are the surfaces of a probing list that probes measure, in order:
// all but InFlight, which reads streams instead. Search when none are set.
func Probed(surfaces []Surface) []Surface {
	if len(surfaces) == 0 {
		return []Surface{SurfaceSearch}
	}
	out := make([]Surface, 0, len(surfaces))
	for _, s := range surfaces {
		if s != SurfaceInFlight {
			out = append(out, s)
		}
	}
	return out
}

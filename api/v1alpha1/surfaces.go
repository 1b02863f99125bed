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

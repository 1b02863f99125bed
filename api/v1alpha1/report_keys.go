package v1alpha1

// The report ConfigMap a SuiteRun names in status.reportConfigMapRef is
// read by people (kubectl get cm), by `ragcanary eval --replay` and by the
// kubectl plugin; its keys and the shape of its probe errors are part of
// the API, defined here so a reader needs nothing but this package.
const (
	// ReportKeyReport holds the scoring report, the same JSON schema as
	// `ragcanary eval --format json`.
	ReportKeyReport = "report.json"
	// ReportKeyProbeErrors lists the executions that got no reply
	// (ReportProbeError), which the report cannot hold because they were
	// never scored.
	ReportKeyProbeErrors = "probe-errors.json"
	// ReportKeyTruncated is present only when the report was cut to fit,
	// and says how many cases it still lists.
	ReportKeyTruncated = "truncated"
	// ReportKeyEvidence holds the frozen evidence, the file
	// `ragcanary eval --replay` reads as stored.
	ReportKeyEvidence = "evidence.json"
	// ReportKeyPlan holds the run's plan, written before anything is
	// planted or asked, so a resumed or deleted run works from what it
	// started with.
	ReportKeyPlan = "plan.json"
)

// ReportProbeError is one execution without a reply, as ReportKeyProbeErrors
// lists it.
// +kubebuilder:object:generate=false
type ReportProbeError struct {
	CaseID  string `json:"case_id"`
	Persona string `json:"persona"`
	Error   string `json:"error"`
}

// OutcomeProbeError is the outcome of a failing case (status.failingCases,
// the report's rows) whose execution got no usable reply. It is not a
// scoring outcome: such executions are never scored.
const OutcomeProbeError = "probe_error"

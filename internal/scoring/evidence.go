package scoring

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
)

// EvidenceFormat is the format version of a frozen-evidence report. A reader
// refuses any other value rather than guess at a layout it does not know.
const EvidenceFormat = "ragcanary.dev/eval-evidence/v1"

// Evidence is what one evaluation run evaluated, frozen so its verdict can be
// reproduced and rescored later (`ragcanary eval --replay`). A SuiteRun
// writes exactly this. It never holds credentials: personas are recorded by
// subject and groups only.
type Evidence struct {
	// Format is EvidenceFormat.
	Format string `json:"format"`
	// Suite and Run name what produced the evidence (namespace/name), for
	// humans; replay does not read them.
	Suite string `json:"suite,omitempty"`
	Run   string `json:"run,omitempty"`
	// CreatedAt is when the run finished, RFC 3339.
	CreatedAt string `json:"created_at,omitempty"`
	// CasesHash is CasesHash(Cases) when the run froze them. Replay reports
	// whether the cases still hash to it, i.e. whether an annotation was
	// corrected since.
	CasesHash string `json:"cases_hash"`
	// Cases are the resolved cases, one per case × persona, with fixture-
	// derived evidence already filled in. Executions refer to them by ID.
	Cases []CaseV2 `json:"cases"`
	// Options are the k and gate options the run was scored with.
	Options EvidenceOptions `json:"options"`
	// Personas are the personas as they were when the run read them.
	Personas []PersonaSnapshot `json:"personas"`
	// Corpus is the system under test as the run saw it; nil offline.
	Corpus *CorpusSnapshot `json:"corpus,omitempty"`
	// DocumentTexts are fixture document bodies by ID, when the run planted
	// a fixture, so a forbidden document's text in an answer is a
	// disclosure on replay too.
	DocumentTexts map[string]string `json:"document_texts,omitempty"`
	// Executions are what the system did, one per case, in run order.
	Executions []Execution `json:"executions"`
	// Report is the verdict the run reached; replay compares against it.
	Report *Report `json:"report,omitempty"`
}

// EvidenceOptions is the serialisable form of Options.
type EvidenceOptions struct {
	K                   int      `json:"k"`
	MinRecall           *float64 `json:"min_recall,omitempty"`
	MinMRR              *float64 `json:"min_mrr,omitempty"`
	MinUtility          *float64 `json:"min_utility,omitempty"`
	MaxFalseBlockRate   *float64 `json:"max_false_block_rate,omitempty"`
	MaxStaleRate        *float64 `json:"max_stale_rate,omitempty"`
	MaxDisclosures      int      `json:"max_disclosures,omitempty"`
	MaxInvalidCitations int      `json:"max_invalid_citations,omitempty"`
}

// PersonaSnapshot is a persona's identity at run time — never its credential.
type PersonaSnapshot struct {
	Name    string   `json:"name"`
	Subject string   `json:"subject,omitempty"`
	Tenant  string   `json:"tenant,omitempty"`
	Groups  []string `json:"groups,omitempty"`
}

// CorpusSnapshot is the corpus as the run saw it.
type CorpusSnapshot struct {
	Name         string   `json:"name"`
	Generation   int64    `json:"generation"`
	Capabilities []string `json:"capabilities,omitempty"`
}

// Execution is what the system did for one case: the result plus how the
// call went. An execution with an ErrorClass got no usable reply; it is
// never scored (an error is never an absence) and fails the probe-errors gate.
type Execution struct {
	// CaseID is the ID of the case in Evidence.Cases.
	CaseID  string `json:"case_id"`
	Persona string `json:"persona,omitempty"`
	// RetrievedIDs, CitedIDs, Response, AnswerText and LatencyMS are as in
	// ResultV2.
	RetrievedIDs []string `json:"retrieved_ids"`
	CitedIDs     []string `json:"cited_ids"`
	Response     Action   `json:"response,omitempty"`
	// Reason is the reason code the system declared with its response
	// (the answer surface's reason), kept as evidence; not scored.
	Reason     string   `json:"reason,omitempty"`
	AnswerText string   `json:"answer_text,omitempty"`
	LatencyMS  *float64 `json:"latency_ms,omitempty"`
	// ErrorClass is the kind of failure (e.g. timeout, unavailable), never
	// raw error text; empty when the call got a reply.
	ErrorClass string `json:"error_class,omitempty"`
}

// Result is the execution as a scoring result.
func (x Execution) Result() ResultV2 {
	return ResultV2{ID: x.CaseID, RetrievedIDs: nonNilList(x.RetrievedIDs), CitedIDs: nonNilList(x.CitedIDs),
		Response: x.Response, AnswerText: x.AnswerText, LatencyMS: x.LatencyMS}
}

// GateProbeErrors is the gate a replay adds when executions got no reply;
// the name matches the SuiteRun's gate.
const GateProbeErrors = "no_probe_errors"

// ReplayInfo says what a replayed report was rescored from.
type ReplayInfo struct {
	// RecordedCasesHash is the hash the run froze; CasesHash is the hash of
	// the cases rescored now. They differ when an annotation was corrected.
	RecordedCasesHash string `json:"recorded_cases_hash"`
	CasesHash         string `json:"cases_hash"`
	CasesChanged      bool   `json:"cases_changed"`
	// RecordedPassed is the run's own verdict, nil when it stored none.
	RecordedPassed *bool `json:"recorded_passed"`
	// ProbeErrors counts executions without a usable reply.
	ProbeErrors int `json:"probe_errors"`
}

// CasesHash is the content hash of resolved cases: sha256 over their JSON
// encoding, "sha256:<hex>". Encoding is deterministic for a given slice.
func CasesHash(cases []CaseV2) string {
	b, err := json.Marshal(cases)
	if err != nil {
		// CaseV2 holds only strings and slices of them; Marshal cannot fail.
		panic(err)
	}
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// Options turns the frozen options back into engine options.
func (o EvidenceOptions) Options() Options {
	return Options{K: o.K, MinRecall: o.MinRecall, MinMRR: o.MinMRR, MinUtility: o.MinUtility,
		MaxFalseBlockRate: o.MaxFalseBlockRate, MaxStaleRate: o.MaxStaleRate,
		MaxDisclosures: o.MaxDisclosures, MaxInvalidCitations: o.MaxInvalidCitations}
}

// FreezeOptions is the inverse of EvidenceOptions.Options (DocumentTexts
// live in Evidence.DocumentTexts).
func FreezeOptions(o Options) EvidenceOptions {
	return EvidenceOptions{K: o.K, MinRecall: o.MinRecall, MinMRR: o.MinMRR, MinUtility: o.MinUtility,
		MaxFalseBlockRate: o.MaxFalseBlockRate, MaxStaleRate: o.MaxStaleRate,
		MaxDisclosures: o.MaxDisclosures, MaxInvalidCitations: o.MaxInvalidCitations}
}

// WriteEvidence writes ev as indented JSON, filling Format and CasesHash.
func WriteEvidence(w io.Writer, ev *Evidence) error {
	ev.Format = EvidenceFormat
	ev.CasesHash = CasesHash(ev.Cases)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(ev)
}

// ReadEvidence strictly decodes a frozen-evidence report: unknown fields, a
// wrong format version or trailing data are a *ValidationError.
func ReadEvidence(r io.Reader) (*Evidence, error) {
	dec := json.NewDecoder(&capReader{r: r, max: MaxInputBytes})
	dec.DisallowUnknownFields()
	var ev Evidence
	if err := dec.Decode(&ev); err != nil {
		return nil, inputError("malformed evidence report: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, inputError("malformed evidence report: unexpected data after the report")
	}
	if ev.Format != EvidenceFormat {
		return nil, inputError("evidence report has format %q; this version reads %q", ev.Format, EvidenceFormat)
	}
	return &ev, nil
}

// Replay rescores frozen evidence with the current engine. Executions with an
// ErrorClass are not scored; they fail the GateProbeErrors gate, as in the
// run. The cases are validated like any other input.
func Replay(ev *Evidence) (Report, error) {
	var results []ResultV2
	replied, failed := map[string]bool{}, map[string]bool{}
	errored := 0
	for _, x := range ev.Executions {
		if x.ErrorClass != "" {
			errored++
			failed[x.CaseID] = true
			continue
		}
		results = append(results, x.Result())
		replied[x.CaseID] = true
	}
	// A case whose execution errored has no result to match; it is left out
	// of scoring rather than reported as "has no result".
	var cases []CaseV2
	for _, c := range ev.Cases {
		if replied[c.ID] || !failed[c.ID] {
			cases = append(cases, c)
		}
	}
	opts := ev.Options.Options()
	opts.DocumentTexts = ev.DocumentTexts
	rep, err := EvaluateV2(cases, results, opts)
	if err != nil {
		return Report{}, err
	}
	hash := CasesHash(ev.Cases)
	info := &ReplayInfo{RecordedCasesHash: ev.CasesHash, CasesHash: hash, CasesChanged: hash != ev.CasesHash, ProbeErrors: errored}
	if ev.Report != nil {
		p := ev.Report.Passed
		info.RecordedPassed = &p
	}
	// A SuiteRun's verdict always carries the probe-errors gate (passed
	// when every execution replied); reproduce it whenever the run recorded
	// it, so a replayed report lists the same gates as the stored one.
	if errored > 0 || recordedGate(ev.Report, GateProbeErrors) {
		rep.Gates = append(rep.Gates, countGate(GateProbeErrors, errored))
		rep.Passed = rep.Passed && errored == 0
	}
	rep.Replay = info
	return rep, nil
}

// FillEvidence sets a case's allowed and superseded evidence when the case
// left them out, for suites whose fixture derives them from its policy. Sets
// the case states itself are kept. It returns an error when the case gave a
// set and the fixture derives a different one, since one of them is wrong.
func FillEvidence(c *CaseV2, allowed, superseded []string) error {
	if c.Expected.AllowedEvidence == nil {
		c.Expected.AllowedEvidence = nonNilList(allowed)
	} else if !sameSet(c.Expected.AllowedEvidence, allowed) {
		return fmt.Errorf("case %q: expected.allowed_evidence differs from what the fixture derives", c.ID)
	}
	if c.Expected.SupersededEvidence == nil {
		c.Expected.SupersededEvidence = nonNilList(superseded)
	}
	return nil
}

func sameSet(a, b []string) bool {
	sa, sb := set(a), set(b)
	if len(sa) != len(sb) {
		return false
	}
	for k := range sa {
		if !sb[k] {
			return false
		}
	}
	return true
}

// recordedGate reports whether a stored report lists the named gate.
func recordedGate(r *Report, name string) bool {
	if r == nil {
		return false
	}
	for _, g := range r.Gates {
		if g.Name == name {
			return true
		}
	}
	return false
}

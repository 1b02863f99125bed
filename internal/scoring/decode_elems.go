package scoring

import "io"

// Case fields, as bits of a presence mask. v1 and v2 fields are read in one
// pass because keys may come in any order; the version is decided after.
const (
	fID uint32 = 1 << iota
	fQuestion
	fPersona
	fStratum
	fAsOf
	fExpected
	fRelevant
	fAllowed
	fMustAbstain
)

// caseKeys are the case fields in bit order.
var caseKeys = []string{"id", "question", "persona", "stratum", "as_of", "expected", "relevant_ids", "allowed_ids", "must_abstain"}

// expectedKeys are the fields of a v2 case's "expected".
var expectedKeys = []string{"action", "allowed_evidence", "required_evidence", "required_any_of", "forbidden_evidence",
	"superseded_evidence", "expected_citations", "internal_reason", "public_response_class", "forbidden_markers"}

const (
	caseV1Only = fRelevant | fAllowed | fMustAbstain
	caseV2Only = fStratum | fAsOf | fExpected
)

// caseFieldNames names the bits for messages.
var caseFieldNames = []struct {
	bit  uint32
	name string
}{
	{fID, "id"}, {fQuestion, "question"}, {fPersona, "persona"}, {fStratum, "stratum"}, {fAsOf, "as_of"},
	{fExpected, "expected"}, {fRelevant, "relevant_ids"}, {fAllowed, "allowed_ids"}, {fMustAbstain, "must_abstain"},
}

// decodeCaseStream decodes an array of cases, v1 or v2 per element, calling
// each with exactly one of v1 and v2 set for every element that is an object.
// With keepQuestion false the question text is dropped (scoring never reads
// it); it is still checked.
func decodeCaseStream(r io.Reader, limit int64, keepQuestion bool, ps *problems, each func(i int, v1 *Case, v2 *CaseV2)) error {
	d := newArrayDecoder(r, KindCase, limit, ps)
	var c CaseV2
	var v1 Case
	return d.run(func() error {
		c, v1 = CaseV2{}, Case{}
		var idOK, emptyQuestion bool
		seen, err := d.object("", caseKeys, func(name string) error {
			var err error
			switch name {
			case "id":
				c.ID, idOK, err = d.strOK("id", false)
			case "question":
				if !keepQuestion {
					// Only its presence and emptiness matter: not copied.
					emptyQuestion, err = d.emptyStr("question")
					break
				}
				q, ok, qerr := d.strOK("question", false)
				emptyQuestion, err = ok && q == "", qerr
				c.Question = q
			case "persona":
				c.Persona, err = d.str("persona", true)
			case "stratum":
				c.Stratum, err = d.str("stratum", true)
			case "as_of":
				c.AsOf, err = d.str("as_of", false)
			case "expected":
				err = d.expected(&c.Expected)
			case "relevant_ids":
				v1.RelevantIDs, err = d.strs("relevant_ids")
			case "allowed_ids":
				v1.AllowedIDs, err = d.strs("allowed_ids")
			case "must_abstain":
				v1.MustAbstain, err = d.boolean("must_abstain")
			}
			return err
		})
		if err != nil {
			return err
		}
		isV2 := seen&fExpected != 0
		if isV2 {
			for _, f := range caseFieldNames {
				if seen&f.bit&caseV1Only != 0 {
					d.problem("unknown field %q in a v2 case (v1 fields cannot be mixed with \"expected\")", f.name)
				}
			}
			d.requiredBits(seen, fID|fQuestion|fExpected)
		} else {
			for _, f := range caseFieldNames {
				if seen&f.bit&caseV2Only != 0 {
					d.problem("unknown field %q in a v1 case (a v2 case needs \"expected\")", f.name)
				}
			}
			d.requiredBits(seen, fID|fQuestion|fRelevant|fAllowed|fMustAbstain)
		}
		if idOK && c.ID == "" {
			d.problem("field %q must not be empty", "id")
		}
		if emptyQuestion {
			d.problem("field %q must not be empty", "question")
		}
		d.flush(c.ID)
		if isV2 {
			each(d.index, nil, &c)
			return nil
		}
		v1.ID, v1.Persona, v1.Question = c.ID, c.Persona, c.Question
		each(d.index, &v1, nil)
		return nil
	})
}

// requiredBits records missing required case fields in name order.
func (d *arrayDecoder) requiredBits(seen, required uint32) {
	if seen&required == required {
		return
	}
	present := map[string]bool{}
	var names []string
	for _, f := range caseFieldNames {
		if required&f.bit != 0 {
			names = append(names, f.name)
			present[f.name] = seen&f.bit != 0
		}
	}
	if seen&required != required {
		d.required(present, names...)
	}
}

// expected decodes a v2 case's "expected" object.
func (d *arrayDecoder) expected(e *Expected) error {
	if c, err := d.s.peek(); err != nil || c != '{' {
		if err != nil {
			return err
		}
		return d.wrongType("expected", "an object")
	}
	hasAction := false
	_, err := d.object("expected.", expectedKeys, func(name string) error {
		var err error
		var action, reason string
		switch name {
		case "action":
			hasAction = true
			action, err = d.str("expected.action", true)
			e.Action = Action(action)
		case "allowed_evidence":
			e.AllowedEvidence, err = d.strs("expected.allowed_evidence")
		case "required_evidence":
			e.RequiredEvidence, err = d.strs("expected.required_evidence")
		case "required_any_of":
			e.RequiredAnyOf, err = d.sets("expected.required_any_of")
		case "forbidden_evidence":
			e.ForbiddenEvidence, err = d.strs("expected.forbidden_evidence")
		case "superseded_evidence":
			e.SupersededEvidence, err = d.strs("expected.superseded_evidence")
		case "expected_citations":
			e.ExpectedCitations, err = d.strs("expected.expected_citations")
		case "internal_reason":
			reason, err = d.str("expected.internal_reason", true)
			e.InternalReason = ReasonCode(reason)
		case "public_response_class":
			e.PublicResponseClass, err = d.str("expected.public_response_class", true)
		case "forbidden_markers":
			e.ForbiddenMarkers, err = d.strs("expected.forbidden_markers")
		}
		return err
	})
	if err == nil && !hasAction {
		d.problem("missing required field %q", "expected.action")
	}
	return err
}

// Result fields.
const (
	rID uint32 = 1 << iota
	rRetrieved
	rCited
	rAbstained
	rResponse
	rAnswer
	rLatency
)

// resultKeys are the result fields in bit order.
var resultKeys = []string{"id", "retrieved_ids", "cited_ids", "abstained", "response", "answer_text", "latency_ms"}

var resultFieldNames = []struct {
	bit  uint32
	name string
}{
	{rID, "id"}, {rRetrieved, "retrieved_ids"}, {rCited, "cited_ids"}, {rAbstained, "abstained"},
	{rResponse, "response"}, {rAnswer, "answer_text"}, {rLatency, "latency_ms"},
}

// decodeResultStream decodes an array of results, v1 (with "abstained") or
// v2 per element.
// With transient, the strings and lists handed to each are reused for the
// next element.
func decodeResultStream(r io.Reader, limit int64, transient bool, ps *problems, each func(i int, v1 *Result, v2 *ResultV2)) error {
	d := newArrayDecoder(r, KindResult, limit, ps)
	d.transient = transient
	var res ResultV2
	var v1 Result
	return d.run(func() error {
		res, v1 = ResultV2{}, Result{}
		idOK := false
		seen, err := d.object("", resultKeys, func(name string) error {
			var err error
			switch name {
			case "id":
				if res.ID, err = d.str("id", false); err == nil {
					idOK = true
				}
			case "retrieved_ids":
				res.RetrievedIDs, err = d.strs("retrieved_ids")
			case "cited_ids":
				res.CitedIDs, err = d.strs("cited_ids")
			case "abstained":
				v1.Abstained, err = d.boolean("abstained")
			case "response":
				var a string
				a, err = d.str("response", true)
				res.Response = Action(a)
			case "answer_text":
				res.AnswerText, err = d.str("answer_text", false)
			case "latency_ms":
				res.LatencyMS, err = d.number("latency_ms")
			}
			return err
		})
		if err != nil {
			return err
		}
		isV1 := seen&rAbstained != 0
		required := rID | rRetrieved | rCited
		if isV1 {
			required |= rAbstained
			for _, f := range resultFieldNames {
				if seen&f.bit&(rResponse|rAnswer|rLatency) != 0 {
					d.problem("unknown field %q in a v1 result (v2 fields cannot be mixed with \"abstained\")", f.name)
				}
			}
		}
		if seen&required != required {
			present := map[string]bool{}
			var names []string
			for _, f := range resultFieldNames {
				if required&f.bit != 0 {
					names = append(names, f.name)
					present[f.name] = seen&f.bit != 0
				}
			}
			d.required(present, names...)
		}
		if idOK && res.ID == "" {
			d.problem("field %q must not be empty", "id")
		}
		d.flush(res.ID)
		if isV1 {
			v1.ID, v1.RetrievedIDs, v1.CitedIDs = res.ID, res.RetrievedIDs, res.CitedIDs
			each(d.index, &v1, nil)
			return nil
		}
		each(d.index, nil, &res)
		return nil
	})
}

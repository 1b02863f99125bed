package main

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
)

// The generated export's shape, after issue 14: one case in ten a required
// block, one in a hundred retrieving a forbidden ID (ranked last, where a
// check of the first k alone could miss it), a few false blocks, a few
// answered blocks and invalid citations, and rankings that vary so recall
// and MRR are not all 1. Answered cases retrieve one ID twice. IDs repeat
// across cases the way a real corpus's do (topics cycle), so neither side is
// flattered by all-distinct strings.
const (
	topics   = 5000
	personas = 20
)

// generated names the two files of one size and format.
type generated struct {
	cases, results string
	bytes          int64 // both files together
}

// generate writes n cases and their results in format v1 or v2 into dir.
// The output depends only on n and format.
func generate(dir string, n int, format string) (generated, error) {
	g := generated{
		cases:   filepath.Join(dir, fmt.Sprintf("cases-%s-%d.json", format, n)),
		results: filepath.Join(dir, fmt.Sprintf("results-%s-%d.json", format, n)),
	}
	writeCase, writeResult := appendCaseV1, appendResultV1
	if format == "v2" {
		writeCase, writeResult = appendCaseV2, appendResultV2
	}
	cb, err := writeArray(g.cases, n, writeCase)
	if err != nil {
		return g, err
	}
	rb, err := writeArray(g.results, n, writeResult)
	g.bytes = cb + rb
	return g, err
}

// writeArray writes one JSON array of n elements built by elem.
func writeArray(path string, n int, elem func([]byte, int) []byte) (int64, error) {
	f, err := os.Create(path)
	if err != nil {
		return 0, err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	var size int64
	buf := make([]byte, 0, 1024)
	w.WriteByte('[')
	for i := range n {
		buf = buf[:0]
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = elem(buf, i)
		w.Write(buf)
		size += int64(len(buf))
	}
	w.WriteString("]\n")
	if err := w.Flush(); err != nil {
		f.Close()
		return 0, err
	}
	return size + 3, f.Close()
}

// caseFacts is what both formats say about case i.
type caseFacts struct {
	mustAbstain bool
	forbidden   bool // a restricted document is retrieved
	falseBlock  bool // answerable, but the system abstained
	answeredBad bool // a required block the system answered
	badCitation bool // cites a document it did not retrieve
	ranking     []int
	topic       int
}

// rankings are retrieved lists of topic documents (0 and 1 are the
// relevant ones, 2 is repeated): recall 1, ½, ½ and 0; reciprocal rank 1,
// ½, ¼ (the repeat does not push a hit down) and 0.
var rankings = [][]int{{1, 0, 2, 3, 2}, {2, 0, 3, 2, 4}, {3, 2, 2, 4, 1}, {4, 2, 3, 2}}

func factsOf(i int) caseFacts {
	abstain := i%10 == 0
	return caseFacts{
		mustAbstain: abstain,
		forbidden:   i%100 == 5,
		falseBlock:  !abstain && i%23 == 7,
		answeredBad: abstain && i%500 == 250,
		badCitation: !abstain && i%1000 == 9,
		ranking:     rankings[(i/7)%len(rankings)],
		topic:       i % topics,
	}
}

func appendCaseID(b []byte, i int) []byte {
	b = append(b, `"case-`...)
	b = appendPadded(b, i, 7)
	return append(b, '"')
}

func appendPadded(b []byte, v, width int) []byte {
	s := strconv.Itoa(v)
	for range width - len(s) {
		b = append(b, '0')
	}
	return append(b, s...)
}

// appendDoc appends the quoted ID of document j of a topic.
func appendDoc(b []byte, topic, j int) []byte {
	b = append(b, `"kb-`...)
	b = appendPadded(b, topic, 4)
	b = append(b, '-')
	b = strconv.AppendInt(b, int64(j), 10)
	return append(b, '"')
}

func appendDocs(b []byte, topic int, js ...int) []byte {
	b = append(b, '[')
	for n, j := range js {
		if n > 0 {
			b = append(b, ',')
		}
		b = appendDoc(b, topic, j)
	}
	return append(b, ']')
}

func appendForbidden(b []byte, topic int) []byte {
	b = append(b, `"restricted-`...)
	b = appendPadded(b, topic, 4)
	return append(b, '"')
}

func appendQuestion(b []byte, i int, f caseFacts) []byte {
	b = append(b, `"question":"Topic `...)
	b = strconv.AppendInt(b, int64(f.topic), 10)
	b = append(b, `?","persona":"persona-`...)
	b = appendPadded(b, i%personas, 2)
	return append(b, '"')
}

var allowedDocs = []int{0, 1, 2, 3, 4}

func appendRetrieved(b []byte, f caseFacts) []byte {
	b = append(b, `"retrieved_ids":`...)
	b = appendDocs(b, f.topic, f.ranking...)
	if f.forbidden {
		b = append(b[:len(b)-1], ',')
		b = appendForbidden(b, f.topic)
		b = append(b, ']')
	}
	return b
}

// answered reports whether the system answered case i.
func (f caseFacts) answered() bool { return (!f.mustAbstain || f.answeredBad) && !f.falseBlock }

// appendCited cites the best-ranked relevant document (else the top one),
// or, for an invalid citation, an allowed document it did not retrieve.
func appendCited(b []byte, f caseFacts) []byte {
	if !f.answered() {
		return append(b, `"cited_ids":[]`...)
	}
	b = append(b, `"cited_ids":`...)
	return appendDocs(b, f.topic, f.cited())
}

func (f caseFacts) cited() int {
	if f.badCitation {
		for _, d := range allowedDocs {
			if !slices.Contains(f.ranking, d) {
				return d
			}
		}
	}
	for _, d := range f.ranking {
		if d == 0 || d == 1 {
			return d
		}
	}
	return f.ranking[0]
}

func appendCaseV1(b []byte, i int) []byte {
	f := factsOf(i)
	b = append(b, `{"id":`...)
	b = appendCaseID(b, i)
	b = append(b, ',')
	b = appendQuestion(b, i, f)
	b = append(b, `,"relevant_ids":`...)
	if f.mustAbstain {
		b = append(b, `[]`...)
	} else {
		b = appendDocs(b, f.topic, 0, 1)
	}
	b = append(b, `,"allowed_ids":`...)
	b = appendDocs(b, f.topic, allowedDocs...)
	b = append(b, `,"must_abstain":`...)
	b = strconv.AppendBool(b, f.mustAbstain)
	return append(b, '}')
}

func appendResultV1(b []byte, i int) []byte {
	f := factsOf(i)
	b = append(b, `{"id":`...)
	b = appendCaseID(b, i)
	b = append(b, ',')
	b = appendRetrieved(b, f)
	b = append(b, ',')
	b = appendCited(b, f)
	b = append(b, `,"abstained":`...)
	b = strconv.AppendBool(b, !f.answered())
	return append(b, '}')
}

var strata = []string{"current", "temporal", "private", "public"}

// appendCaseV2 is the v2 form of the same case: the v1 sets become
// allowed/required evidence, must_abstain an action with its reason; a
// temporal stratum carries as_of and a superseded version; the forbidden
// document is also named.
func appendCaseV2(b []byte, i int) []byte {
	f := factsOf(i)
	stratum := strata[i%len(strata)]
	b = append(b, `{"id":`...)
	b = appendCaseID(b, i)
	b = append(b, ',')
	b = appendQuestion(b, i, f)
	b = append(b, `,"stratum":"`...)
	b = append(b, stratum...)
	b = append(b, '"')
	if stratum == "temporal" {
		b = append(b, `,"as_of":"2026-10-01T00:00:00+09:00"`...)
	}
	b = append(b, `,"expected":{"action":`...)
	if f.mustAbstain {
		b = append(b, `"block","internal_reason":"UNAUTHORIZED"`...)
	} else {
		b = append(b, `"answer"`...)
	}
	b = append(b, `,"allowed_evidence":`...)
	b = appendDocs(b, f.topic, allowedDocs...)
	if !f.mustAbstain {
		b = append(b, `,"required_evidence":`...)
		b = appendDocs(b, f.topic, 0, 1)
		b = append(b, `,"expected_citations":`...)
		b = appendDocs(b, f.topic, 0)
	}
	if stratum == "temporal" {
		// Readable, but not the version valid at as_of.
		b = append(b, `,"superseded_evidence":`...)
		b = appendDocs(b, f.topic, 9)
	}
	if f.forbidden {
		b = append(b, `,"forbidden_evidence":[`...)
		b = appendForbidden(b, f.topic)
		b = append(b, ']')
	}
	return append(b, `}}`...)
}

func appendResultV2(b []byte, i int) []byte {
	f := factsOf(i)
	b = append(b, `{"id":`...)
	b = appendCaseID(b, i)
	b = append(b, ',')
	b = appendRetrieved(b, f)
	b = append(b, ',')
	b = appendCited(b, f)
	if f.answered() {
		b = append(b, `,"response":"answer","answer_text":"See kb-`...)
		b = appendPadded(b, f.topic, 4)
		b = append(b, `-0."`...)
	} else {
		b = append(b, `,"response":"block"`...)
	}
	b = append(b, `,"latency_ms":`...)
	b = strconv.AppendInt(b, int64(80+i%400), 10)
	return append(b, '}')
}

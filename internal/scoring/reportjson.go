package scoring

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"math"
	"strconv"
	"unicode/utf8"
)

// WriteJSON writes rep (from Finish(false)) with every case's score, as
// indented JSON byte for byte equal to encoding/json's Encoder with
// SetIndent("", "  ") on the full report — but the cases are encoded one at
// a time straight from the compact scores, so a million-case report neither
// builds a million CaseScores nor goes through reflection.
func (s *Session) WriteJSON(w io.Writer, rep Report) error {
	rep.Cases = []CaseScore{}
	head, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	const marker = "\n  \"cases\": []"
	cut := bytes.Index(head, []byte(marker))
	if cut < 0 {
		// Unreachable: Report always has a top-level "cases" key.
		return json.NewEncoder(w).Encode(rep)
	}
	bw := bufio.NewWriterSize(w, 1<<20)
	bw.Write(head[:cut+len(marker)-1])
	buf := make([]byte, 0, 1024)
	fc := new(floatCache)
	for i := range s.cases {
		buf = buf[:0]
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = appendCaseJSON(buf, &s.scores[i], &s.cases[i], fc)
		bw.Write(buf)
	}
	if len(s.cases) > 0 {
		bw.WriteString("\n  ")
	}
	bw.WriteByte(']')
	bw.Write(head[cut+len(marker):])
	bw.WriteByte('\n')
	return bw.Flush()
}

// appendCaseJSON appends one case's score in CaseScore's field order and
// omitempty rules, indented as an element of the top-level "cases" array.
func appendCaseJSON(b []byte, s *scored, c *caseRec, fc *floatCache) []byte {
	const in = "\n      "
	b = append(b, "\n    {"+in+`"id": `...)
	b = appendJSONString(b, c.id)
	b = append(b, ","+in+`"persona": `...)
	b = appendJSONString(b, c.persona)
	b = append(b, ","+in+`"forbidden_ids": `...)
	l := s.l()
	b = appendStringList(b, l.forbidden, in)
	b = append(b, ","+in+`"duplicate_count": `...)
	b = strconv.AppendInt(b, int64(s.duplicates), 10)
	num := func(b []byte, key string, bit uint8, v float64, omitNull bool) []byte {
		if s.defined&bit == 0 {
			if omitNull {
				return b
			}
			return append(append(append(b, ","+in+`"`...), key...), `": null`...)
		}
		b = append(append(append(b, ","+in+`"`...), key...), `": `...)
		return fc.append(b, v)
	}
	b = num(b, "recall_at_k", hasRecall, s.recall, false)
	b = num(b, "fill_at_k", hasFill, s.fill, false)
	b = num(b, "reciprocal_rank", hasRR, s.rr, false)
	b = append(b, ","+in+`"outcome": `...)
	b = appendJSONString(b, string(s.outcome))
	if s.leaked() {
		b = append(b, ","+in+`"disclosed": true`...)
	}
	for _, f := range []struct{ key, v string }{{"stratum", c.stratum}, {"action", string(c.action)}, {"declared", string(s.declared)}} {
		if f.v != "" {
			b = append(append(append(b, ","+in+`"`...), f.key...), `": `...)
			b = appendJSONString(b, f.v)
		}
	}
	b = num(b, "precision_at_k", hasPrec, s.prec, true)
	b = num(b, "ndcg_at_k", hasNDCG, s.ndcg, true)
	if len(l.markers) > 0 {
		b = append(b, ","+in+`"leaked_markers": `...)
		b = appendStringList(b, l.markers, in)
	}
	if len(l.texts) > 0 {
		b = append(b, ","+in+`"leaked_texts": `...)
		b = appendStringList(b, l.texts, in)
	}
	if s.hasLatency {
		b = append(b, ","+in+`"latency_ms": `...)
		b = fc.append(b, s.latency)
	}
	return append(b, "\n    }"...)
}

// appendStringList appends a list of strings, [] when empty; elements are
// indented one level deeper than in.
func appendStringList(b []byte, ids []string, in string) []byte {
	if len(ids) == 0 {
		return append(b, "[]"...)
	}
	b = append(b, '[')
	for i, id := range ids {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(append(b, in...), "  "...)
		b = appendJSONString(b, id)
	}
	return append(append(b, in...), ']')
}

// floatCache remembers the text of recently formatted floats: a report's
// ratios take few distinct values (1, 0.5, 0), so most are copied rather
// than formatted again. Direct-mapped on the value's bits.
type floatCache struct {
	bits [256]uint64
	text [256]string
}

func (fc *floatCache) append(b []byte, f float64) []byte {
	bits := math.Float64bits(f)
	h := (bits ^ bits>>17 ^ bits>>31 ^ bits>>47) & 255
	if t := fc.text[h]; t != "" && fc.bits[h] == bits {
		return append(b, t...)
	}
	start := len(b)
	b = appendJSONFloat(b, f)
	fc.bits[h], fc.text[h] = bits, string(b[start:])
	return b
}

// appendJSONFloat formats like encoding/json: shortest representation,
// exponent form only for very small or large magnitudes.
func appendJSONFloat(b []byte, f float64) []byte {
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	start := len(b)
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// clean up e-09 to e-9
		n := len(b) - start
		if n >= 4 && b[len(b)-4] == 'e' && b[len(b)-3] == '-' && b[len(b)-2] == '0' {
			b[len(b)-2] = b[len(b)-1]
			b = b[:len(b)-1]
		}
	}
	return b
}

const hexDigits = "0123456789abcdef"

// appendJSONString quotes s like encoding/json with HTML escaping on (the
// Encoder default): <, > and & become \u003c etc., invalid UTF-8 becomes
// \ufffd, U+2028 and U+2029 are escaped.
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

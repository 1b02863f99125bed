package postgres

import (
	"hash/fnv"
	"math"
	"strconv"
	"strings"
	"unicode"
)

// Dimensions of the local embeddings. Small on purpose: the embeddings exist
// so vector search runs through pgvector's real index and filter path, not to
// rank well.
const Dimensions = 64

// maxChunkRunes bounds one chunk; paragraphs longer than this are split.
const maxChunkRunes = 1000

// Embed is a deterministic hashed bag-of-words embedding: each lower-cased
// word adds ±1 to one of Dimensions buckets, and the vector is L2-normalised.
// It needs no model, so the same text embeds the same everywhere (documents
// written by the driver, queries, a user's own statements fed these values).
func Embed(text string) []float32 {
	v := make([]float32, Dimensions)
	for _, w := range words(text) {
		h := fnv.New64a()
		_, _ = h.Write([]byte(w))
		sum := h.Sum64()
		sign := float32(1)
		if sum&(1<<63) != 0 {
			sign = -1
		}
		v[sum%Dimensions] += sign
	}
	var norm float64
	for _, x := range v {
		norm += float64(x) * float64(x)
	}
	if norm == 0 {
		// pgvector's cosine distance of a zero vector is NaN; one fixed
		// component keeps the empty text comparable.
		v[0] = 1
		return v
	}
	n := float32(math.Sqrt(norm))
	for i := range v {
		v[i] /= n
	}
	return v
}

// VectorLiteral formats v the way pgvector parses it: "[x,y,...]".
func VectorLiteral(v []float32) string {
	var b strings.Builder
	b.WriteByte('[')
	for i, x := range v {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.FormatFloat(float64(x), 'g', 6, 32))
	}
	b.WriteByte(']')
	return b.String()
}

func words(text string) []string {
	return strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
}

// Chunks splits a document into the passages that are indexed: the title
// joins the first paragraph, paragraphs are separated by blank lines, and a
// paragraph longer than maxChunkRunes is cut on word boundaries. A document
// always has at least one chunk, so it is always retrievable by its title.
func Chunks(title, body string) []string {
	var out []string
	for _, para := range strings.Split(strings.ReplaceAll(body, "\r\n", "\n"), "\n\n") {
		if para = strings.TrimSpace(para); para != "" {
			out = append(out, split(para)...)
		}
	}
	if title = strings.TrimSpace(title); title != "" {
		if len(out) == 0 {
			return []string{title}
		}
		out[0] = title + "\n" + out[0]
	}
	if len(out) == 0 {
		return []string{""}
	}
	return out
}

func split(para string) []string {
	var out []string
	var cur strings.Builder
	n := 0
	for _, w := range strings.Fields(para) {
		l := len([]rune(w))
		if n > 0 && n+1+l > maxChunkRunes {
			out = append(out, cur.String())
			cur.Reset()
			n = 0
		}
		if n > 0 {
			cur.WriteByte(' ')
			n++
		}
		cur.WriteString(w)
		n += l
	}
	if n > 0 {
		out = append(out, cur.String())
	}
	return out
}

package ragtarget

import (
	"strings"

	"github.com/ragcanary/ragcanary/internal/driver"
)

// maxPassageChars bounds how much of each passage an answer quotes.
const maxPassageChars = 400

// noAnswer is the reply when no permitted passage matches. It repeats the
// question, as real assistants do, so a detector that looks for the query
// in answer text sees a false sighting here rather than in production. The
// cache key holds the whole question, so an echo never answers another one.
func noAnswer(question string) string {
	return `I could not find anything you have access to about "` + question + `".`
}

// composeAnswer is an extractive stand-in for a generator: it quotes the top
// passages and cites each, so a canary payload in a passage surfaces in the
// answer text exactly as a real model would repeat it.
func composeAnswer(question string, hits []scoredChunk) answer {
	if len(hits) == 0 {
		// Nothing eligible was retrieved: a bounded absence, declared so.
		return answer{text: noAnswer(question), citations: []string{}, status: driver.StatusNotFound, reason: driver.ReasonNoEvidence}
	}
	var b strings.Builder
	citations := make([]string, 0, len(hits))
	for i, h := range hits {
		if i > 0 {
			b.WriteString("\n")
		}
		b.WriteString(quote(h.text))
		b.WriteString(" [")
		b.WriteString(h.chunkID)
		b.WriteString("]")
		citations = append(citations, h.chunkID)
	}
	return answer{text: b.String(), citations: citations, status: driver.StatusAnswer}
}

func quote(text string) string {
	text = strings.Join(strings.Fields(text), " ")
	if len(text) <= maxPassageChars {
		return text
	}
	cut := strings.LastIndexByte(text[:maxPassageChars], ' ')
	if cut <= 0 {
		cut = maxPassageChars
	}
	return text[:cut] + " …"
}

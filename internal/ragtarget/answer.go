package ragtarget

import (
	"strings"
)

// maxPassageChars bounds how much of each passage an answer quotes.
const maxPassageChars = 400

// noAnswer is returned when no permitted passage matches.
const noAnswer = "I could not find anything you have access to about that."

// composeAnswer is an extractive stand-in for a generator: it quotes the top
// passages and cites each, so a canary token in a passage surfaces in the
// answer text exactly as a real model would repeat it.
func composeAnswer(hits []scoredChunk) answer {
	if len(hits) == 0 {
		return answer{text: noAnswer, citations: []string{}}
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
	return answer{text: b.String(), citations: citations}
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

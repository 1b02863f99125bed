package probe

import (
	"strings"
	"testing"

	"github.com/ragcanary/ragcanary/internal/dev/testutil"
	"github.com/ragcanary/ragcanary/internal/driver"
	"github.com/ragcanary/ragcanary/internal/measure"
)

// fdfa is U+FDFA, one rune (3 bytes) that NFKC expands to 18 runes (33
// bytes): a reply of it grows elevenfold under normalisation.
const fdfa = "\uFDFA"

// hostileText is about n bytes of U+FDFA.
func hostileText(n int) string { return strings.Repeat(fdfa, n/len(fdfa)) }

// TestDetectionOfExpandingTextIsBounded: a hit or an answer of 1 MiB of a
// rune that NFKC expands elevenfold costs a detection no more than the
// input's size in allocations (the whole normalised text used to be built,
// about 80 MiB), and the payload is still found wherever it is.
func TestDetectionOfExpandingTextIsBounded(t *testing.T) {
	text := hostileText(1 << 20)
	tg := styledTarget
	var shows bool
	hit := []driver.Hit{{DocumentID: "other", Text: text}}
	if got := testutil.Allocated(func() { shows = SearchShows(hit, tg) }); got > uint64(len(text)) {
		t.Errorf("a search detection over %d bytes of U+FDFA allocated %d bytes, want at most the input's size", len(text), got)
	}
	if shows {
		t.Errorf("a hit without the payload shows the canary")
	}
	if got := testutil.Allocated(func() { shows = AnswerShows(driver.Answer{Text: text}, tg) }); got > uint64(len(text)) {
		t.Errorf("an answer detection over %d bytes of U+FDFA allocated %d bytes, want at most the input's size", len(text), got)
	}
	if shows {
		t.Errorf("an answer without the payload shows the canary")
	}
	mid := len(text) / 2 / len(fdfa) * len(fdfa)
	styled := strings.ToUpper(hyphenate(tg.Payload, 4))
	for _, tc := range []struct {
		name, text string
	}{
		{name: "at the start", text: tg.Payload + text},
		{name: "in the middle", text: text[:mid] + tg.Payload + text[mid:]},
		{name: "at the end", text: text + tg.Payload},
		{name: "re-styled in the middle", text: text[:mid] + styled + text[mid:]},
		{name: "full-width at the end", text: text + fullWidth(tg.Payload)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !SearchShows([]driver.Hit{{DocumentID: "other", Text: tc.text}}, tg) {
				t.Errorf("the hit carrying the payload does not show the canary")
			}
			if !AnswerShows(driver.Answer{Text: tc.text}, tg) {
				t.Errorf("the answer quoting the payload does not show the canary")
			}
		})
	}
}

// normalizedChunksOf collects the chunks normalizedChunks hands out.
func normalizedChunksOf(text string) []string {
	var chunks []string
	normalizedChunks(text, func(c []byte) bool {
		chunks = append(chunks, string(c))
		return true
	})
	return chunks
}

// TestNormalizedChunksAreNormalize: the chunks a detection reads, joined,
// are exactly Normalize of the text, over many chunks and every kind of
// rune Normalize changes (compatibility forms, case, dropped runes,
// combining marks, invalid UTF-8).
func TestNormalizedChunksAreNormalize(t *testing.T) {
	pieces := []string{fdfa, "ﬁ", "Ａｂ", "ß", "ẞ", "İ", "e\u0301", "\u0301\u0301\u0301", "\u200b", " - ", "**",
		"ǅ", "Ω", "ｶﾞ", "①", "\xff", "\xe2\x82", "rc", "0f", "\U0001D400"}
	var b strings.Builder
	for i := 0; b.Len() < 200_000; i++ {
		b.WriteString(pieces[(i*7+i/3)%len(pieces)])
	}
	for _, text := range []string{"", "a", b.String(), hostileText(64 << 10), strings.Repeat("\u0301", 100) + "a"} {
		chunks := normalizedChunksOf(text)
		if got, want := strings.Join(chunks, ""), Normalize(text); got != want {
			t.Errorf("text of %d bytes: the chunks joined (%d bytes) differ from Normalize (%d bytes)", len(text), len(got), len(want))
		}
		if len(text) > 100_000 && len(chunks) < 2 {
			t.Errorf("text of %d bytes came in %d chunk(s): nothing here tests a boundary", len(text), len(chunks))
		}
	}
}

// straddle is where a chunk boundary cuts want in text's normalised
// chunks: how many of its bytes come before the boundary, 0 when none cuts it.
func straddle(text, want string) int {
	chunks := normalizedChunksOf(text)
	at := strings.Index(strings.Join(chunks, ""), want)
	if at < 0 {
		return 0
	}
	end := 0
	for _, c := range chunks {
		end += len(c)
		if end > at && end < at+len(want) {
			return end - at
		}
	}
	return 0
}

// TestPayloadAcrossAChunkBoundaryIsFound places the payload, verbatim and
// re-styled, at every position around the first chunk boundary of a long
// text, so that the boundary cuts it at every one of its splits, and
// checks it is found each time.
func TestPayloadAcrossAChunkBoundaryIsFound(t *testing.T) {
	tg := styledTarget
	want := Normalize(tg.Payload)
	filler := strings.Repeat("lorem ipsum ", 20_000)
	chunks := normalizedChunksOf(filler)
	if len(chunks) < 2 {
		t.Fatalf("the filler came in %d chunk(s)", len(chunks))
	}
	// The filler's normalised text is its letters, 10 in every 12 bytes:
	// the input offset of the first boundary, give or take a word.
	boundary := len(chunks[0]) * 12 / 10
	for _, quote := range []string{tg.Payload, strings.ToUpper(hyphenate(tg.Payload, 4))} {
		splits := map[int]bool{}
		for at := boundary - 2*len(quote); at < boundary+2*len(quote); at++ {
			text := filler[:at] + quote + filler[at:]
			split := straddle(text, want)
			if split == 0 {
				continue
			}
			splits[split] = true
			if !AnswerShows(driver.Answer{Text: text}, tg) {
				t.Errorf("%q… cut after %d bytes by a chunk boundary is not found", quote[:8], split)
			}
			if old, _ := AnswerContent(driver.Answer{Text: text, Citations: []string{}}, tg); old != measure.Present {
				t.Errorf("%q… cut after %d bytes: AnswerContent old = %s, want present", quote[:8], split, old)
			}
		}
		if len(splits) != len(want)-1 {
			t.Errorf("%q…: a chunk boundary cut the payload at %d of its %d splits; the test misses some", quote[:8], len(splits), len(want)-1)
		}
	}
}

// BenchmarkAnswerShowsExpandingText is the hostile case: an answer of
// 1 MiB of U+FDFA without the payload.
func BenchmarkAnswerShowsExpandingText(b *testing.B) {
	a := driver.Answer{Text: hostileText(1 << 20)}
	b.ReportAllocs()
	b.SetBytes(int64(len(a.Text)))
	for b.Loop() {
		if AnswerShows(a, styledTarget) {
			b.Fatal("shows")
		}
	}
}

// BenchmarkAnswerShowsPlainText is 1 MiB of ordinary prose, for comparison.
func BenchmarkAnswerShowsPlainText(b *testing.B) {
	a := driver.Answer{Text: strings.Repeat("The quick brown fox jumps over the lazy dog. ", (1<<20)/45)}
	b.ReportAllocs()
	b.SetBytes(int64(len(a.Text)))
	for b.Loop() {
		if AnswerShows(a, styledTarget) {
			b.Fatal("shows")
		}
	}
}

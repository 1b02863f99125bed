package ragtarget

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// Benchmark corpus: 10,000 documents of 10 passages each (100,000 chunks);
// the narrow persona may read 1% of the documents, hence 1% of the chunks.
const (
	benchDocs         = 10_000
	benchChunksPerDoc = 10
	benchWordsPerDoc  = 300
	benchVocabulary   = 5_000
	benchNarrowEvery  = 100
)

var (
	benchOnce    sync.Once
	benchReplica *replica
	benchVocab   []string
	benchErr     error
)

// benchIndex builds the shared corpus once per process; building dominates
// the run time, so sub-benchmarks reuse it.
func benchIndex(b *testing.B) (*replica, []string) {
	benchOnce.Do(func() {
		start := time.Now()
		benchReplica, benchVocab, benchErr = buildBenchIndex()
		b.Logf("built %d chunks in %v", benchDocs*benchChunksPerDoc, time.Since(start).Round(time.Millisecond))
	})
	if benchErr != nil {
		b.Fatal(benchErr)
	}
	return benchReplica, benchVocab
}

func buildBenchIndex() (*replica, []string, error) {
	rng := rand.New(rand.NewPCG(1, 2))
	vocab := make([]string, benchVocabulary)
	for i := range vocab {
		vocab[i] = fmt.Sprintf("w%04x", i)
	}
	// Zipf-distributed words give realistic BM25 statistics: few common terms,
	// a long tail of rare ones.
	zipf := rand.NewZipf(rng, 1.1, 2, benchVocabulary-1)
	r, err := newReplica()
	if err != nil {
		return nil, nil, err
	}
	const perChange = 500
	for start := 0; start < benchDocs; start += perChange {
		ch := change{puts: map[string]indexedDoc{}}
		for i := start; i < start+perChange; i++ {
			words := make([]string, benchWordsPerDoc)
			for w := range words {
				words[w] = vocab[zipf.Uint64()]
			}
			acl := []string{"user:broad"}
			if i%benchNarrowEvery == 0 {
				acl = []string{"user:broad", "user:narrow"}
			}
			ch.puts[fmt.Sprintf("doc-%05d", i)] = indexedDoc{
				contentVersion: 1,
				chunks:         chunk("title", strings.Join(words, " "), benchWordsPerDoc/benchChunksPerDoc),
				acl:            acl,
			}
		}
		if err := r.apply(ch); err != nil {
			return nil, nil, err
		}
	}
	return r, vocab, nil
}

func BenchmarkSearch(b *testing.B) {
	r, vocab := benchIndex(b)
	for _, tc := range []struct {
		mode      FilterMode
		principal string
	}{
		{FilterPrefilter, "user:narrow"},
		{FilterPostfilter, "user:narrow"},
		{FilterPrefilter, "user:broad"},
	} {
		b.Run(fmt.Sprintf("%s/%s", tc.mode, strings.TrimPrefix(tc.principal, "user:")), func(b *testing.B) {
			benchSearch(b, r, vocab, tc.mode, []string{tc.principal})
		})
	}
}

func benchSearch(b *testing.B, r *replica, vocab []string, mode FilterMode, principals []string) {
	rng := rand.New(rand.NewPCG(3, 4))
	ctx := context.Background()
	var durations []time.Duration
	hits := 0
	b.ResetTimer()
	for b.Loop() {
		// Mid-frequency words: common enough to match, rare enough to rank.
		q := strings.Join([]string{vocab[20+rng.IntN(500)], vocab[20+rng.IntN(500)], vocab[20+rng.IntN(500)]}, " ")
		start := time.Now()
		res, err := r.search(ctx, q, 10, principals, mode, DefaultCandidateDepth)
		durations = append(durations, time.Since(start))
		if err != nil {
			b.Fatal(err)
		}
		hits += len(res)
	}
	b.StopTimer()
	slices.Sort(durations)
	b.ReportMetric(ms(percentile(durations, 0.50)), "p50-ms")
	b.ReportMetric(ms(percentile(durations, 0.99)), "p99-ms")
	b.ReportMetric(float64(hits)/float64(len(durations)), "hits/op")
}

func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(len(sorted)-1, int(p*float64(len(sorted))))]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

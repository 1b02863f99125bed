package shard

import (
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/utils/ptr"
)

// BenchmarkShardIndex10000 is what the elected replica keeps for a fleet of
// 10,000 canaries with a run each: the two indexes its passes read, in heap
// bytes per object once the decoded metadata is gone. Each string is its
// own allocation, as the protobuf decoder makes them.
func BenchmarkShardIndex10000(b *testing.B) {
	const n = 10_000
	var perObject float64
	for b.Loop() {
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		canaries, runs := newIndex("", func() {}), newIndex("RevocationCanary", func() {})
		fillIndexes(b, canaries, runs, n)
		runtime.GC()
		runtime.ReadMemStats(&after)
		if after.HeapAlloc < before.HeapAlloc {
			b.Fatalf("the heap shrank while the indexes filled (%d → %d bytes): no figure", before.HeapAlloc, after.HeapAlloc)
		}
		perObject = float64(after.HeapAlloc-before.HeapAlloc) / (2 * n)
		runtime.KeepAlive(canaries)
		runtime.KeepAlive(runs)
	}
	b.ReportMetric(perObject, "B/object")
	b.ReportMetric(0, "ns/op")
}

// fillIndexes puts n canaries and a run of each into the indexes, as a
// metadata watch would.
func fillIndexes(tb testing.TB, canaries, runs *index, n int) {
	for i := range n {
		ns := fmt.Sprintf("tenant-%d", i%50)
		name := fmt.Sprintf("canary-%05d", i)
		uid := uuid.NewUUID()
		canary := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{
			Namespace: strings.Clone(ns), Name: name, UID: uid,
			ResourceVersion: strconv.Itoa(100_000 + 2*i),
			Labels:          map[string]string{v1alpha1.LabelShardOwner: fmt.Sprintf("ragcanary-%d", i%3)},
		}}
		run := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{
			Namespace: strings.Clone(ns), Name: name + "-29001122", UID: uuid.NewUUID(),
			ResourceVersion: strconv.Itoa(100_001 + 2*i),
			Labels:          map[string]string{v1alpha1.LabelShardOwner: fmt.Sprintf("ragcanary-%d", i%3)},
			OwnerReferences: []metav1.OwnerReference{{Kind: "RevocationCanary", Name: name,
				UID: types.UID(strings.Clone(string(uid))), Controller: ptr.To(true)}},
		}}
		if err := canaries.Add(canary); err != nil {
			tb.Fatal(err)
		}
		if err := runs.Add(run); err != nil {
			tb.Fatal(err)
		}
	}
}

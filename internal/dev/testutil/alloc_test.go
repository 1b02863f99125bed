package testutil_test

import (
	"testing"

	"github.com/ragcanary/ragcanary/internal/dev/testutil"
)

var sink []byte

// A 1 MiB allocation is counted; doing nothing counts next to nothing.
func TestAllocatedCountsWhatFAllocates(t *testing.T) {
	if n := testutil.Allocated(func() { sink = make([]byte, 1<<20) }); n < 1<<20 {
		t.Fatalf("allocating 1 MiB counted %d bytes", n)
	}
	if n := testutil.Allocated(func() {}); n > 64<<10 {
		t.Fatalf("allocating nothing counted %d bytes", n)
	}
}

package manager

import "testing"

func TestSoftMemoryLimit(t *testing.T) {
	for _, tc := range []struct {
		name                string
		container, explicit string
		want                int64
		set                 bool
	}{
		// 90% of a 512 MiB container limit.
		{"container limit", "536870912", "", 483183820, true},
		// An explicit GOMEMLIMIT is the operator admin's choice.
		{"explicit GOMEMLIMIT wins", "536870912", "300MiB", 0, false},
		// No limit known: leave the runtime's default (none).
		{"unset", "", "", 0, false},
		{"unparsable", "512Mi", "", 0, false},
		{"zero", "0", "", 0, false},
	} {
		got, set := SoftMemoryLimit(tc.container, tc.explicit)
		if got != tc.want || set != tc.set {
			t.Errorf("%s: SoftMemoryLimit(%q, %q) = %d, %v; want %d, %v", tc.name, tc.container, tc.explicit, got, set, tc.want, tc.set)
		}
	}
}

package report

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading golden file (run 'go test ./internal/report/ -update' to create it): %v", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file; got:\n%s", name, got)
	}
}

func render(t *testing.T, ev Evidence, f Format) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := Render(&b, ev, f); err != nil {
		t.Fatalf("rendering %s: %v", f, err)
	}
	return b.Bytes()
}

func suiteEvidence(t *testing.T) Evidence {
	t.Helper()
	ev, err := BuildSuite(suiteFixture(t), reportTime)
	if err != nil {
		t.Fatal(err)
	}
	return ev
}

func TestGoldenReports(t *testing.T) {
	for _, tc := range []struct {
		name string
		ev   func(*testing.T) Evidence
	}{
		{"canaryrun", func(*testing.T) Evidence { return BuildCanary(canaryFixture(), reportTime) }},
		{"suiterun", suiteEvidence},
	} {
		for _, f := range []Format{FormatJSON, FormatMarkdown, FormatHTML} {
			t.Run(tc.name+"."+string(f), func(t *testing.T) {
				golden(t, tc.name+"."+string(f), render(t, tc.ev(t), f))
			})
		}
	}
}

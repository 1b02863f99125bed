package image

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// The tests put a tiny program on the base, for both platforms: the builder
// is the same for any main package, and cross-compiling this one is quick.
var hello = Spec{Name: "hello", Package: "./internal/dev/image/testdata/hello", Binary: "/hello", Repository: "example.test/hello"}

var testMeta = Meta{
	Source:   "https://example.test/ragcanary",
	Revision: "0123456789abcdef0123456789abcdef01234567",
	Version:  "0.0.0-test",
	Created:  time.Date(2026, 11, 2, 3, 4, 5, 0, time.UTC),
}

// testBase is a made-up bundle, so a test can tell it is the one in the
// image.
var testBase = Base{
	CACerts:        []byte("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"),
	CACertsVersion: "20230311+deb12u1",
}

// scratchDir outlives single tests so the built fixture is shared.
var scratchDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "image-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	scratchDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// repoRoot is the module root, three levels up (internal/dev/image).
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", "..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return root
}

func testInputs(t *testing.T, work string) Inputs {
	return Inputs{SourceDir: repoRoot(t), WorkDir: work, Meta: testMeta, Base: testBase, Platforms: Platforms, LDFlags: LDFlags}
}

// fixture is hello built once, and its outputs written once, for the tests
// that only read them.
var fixture struct {
	sync.Mutex
	built  *Built
	outDir string
}

func builtHello(t *testing.T) (*Built, string) {
	t.Helper()
	fixture.Lock()
	defer fixture.Unlock()
	if fixture.built == nil {
		b, out := buildAndWrite(t, filepath.Join(scratchDir, "fixture"))
		fixture.built, fixture.outDir = b, out
	}
	return fixture.built, fixture.outDir
}

// buildAndWrite builds hello under dir and writes its outputs to dir/out.
func buildAndWrite(t *testing.T, dir string) (*Built, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	b, err := Build(ctx, testInputs(t, filepath.Join(dir, "work")), hello)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	if err := Write(out, []*Built{b}); err != nil {
		t.Fatal(err)
	}
	return b, out
}

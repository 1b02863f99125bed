package image

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/validate"
)

func TestLayoutNamesEachIndex(t *testing.T) {
	b, out := builtHello(t)
	p, err := layout.FromPath(filepath.Join(out, LayoutDir))
	if err != nil {
		t.Fatal(err)
	}
	assertLayoutHolds(t, p, b)
}

// assertLayoutHolds checks the layout's index.json names b's index by
// ref.name and containerd's image name.
func assertLayoutHolds(t *testing.T, p layout.Path, b *Built) {
	t.Helper()
	root, err := p.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	if err := validate.Index(root); err != nil {
		t.Errorf("layout does not hold what its manifests say: %v", err)
	}
	m, err := root.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	want, err := b.Index.Digest()
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Manifests) != 1 || m.Manifests[0].Digest != want {
		t.Fatalf("layout lists %+v, want the index %s", m.Manifests, want)
	}
	a := m.Manifests[0].Annotations
	if a[AnnotationRefName] != "hello-0.0.0-test" || a[AnnotationContainerdName] != "example.test/hello:0.0.0-test" {
		t.Errorf("layout annotations %v", a)
	}
	idx, err := root.ImageIndex(want)
	if err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range im.Manifests {
		img, err := idx.Image(d.Digest)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := img.Layers(); err != nil {
			t.Fatalf("image %s in layout: %v", d.Digest, err)
		}
	}
}

func TestOCIArchiveIsTheIndexLayout(t *testing.T) {
	b, out := builtHello(t)
	dir := t.TempDir()
	tarCmd := exec.Command("tar", "-x", "-f", filepath.Join(out, "hello.oci.tar"), "-C", dir)
	if msg, err := tarCmd.CombinedOutput(); err != nil {
		t.Fatalf("tar: %v: %s", err, msg)
	}
	if _, err := os.Stat(filepath.Join(dir, "oci-layout")); err != nil {
		t.Fatal(err)
	}
	assertLayoutHolds(t, layout.Path(dir), b)
}

func TestDockerArchiveHoldsOnePlatformImage(t *testing.T) {
	b, out := builtHello(t)
	tag, err := name.NewTag("example.test/hello:0.0.0-test")
	if err != nil {
		t.Fatal(err)
	}
	for i, slug := range []string{"linux-amd64", "linux-arm64"} {
		path := filepath.Join(out, "hello-"+slug+".tar")
		m, err := tarball.LoadManifest(func() (io.ReadCloser, error) { return os.Open(path) })
		if err != nil {
			t.Fatal(err)
		}
		if len(m) != 1 || len(m[0].RepoTags) != 1 || m[0].RepoTags[0] != tag.String() {
			t.Fatalf("%s manifest.json %+v, want one image tagged %s", slug, m, tag)
		}
		img, err := tarball.ImageFromPath(path, &tag)
		if err != nil {
			t.Fatal(err)
		}
		assertSameConfig(t, slug, img, b.Images[i])
	}
}

func assertSameConfig(t *testing.T, what string, got, want v1.Image) {
	t.Helper()
	g, err := got.ConfigName()
	if err != nil {
		t.Fatal(err)
	}
	w, err := want.ConfigName()
	if err != nil {
		t.Fatal(err)
	}
	if g != w {
		t.Errorf("%s: config %s, want %s", what, g, w)
	}
}

func TestContainerdNameAlwaysHasARegistry(t *testing.T) {
	for ref, want := range map[string]string{
		"ragcanary/manager:0.1.0":             "docker.io/ragcanary/manager:0.1.0",
		"registry.example.test/team/hello:v1": "registry.example.test/team/hello:v1",
		"127.0.0.1:5000/hello:0.0.0-test":     "127.0.0.1:5000/hello:0.0.0-test",
	} {
		got, err := containerdName(ref)
		if err != nil || got != want {
			t.Errorf("containerdName(%q) = %q, %v; want %q", ref, got, err, want)
		}
	}
}

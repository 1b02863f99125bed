package image

import (
	"bytes"
	"context"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// startRegistry serves an in-process registry on loopback.
func startRegistry(t *testing.T, opts ...registry.Option) string {
	t.Helper()
	opts = append(opts, registry.Logger(log.New(io.Discard, "", 0)))
	srv := httptest.NewServer(registry.New(opts...))
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")
	if !strings.HasPrefix(host, "127.0.0.1:") {
		t.Fatalf("registry listens on %s, want loopback", host)
	}
	return host
}

func TestPushThenPullByDigestGivesTheSameIndex(t *testing.T) {
	for _, tc := range []struct {
		name      string
		referrers bool // the registry serves the OCI 1.1 referrers API
	}{
		{"referrers API", true},
		{"fallback tag", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assertPushRoundTrips(t, startRegistry(t, registry.WithReferrersSupport(tc.referrers)))
		})
	}
}

func assertPushRoundTrips(t *testing.T, host string) {
	b, out := builtHello(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tag, err := name.NewTag(host+"/team/hello:v1", name.StrictValidation)
	if err != nil {
		t.Fatal(err)
	}
	pushed, err := Push(ctx, out, "hello", tag)
	if err != nil {
		t.Fatal(err)
	}
	want, err := b.Index.Digest()
	if err != nil {
		t.Fatal(err)
	}
	if pushed.Reference.DigestStr() != want.String() || pushed.Reference.Context().String() != host+"/team/hello" {
		t.Fatalf("pushed %s, want %s/team/hello@%s", pushed.Reference, host, want)
	}
	idx, err := remote.Index(pushed.Reference, remote.WithContext(ctx))
	if err != nil {
		t.Fatal(err)
	}
	assertSameIndex(t, idx, b)
	byTag, err := remote.Head(tag, remote.WithContext(ctx))
	if err != nil {
		t.Fatal(err)
	}
	if byTag.Digest != want {
		t.Errorf("tag resolves to %s, want %s", byTag.Digest, want)
	}
	assertSBOMReferrer(t, ctx, pushed, filepath.Join(out, "hello.spdx.json"))
}

// assertSameIndex compares the pulled index and every image's manifest and
// layers with the built ones, digest by digest.
func assertSameIndex(t *testing.T, got v1.ImageIndex, b *Built) {
	t.Helper()
	gotRaw, err := got.RawManifest()
	if err != nil {
		t.Fatal(err)
	}
	wantRaw, err := b.Index.RawManifest()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(gotRaw, wantRaw) {
		t.Fatalf("pulled index differs:\n%s\n%s", gotRaw, wantRaw)
	}
	for _, img := range b.Images {
		d, err := img.Digest()
		if err != nil {
			t.Fatal(err)
		}
		pulled, err := got.Image(d)
		if err != nil {
			t.Fatal(err)
		}
		assertSameConfig(t, d.String(), pulled, img)
		layers, err := pulled.Layers()
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range layers {
			ld, err := l.Digest()
			if err != nil {
				t.Fatal(err)
			}
			rc, err := l.Compressed()
			if err != nil {
				t.Fatal(err)
			}
			h, _, err := v1.SHA256(rc)
			rc.Close()
			if err != nil || h != ld {
				t.Errorf("layer %s pulled as %s (%v)", ld, h, err)
			}
		}
	}
}

func assertSBOMReferrer(t *testing.T, ctx context.Context, pushed Pushed, sbomPath string) {
	t.Helper()
	refs, err := remote.Referrers(pushed.Reference, remote.WithContext(ctx))
	if err != nil {
		t.Fatal(err)
	}
	m, err := refs.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	// The descriptor's artifactType is not checked: the in-process
	// registry's referrers API reports the config's media type there.
	if len(m.Manifests) != 1 || m.Manifests[0].Digest != pushed.SBOM {
		t.Fatalf("referrers %+v, want the SBOM %s", m.Manifests, pushed.SBOM)
	}
	art, err := remote.Image(pushed.Reference.Context().Digest(pushed.SBOM.String()), remote.WithContext(ctx))
	if err != nil {
		t.Fatal(err)
	}
	am, err := art.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	if am.ArtifactType != SBOMMediaType || am.Subject == nil || am.Subject.Digest.String() != pushed.Reference.DigestStr() {
		t.Errorf("SBOM manifest artifactType %q subject %+v, want %s of %s", am.ArtifactType, am.Subject, SBOMMediaType, pushed.Reference.DigestStr())
	}
	layers, err := art.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("SBOM artifact layers %d (%v)", len(layers), err)
	}
	rc, err := layers[0].Compressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	got, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(sbomPath)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Error("pulled SBOM differs from the file")
	}
}

package image

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

func TestBuildTwiceGivesTheSameBytes(t *testing.T) {
	first, firstOut := builtHello(t)
	second, secondOut := buildAndWrite(t, t.TempDir())
	d1, err := first.Index.Digest()
	if err != nil {
		t.Fatal(err)
	}
	d2, err := second.Index.Digest()
	if err != nil {
		t.Fatal(err)
	}
	if d1 != d2 {
		t.Fatalf("index digests differ: %s and %s", d1, d2)
	}
	a, b := fileSums(t, firstOut), fileSums(t, secondOut)
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("outputs differ:\n%v\n%v", a, b)
	}
	for _, want := range []string{"hello.oci.tar", "hello-linux-amd64.tar", "hello-linux-arm64.tar", "hello.spdx.json", "hello.digest", "oci/index.json"} {
		if _, ok := a[want]; !ok {
			t.Errorf("outputs lack %s: %v", want, a)
		}
	}
}

// fileSums maps each file under dir to its SHA-256.
func fileSums(t *testing.T, dir string) map[string]string {
	t.Helper()
	sums := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		body, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		sum := sha256.Sum256(body)
		sums[filepath.ToSlash(rel)] = hex.EncodeToString(sum[:])
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return sums
}

func TestIndexListsBothPlatforms(t *testing.T) {
	b, _ := builtHello(t)
	m, err := b.Index.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if m.MediaType != types.OCIImageIndex {
		t.Errorf("index media type %s, want %s", m.MediaType, types.OCIImageIndex)
	}
	var got []string
	for _, d := range m.Manifests {
		if d.Platform == nil {
			t.Fatalf("manifest %s has no platform", d.Digest)
		}
		if d.MediaType != types.OCIManifestSchema1 {
			t.Errorf("manifest %s media type %s", d.Digest, d.MediaType)
		}
		got = append(got, d.Platform.String())
	}
	if want := []string{"linux/amd64", "linux/arm64/v8"}; !reflect.DeepEqual(got, want) {
		t.Errorf("platforms %v, want %v", got, want)
	}
	if m.Annotations[AnnotationRevision] != testMeta.Revision || m.Annotations[AnnotationCreated] != "2026-11-02T03:04:05Z" {
		t.Errorf("index annotations %v", m.Annotations)
	}
}

func TestImageConfigRunsTheBinaryAsNonroot(t *testing.T) {
	b, _ := builtHello(t)
	for i, img := range b.Images {
		cfg, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		p := b.Binaries[i].Platform
		if cfg.OS != p.OS || cfg.Architecture != p.Architecture || cfg.Variant != p.Variant {
			t.Errorf("%s: config platform %s/%s/%s", p, cfg.OS, cfg.Architecture, cfg.Variant)
		}
		if cfg.Config.User != "65532:65532" {
			t.Errorf("%s: user %q, want 65532:65532", p, cfg.Config.User)
		}
		if !reflect.DeepEqual(cfg.Config.Entrypoint, []string{"/hello"}) || len(cfg.Config.Cmd) != 0 {
			t.Errorf("%s: entrypoint %q cmd %q, want [/hello] and no cmd", p, cfg.Config.Entrypoint, cfg.Config.Cmd)
		}
		want := map[string]string{
			AnnotationSource:   testMeta.Source,
			AnnotationRevision: testMeta.Revision,
			AnnotationVersion:  testMeta.Version,
			AnnotationCreated:  "2026-11-02T03:04:05Z",
			AnnotationTitle:    hello.Repository,
		}
		if !reflect.DeepEqual(cfg.Config.Labels, want) {
			t.Errorf("%s: labels %v, want %v", p, cfg.Config.Labels, want)
		}
		if !cfg.Created.Time.Equal(testMeta.Created) {
			t.Errorf("%s: created %s, want the commit time %s", p, cfg.Created.Time, testMeta.Created)
		}
		for _, h := range cfg.History {
			if !h.Created.Time.Equal(testMeta.Created) {
				t.Errorf("%s: history %q created %s", p, h.CreatedBy, h.Created.Time)
			}
		}
	}
}

// layerFile is one tar entry of a layer.
type layerFile struct {
	hdr  *tar.Header
	body []byte
}

func layerFiles(t *testing.T, l v1.Layer) []layerFile {
	t.Helper()
	rc, err := l.Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	var files []layerFile
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files
		}
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, layerFile{h, body})
	}
}

func fileNames(files []layerFile) []string {
	names := make([]string, len(files))
	for i, f := range files {
		names[i] = f.hdr.Name
	}
	return names
}

func TestBaseLayerIsDistrolessStaticNonroot(t *testing.T) {
	b, _ := builtHello(t)
	layers, err := b.Images[0].Layers()
	if err != nil {
		t.Fatal(err)
	}
	if len(layers) != 2 {
		t.Fatalf("%d layers, want the base and the binary", len(layers))
	}
	files := layerFiles(t, layers[0])
	type meta struct {
		mode     int64
		uid, gid int
	}
	want := map[string]meta{
		"etc/":                              {0o755, 0, 0},
		"etc/group":                         {0o644, 0, 0},
		"etc/passwd":                        {0o644, 0, 0},
		"etc/ssl/":                          {0o755, 0, 0},
		"etc/ssl/certs/":                    {0o755, 0, 0},
		"etc/ssl/certs/ca-certificates.crt": {0o644, 0, 0},
		"home/":                             {0o755, 0, 0},
		"home/nonroot/":                     {0o700, 65532, 65532},
		"tmp/":                              {0o1777, 0, 0},
	}
	got := map[string]meta{}
	var names []string
	bodies := map[string]string{}
	for _, f := range files {
		got[f.hdr.Name] = meta{f.hdr.Mode, f.hdr.Uid, f.hdr.Gid}
		names = append(names, f.hdr.Name)
		bodies[f.hdr.Name] = string(f.body)
		if !f.hdr.ModTime.Equal(testMeta.Created) {
			t.Errorf("%s: mtime %s, want the commit time", f.hdr.Name, f.hdr.ModTime)
		}
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("base layer\n got %v\nwant %v", got, want)
	}
	if !slices.IsSorted(names) {
		t.Errorf("entries not sorted: %v", names)
	}
	if !strings.Contains(bodies["etc/passwd"], "\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n") ||
		!strings.HasPrefix(bodies["etc/passwd"], "root:x:0:0:") {
		t.Errorf("/etc/passwd:\n%s", bodies["etc/passwd"])
	}
	if !strings.Contains(bodies["etc/group"], "nonroot:x:65532:") {
		t.Errorf("/etc/group:\n%s", bodies["etc/group"])
	}
	if bodies["etc/ssl/certs/ca-certificates.crt"] != string(testBase.CACerts) {
		t.Errorf("CA bundle is not the base's: %q", bodies["etc/ssl/certs/ca-certificates.crt"])
	}
}

func TestBinaryLayerHoldsTheStaticBinaryForItsPlatform(t *testing.T) {
	b, _ := builtHello(t)
	machines := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}
	for i, img := range b.Images {
		layers, err := img.Layers()
		if err != nil {
			t.Fatal(err)
		}
		files := layerFiles(t, layers[len(layers)-1])
		if len(files) != 1 || files[0].hdr.Name != "hello" || files[0].hdr.Mode != 0o755 || files[0].hdr.Uid != 0 {
			t.Fatalf("binary layer holds %q, want hello alone, mode 0755, owned by root", fileNames(files))
		}
		f, err := elf.NewFile(bytes.NewReader(files[0].body))
		if err != nil {
			t.Fatal(err)
		}
		arch := b.Binaries[i].Platform.Architecture
		if f.Machine != machines[arch] {
			t.Errorf("%s binary is for %s", arch, f.Machine)
		}
		for _, p := range f.Progs {
			if p.Type == elf.PT_INTERP {
				t.Errorf("%s binary asks for a dynamic loader: not static", arch)
			}
		}
		if b.Binaries[i].Info.Main.Path != "github.com/ragcanary/ragcanary" {
			t.Errorf("build info main module %q", b.Binaries[i].Info.Main.Path)
		}
		for _, s := range b.Binaries[i].Info.Settings {
			if s.Key == "CGO_ENABLED" && s.Value != "0" || s.Key == "-trimpath" && s.Value != "true" {
				t.Errorf("build setting %s=%s", s.Key, s.Value)
			}
		}
	}
}

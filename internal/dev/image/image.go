// Package image builds the project's container images without a Docker
// engine and without downloading a base: static Go binaries on a base
// assembled here in the layout of distroless static (nonroot), as a
// multi-platform OCI index that is byte-for-byte the same for the same
// commit.
package image

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// OCI annotation and label keys.
const (
	AnnotationSource   = "org.opencontainers.image.source"
	AnnotationRevision = "org.opencontainers.image.revision"
	AnnotationVersion  = "org.opencontainers.image.version"
	AnnotationCreated  = "org.opencontainers.image.created"
	AnnotationTitle    = "org.opencontainers.image.title"
	AnnotationRefName  = "org.opencontainers.image.ref.name"
	// AnnotationContainerdName is the name `ctr images import` gives an
	// image of an OCI archive.
	AnnotationContainerdName = "io.containerd.image.name"
)

// Platforms are the platforms every image is built for.
var Platforms = []v1.Platform{
	{OS: "linux", Architecture: "amd64"},
	{OS: "linux", Architecture: "arm64", Variant: "v8"},
}

// Spec is one image: a Go main package as the only program on the base.
type Spec struct {
	// Name names the output files (bin/images/<Name>.oci.tar, ...).
	Name string
	// Package is the main package, relative to the source directory.
	Package string
	// Binary is the program's absolute path in the image, also the
	// entrypoint.
	Binary string
	// Repository is the image's name without a tag, as in the chart's
	// image.repository.
	Repository string
}

// Meta describes the source an image was built from. Created is the commit
// time, never the build time, so rebuilding a commit gives the same digest.
type Meta struct {
	Source   string
	Revision string
	Version  string
	Created  time.Time
}

// labels are the OCI labels of the image config, also the manifests' and
// the index's annotations.
func (m Meta) labels(title string) map[string]string {
	return map[string]string{
		AnnotationSource:   m.Source,
		AnnotationRevision: m.Revision,
		AnnotationVersion:  m.Version,
		AnnotationCreated:  m.Created.UTC().Format(time.RFC3339),
		AnnotationTitle:    title,
	}
}

// Reference is the tagged name, e.g. ragcanary/manager:0.1.0.
func (s Spec) Reference(m Meta) string { return s.Repository + ":" + m.Version }

// Inputs are what every image of a build shares.
type Inputs struct {
	// SourceDir holds go.mod; Spec.Package is relative to it.
	SourceDir string
	// WorkDir receives the binaries.
	WorkDir   string
	Meta      Meta
	Base      Base
	Platforms []v1.Platform
	LDFlags   string
}

// Built is one image: its index, the image per platform and the binaries
// they hold.
type Built struct {
	Spec     Spec
	Meta     Meta
	Index    v1.ImageIndex
	Images   []v1.Image
	Binaries []Binary
	Base     Base
}

// Build cross-compiles spec for every platform and assembles its index.
func Build(ctx context.Context, in Inputs, spec Spec) (*Built, error) {
	if err := in.validate(); err != nil {
		return nil, err
	}
	baseLayer, err := in.baseLayer()
	if err != nil {
		return nil, err
	}
	b := &Built{Spec: spec, Meta: in.Meta, Base: in.Base}
	for _, p := range in.Platforms {
		out := filepath.Join(in.WorkDir, spec.Name+"-"+platformSlug(p), strings.TrimPrefix(spec.Binary, "/"))
		bin, err := goBuild(ctx, in.SourceDir, spec.Package, p, in.LDFlags, out)
		if err != nil {
			return nil, err
		}
		img, err := platformImage(baseLayer, bin, spec, in.Meta)
		if err != nil {
			return nil, err
		}
		b.Binaries = append(b.Binaries, bin)
		b.Images = append(b.Images, img)
	}
	b.Index = index(b.Images, in.Platforms, spec, in.Meta)
	return b, nil
}

func (in Inputs) validate() error {
	switch {
	case in.SourceDir == "" || in.WorkDir == "":
		return fmt.Errorf("image build needs a source and a work directory")
	case len(in.Platforms) == 0:
		return fmt.Errorf("image build needs at least one platform")
	case in.Meta.Created.IsZero() || in.Meta.Revision == "" || in.Meta.Version == "":
		return fmt.Errorf("image build needs the commit time, revision and version")
	}
	return nil
}

func (in Inputs) baseLayer() (v1.Layer, error) {
	entries, err := in.Base.entries()
	if err != nil {
		return nil, err
	}
	return newLayer(entries, in.Meta.Created)
}

// platformSlug is linux-amd64 or linux-arm64, for file names.
func platformSlug(p v1.Platform) string { return p.OS + "-" + p.Architecture }

// Env is distroless static's environment: the usual PATH, and the CA bundle
// named for programs that do not look in the Debian path.
var Env = []string{
	"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
	"SSL_CERT_FILE=" + CACertsPath,
}

// User is the image's user, as the Dockerfile's USER.
var User = fmt.Sprintf("%d:%d", NonrootUID, NonrootGID)

// platformImage is the base layer and a layer holding the binary.
func platformImage(base v1.Layer, bin Binary, spec Spec, m Meta) (v1.Image, error) {
	app, err := appLayer(bin, spec, m)
	if err != nil {
		return nil, err
	}
	created := v1.Time{Time: m.Created.UTC()}
	cfg := &v1.ConfigFile{
		Architecture: bin.Platform.Architecture,
		OS:           bin.Platform.OS,
		Variant:      bin.Platform.Variant,
		Created:      created,
		Config: v1.Config{
			User:       User,
			Entrypoint: []string{spec.Binary},
			Env:        Env,
			WorkingDir: "/",
			Labels:     m.labels(spec.Repository),
		},
		RootFS: v1.RootFS{Type: "layers"},
	}
	img, err := mutate.ConfigFile(mutate.MediaType(empty.Image, types.OCIManifestSchema1), cfg)
	if err != nil {
		return nil, err
	}
	img, err = mutate.Append(img,
		mutate.Addendum{Layer: base, History: v1.History{Created: created, CreatedBy: "base: passwd, group, /tmp, /home/nonroot, " + CACertsPackage}},
		mutate.Addendum{Layer: app, History: v1.History{Created: created, CreatedBy: "go build -trimpath " + spec.Package}})
	if err != nil {
		return nil, err
	}
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	return mutate.Annotations(img, m.labels(spec.Repository)).(v1.Image), nil
}

func appLayer(bin Binary, spec Spec, m Meta) (v1.Layer, error) {
	body, err := os.ReadFile(bin.Path)
	if err != nil {
		return nil, err
	}
	return newLayer([]entry{file(strings.TrimPrefix(spec.Binary, "/"), 0o755, body)}, m.Created)
}

// index lists the images by platform.
func index(images []v1.Image, platforms []v1.Platform, spec Spec, m Meta) v1.ImageIndex {
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for i, img := range images {
		p := platforms[i]
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{
			Add:        img,
			Descriptor: v1.Descriptor{Platform: &p},
		})
	}
	return mutate.Annotations(idx, m.labels(spec.Repository)).(v1.ImageIndex)
}

// Manager and RagTarget are the images make image builds. The manager's
// binary path, user and entrypoint match the Dockerfile's final stage.
var (
	Manager   = Spec{Name: "manager", Package: "./cmd/manager", Binary: "/manager", Repository: "ragcanary/manager"}
	RagTarget = Spec{Name: "ragtarget", Package: "./cmd/ragtarget", Binary: "/ragtarget", Repository: "ragcanary/ragtarget"}
	// Pause is the one-node cluster's sandbox image (make test-cluster):
	// its registry host is never contacted, the image is always imported.
	Pause = Spec{Name: "pause", Package: "./hack/cluster/pause", Binary: "/pause", Repository: "ragcanary.local/pause"}
)

// Specs are the images hack/image can build, by name.
var Specs = map[string]Spec{Manager.Name: Manager, RagTarget.Name: RagTarget, Pause.Name: Pause}

// ParsePlatforms reads "linux/amd64,linux/arm64/v8"; "" is Platforms.
func ParsePlatforms(s string) ([]v1.Platform, error) {
	if s == "" {
		return Platforms, nil
	}
	var out []v1.Platform
	for _, f := range strings.Split(s, ",") {
		p, err := v1.ParsePlatform(f)
		if err != nil {
			return nil, fmt.Errorf("platform %q: %w", f, err)
		}
		if p.OS != "linux" || (p.Architecture != "amd64" && p.Architecture != "arm64") {
			return nil, fmt.Errorf("platform %q: only linux/amd64 and linux/arm64 are built", f)
		}
		if p.Architecture == "arm64" && p.Variant == "" {
			p.Variant = "v8"
		}
		out = append(out, *p)
	}
	return out, nil
}

package image

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/partial"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Pushed is where an index went.
type Pushed struct {
	// Reference is repository@sha256:..., what the chart's image values
	// name.
	Reference name.Digest
	// SBOM is the digest of the SBOM's referrer manifest.
	SBOM v1.Hash
}

// Push sends the index named imageName in outDir (as Write left it) to ref, with both platform images, then the SBOM as an OCI
// referrer of the index. Registries without the referrers API get the
// fallback tag sha256-<digest> that remote maintains.
func Push(ctx context.Context, outDir, imageName string, ref name.Tag, opts ...remote.Option) (Pushed, error) {
	idx, err := LayoutIndex(outDir, imageName)
	if err != nil {
		return Pushed{}, err
	}
	if err := fromACommit(idx); err != nil {
		return Pushed{}, err
	}
	opts = append([]remote.Option{remote.WithContext(ctx), remote.WithAuthFromKeychain(authn.DefaultKeychain)}, opts...)
	if err := remote.WriteIndex(ref, idx, opts...); err != nil {
		return Pushed{}, fmt.Errorf("push %s: %w", ref, err)
	}
	sbom, err := os.ReadFile(filepath.Join(outDir, imageName+".spdx.json"))
	if err != nil {
		return Pushed{}, err
	}
	sbomDigest, err := pushReferrer(ref.Context(), idx, sbom, imageName+".spdx.json", opts)
	if err != nil {
		return Pushed{}, err
	}
	digest, err := idx.Digest()
	if err != nil {
		return Pushed{}, err
	}
	return Pushed{Reference: ref.Context().Digest(digest.String()), SBOM: sbomDigest}, nil
}

// fromACommit refuses an index built from a work tree that differed from
// its commit (make test-cluster writes one to bin/images): a published image
// must be one anyone can rebuild from its revision.
func fromACommit(idx v1.ImageIndex) error {
	m, err := idx.IndexManifest()
	if err != nil {
		return err
	}
	if rev := m.Annotations[AnnotationRevision]; strings.HasSuffix(rev, DirtySuffix) {
		return fmt.Errorf("the image was built from uncommitted changes (revision %s), as make test-cluster builds; run make image to build a commit", rev)
	}
	return nil
}

// LayoutIndex is the index named imageName in outDir's layout, found by the
// digest Write recorded beside it.
func LayoutIndex(outDir, imageName string) (v1.ImageIndex, error) {
	raw, err := os.ReadFile(filepath.Join(outDir, imageName+".digest"))
	if err != nil {
		return nil, fmt.Errorf("no built image %s (run make image): %w", imageName, err)
	}
	digest, err := v1.NewHash(strings.TrimSpace(string(raw)))
	if err != nil {
		return nil, err
	}
	p, err := layout.FromPath(filepath.Join(outDir, LayoutDir))
	if err != nil {
		return nil, err
	}
	root, err := p.ImageIndex()
	if err != nil {
		return nil, err
	}
	return root.ImageIndex(digest)
}

// emptyConfig is the OCI empty descriptor's content, the config of an
// artifact that has none.
var emptyConfig = []byte("{}")

// pushReferrer uploads body as the only layer of an artifact manifest whose
// subject is idx.
func pushReferrer(repo name.Repository, idx v1.ImageIndex, body []byte, title string, opts []remote.Option) (v1.Hash, error) {
	subject, err := partial.Descriptor(idx)
	if err != nil {
		return v1.Hash{}, err
	}
	config := static.NewLayer(emptyConfig, types.OCIEmptyJSON)
	layer := static.NewLayer(body, types.MediaType(SBOMMediaType))
	for _, l := range []v1.Layer{config, layer} {
		if err := remote.WriteLayer(repo, l, opts...); err != nil {
			return v1.Hash{}, fmt.Errorf("push SBOM blob: %w", err)
		}
	}
	m, err := referrerManifest(*subject, config, layer, title)
	if err != nil {
		return v1.Hash{}, err
	}
	digest, _, err := v1.SHA256(bytes.NewReader(m))
	if err != nil {
		return v1.Hash{}, err
	}
	if err := remote.Put(repo.Digest(digest.String()), rawManifest(m), opts...); err != nil {
		return v1.Hash{}, fmt.Errorf("push SBOM referrer: %w", err)
	}
	return digest, nil
}

func referrerManifest(subject v1.Descriptor, config, layer v1.Layer, title string) ([]byte, error) {
	cfg, err := partial.Descriptor(config)
	if err != nil {
		return nil, err
	}
	cfg.Data = emptyConfig
	l, err := partial.Descriptor(layer)
	if err != nil {
		return nil, err
	}
	l.Annotations = map[string]string{AnnotationTitle: title}
	return json.Marshal(v1.Manifest{
		SchemaVersion: 2,
		MediaType:     types.OCIManifestSchema1,
		ArtifactType:  SBOMMediaType,
		Config:        *cfg,
		Layers:        []v1.Descriptor{*l},
		Subject:       &v1.Descriptor{MediaType: subject.MediaType, Digest: subject.Digest, Size: subject.Size},
	})
}

// rawManifest is a manifest already serialized, for remote.Put.
type rawManifest []byte

func (m rawManifest) RawManifest() ([]byte, error) { return m, nil }

func (m rawManifest) MediaType() (types.MediaType, error) { return types.OCIManifestSchema1, nil }

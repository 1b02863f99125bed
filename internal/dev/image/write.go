package image

import (
	"archive/tar"
	"bufio"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// LayoutDir is the OCI image layout holding every image, under the output
// directory.
const LayoutDir = "oci"

// RefName is the image's org.opencontainers.image.ref.name in a layout:
// manager-0.1.0. Layout tools (skopeo's oci:, oras, regctl) accept only
// tag characters there, so it is not the full reference.
func (b *Built) RefName() string { return b.Spec.Name + "-" + b.Meta.Version }

// annotations are the index's descriptor annotations in a layout.
func (b *Built) annotations() (map[string]string, error) {
	full, err := containerdName(b.Spec.Reference(b.Meta))
	if err != nil {
		return nil, err
	}
	return map[string]string{
		AnnotationRefName:        b.RefName(),
		AnnotationContainerdName: full,
	}, nil
}

// containerdName is ref as containerd names images: the registry always
// written, Docker Hub as docker.io (ggcr says index.docker.io).
func containerdName(ref string) (string, error) {
	tag, err := name.NewTag(ref)
	if err != nil {
		return "", err
	}
	registry := tag.RegistryStr()
	if registry == name.DefaultRegistry {
		registry = "docker.io"
	}
	return registry + "/" + tag.RepositoryStr() + ":" + tag.TagStr(), nil
}

// Write replaces outDir with the images' outputs:
//
//	oci/                       OCI image layout with every index
//	<name>.oci.tar             OCI archive of that index alone (all platforms)
//	<name>-<os>-<arch>.tar     docker archive of one platform's image
//	<name>.spdx.json           SPDX 2.3 SBOM
//	<name>.digest              the index digest, sha256:...
//
// The docker archive format (what `docker load` and `ctr images import`
// read) holds one image per platform and no index; the OCI archive keeps
// the multi-platform index.
func Write(outDir string, built []*Built) error {
	if err := os.RemoveAll(outDir); err != nil {
		return err
	}
	if err := writeLayout(filepath.Join(outDir, LayoutDir), built); err != nil {
		return err
	}
	for _, b := range built {
		if err := b.writeFiles(outDir); err != nil {
			return fmt.Errorf("%s: %w", b.Spec.Name, err)
		}
	}
	return nil
}

func writeLayout(dir string, built []*Built) error {
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return err
	}
	for _, b := range built {
		annotations, err := b.annotations()
		if err != nil {
			return err
		}
		if err := p.AppendIndex(b.Index, layout.WithAnnotations(annotations)); err != nil {
			return fmt.Errorf("layout %s: %w", b.Spec.Name, err)
		}
	}
	return nil
}

func (b *Built) writeFiles(outDir string) error {
	if err := b.writeOCIArchive(filepath.Join(outDir, b.Spec.Name+".oci.tar")); err != nil {
		return err
	}
	if err := b.writeDockerArchives(outDir); err != nil {
		return err
	}
	sbom, err := b.SBOM()
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(outDir, b.Spec.Name+".spdx.json"), append(sbom, '\n'), 0o644); err != nil {
		return err
	}
	digest, err := b.Index.Digest()
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(outDir, b.Spec.Name+".digest"), []byte(digest.String()+"\n"), 0o644)
}

func (b *Built) writeDockerArchives(outDir string) error {
	tag, err := name.NewTag(b.Spec.Reference(b.Meta))
	if err != nil {
		return err
	}
	for i, img := range b.Images {
		out := filepath.Join(outDir, b.Spec.Name+"-"+platformSlug(b.Binaries[i].Platform)+".tar")
		if err := tarball.WriteToFile(out, tag, img); err != nil {
			return err
		}
	}
	return nil
}

// writeOCIArchive lays the index out alone in a scratch layout and tars it.
func (b *Built) writeOCIArchive(out string) error {
	scratch, err := os.MkdirTemp(filepath.Dir(out), ".layout-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(scratch)
	if err := writeLayout(scratch, []*Built{b}); err != nil {
		return err
	}
	return tarDir(scratch, out, b.Meta)
}

// tarDir archives dir's files sorted by path, with the owner, modes and
// times fixed, so the archive depends only on the files' content.
func tarDir(root, out string, m Meta) error {
	var names []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || path == root {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if d.IsDir() {
			rel += "/"
		}
		names = append(names, filepath.ToSlash(rel))
		return err
	})
	if err != nil {
		return err
	}
	sort.Strings(names)
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	defer f.Close()
	w := bufio.NewWriter(f)
	tw := tar.NewWriter(w)
	for _, n := range names {
		if err := tarFile(tw, root, n, m); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	if err := w.Flush(); err != nil {
		return err
	}
	return f.Close()
}

func tarFile(tw *tar.Writer, root, rel string, m Meta) error {
	if rel[len(rel)-1] == '/' {
		return writeEntry(tw, dir(rel, 0o755, 0, 0), m.Created)
	}
	body, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
	if err != nil {
		return err
	}
	return writeEntry(tw, file(rel, 0o644, body), m.Created)
}

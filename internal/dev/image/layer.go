package image

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// entry is one file or directory of a layer. Owner and mode are set by the
// builder, never read from the machine, so a layer depends only on content.
type entry struct {
	name string // without a leading slash; directories end in "/"
	mode int64
	uid  int
	gid  int
	body []byte
}

func dir(name string, mode int64, uid, gid int) entry {
	return entry{name: strings.TrimSuffix(name, "/") + "/", mode: mode, uid: uid, gid: gid}
}

func file(name string, mode int64, body []byte) entry {
	return entry{name: name, mode: mode, body: body}
}

// layerTar writes entries sorted by name with every timestamp set to mtime,
// so the same entries always give the same bytes.
func layerTar(entries []entry, mtime time.Time) ([]byte, error) {
	sorted := append([]entry(nil), entries...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].name < sorted[j].name })
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for i, e := range sorted {
		if i > 0 && sorted[i-1].name == e.name {
			return nil, fmt.Errorf("layer has %s twice", e.name)
		}
		if err := writeEntry(tw, e, mtime); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func writeEntry(tw *tar.Writer, e entry, mtime time.Time) error {
	h := &tar.Header{
		Name:    e.name,
		Mode:    e.mode,
		Uid:     e.uid,
		Gid:     e.gid,
		ModTime: mtime,
		Format:  tar.FormatPAX,
	}
	if strings.HasSuffix(e.name, "/") {
		h.Typeflag = tar.TypeDir
	} else {
		h.Typeflag = tar.TypeReg
		h.Size = int64(len(e.body))
	}
	if err := tw.WriteHeader(h); err != nil {
		return fmt.Errorf("tar header %s: %w", e.name, err)
	}
	_, err := tw.Write(e.body)
	return err
}

// compressionLevel is fixed: the compressed bytes, and so the layer digest,
// depend on it.
const compressionLevel = gzip.BestCompression

// newLayer is an OCI gzip layer of the entries.
func newLayer(entries []entry, mtime time.Time) (v1.Layer, error) {
	raw, err := layerTar(entries, mtime)
	if err != nil {
		return nil, err
	}
	open := func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(raw)), nil }
	return tarball.LayerFromOpener(open,
		tarball.WithCompressionLevel(compressionLevel),
		tarball.WithMediaType(types.OCILayer),
		tarball.WithCompressedCaching)
}

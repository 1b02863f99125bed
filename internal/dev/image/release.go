package image

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// Release is one make image run.
type Release struct {
	// RepoDir is the git repository; Revision is built from it.
	RepoDir  string
	Revision string
	// OutDir is replaced with the outputs (see Write).
	OutDir string
	// Version overrides the chart's appVersion.
	Version string
	Source  string
	Specs   []Spec
	// Platforms default to Platforms (amd64 and arm64).
	Platforms []v1.Platform
}

// Run exports the commit, builds every spec for every platform on the local
// base and writes the outputs.
func (r Release) Run(ctx context.Context) ([]*Built, error) {
	commit, err := ResolveCommit(ctx, r.RepoDir, r.Revision)
	if err != nil {
		return nil, err
	}
	// The binaries are built from the exported tree, so every path given
	// relative to where we were called must be made absolute first.
	if r.OutDir, err = filepath.Abs(r.OutDir); err != nil {
		return nil, err
	}
	scratch, err := os.MkdirTemp(filepath.Dir(filepath.Clean(r.OutDir)), ".image-build-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(scratch)
	src := filepath.Join(scratch, "src")
	if err := ExportCommit(ctx, r.RepoDir, commit.Revision, src); err != nil {
		return nil, err
	}
	in, err := r.inputs(commit, src, filepath.Join(scratch, "bin"))
	if err != nil {
		return nil, err
	}
	var built []*Built
	for _, spec := range r.Specs {
		b, err := Build(ctx, in, spec)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", spec.Name, err)
		}
		built = append(built, b)
	}
	return built, Write(r.OutDir, built)
}

func (r Release) inputs(c Commit, src, work string) (Inputs, error) {
	version := r.Version
	if version == "" {
		v, err := ChartAppVersion(src)
		if err != nil {
			return Inputs{}, err
		}
		version = v
	}
	base, err := LocalBase()
	if err != nil {
		return Inputs{}, err
	}
	return Inputs{
		SourceDir: src,
		WorkDir:   work,
		Meta:      Meta{Source: r.Source, Revision: c.Revision, Version: version, Created: c.Time},
		Base:      base,
		Platforms: r.platforms(),
		LDFlags:   LDFlags,
	}, nil
}

func (r Release) platforms() []v1.Platform {
	if len(r.Platforms) == 0 {
		return Platforms
	}
	return r.Platforms
}

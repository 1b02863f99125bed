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
	// RepoDir is the git repository; Revision is built from it, or its
	// work tree, uncommitted edits included, when WorkTree is set.
	RepoDir  string
	Revision string
	WorkTree bool
	// OutDir is replaced with the outputs (see Write).
	OutDir string
	// Version overrides the chart's appVersion.
	Version string
	Source  string
	Specs   []Spec
	// Platforms default to Platforms (amd64 and arm64).
	Platforms []v1.Platform
}

// Run exports the commit (or the work tree), builds every spec for every
// platform on the local base and writes the outputs.
func (r Release) Run(ctx context.Context) ([]*Built, error) {
	// The binaries are built from the exported tree, so every path given
	// relative to where we were called must be made absolute first.
	var err error
	if r.OutDir, err = filepath.Abs(r.OutDir); err != nil {
		return nil, err
	}
	scratch, err := os.MkdirTemp(filepath.Dir(filepath.Clean(r.OutDir)), ".image-build-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(scratch)
	commit, err := r.resolve(ctx, scratch)
	if err != nil {
		return nil, err
	}
	src := filepath.Join(scratch, "src")
	if err := ExportCommit(ctx, r.RepoDir, commit.Tree, src); err != nil {
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

// resolve picks the source: the work tree, or the commit named.
func (r Release) resolve(ctx context.Context, scratch string) (Commit, error) {
	if r.WorkTree {
		return ResolveWorkTree(ctx, r.RepoDir, scratch)
	}
	return ResolveCommit(ctx, r.RepoDir, r.Revision)
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

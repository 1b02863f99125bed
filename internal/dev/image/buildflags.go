package image

import (
	"flag"
	"fmt"
	"strings"
)

// ParseBuild reads hack/image build's flags into a Release. It lives here,
// not in the command, so a test can read the Makefile's image builds the way
// the command does and check which source each one selects.
func ParseBuild(args []string) (Release, error) {
	fs := flag.NewFlagSet("build", flag.ContinueOnError)
	r := Release{RepoDir: "."}
	fs.StringVar(&r.OutDir, "out", "bin/images", "Output directory, replaced on every build.")
	fs.StringVar(&r.Revision, "rev", "HEAD", "Commit to build (its tree, not the work tree's edits).")
	fs.BoolVar(&r.WorkTree, "worktree", false, "Build the work tree, uncommitted edits and untracked files included, instead of --rev (make test-cluster). Not reproducible; make image-push refuses it.")
	fs.StringVar(&r.Version, "version", "", "Image version and tag (default: the chart's appVersion).")
	fs.StringVar(&r.Source, "source", "https://github.com/ragcanary/ragcanary", "org.opencontainers.image.source.")
	names := fs.String("images", "manager,ragtarget", "Images to build: manager, ragtarget, pause (the one-node cluster's sandbox).")
	platforms := fs.String("platforms", "", "Platforms (default linux/amd64,linux/arm64).")
	if err := fs.Parse(args); err != nil {
		return Release{}, err
	}
	specs, err := parseSpecs(*names)
	if err != nil {
		return Release{}, err
	}
	r.Specs = specs
	if r.Platforms, err = ParsePlatforms(*platforms); err != nil {
		return Release{}, err
	}
	return r, nil
}

// parseSpecs reads "manager,ragtarget".
func parseSpecs(names string) ([]Spec, error) {
	var specs []Spec
	for _, n := range strings.Split(names, ",") {
		spec, ok := Specs[n]
		if !ok {
			return nil, fmt.Errorf("unknown image %q (want manager, ragtarget or pause)", n)
		}
		specs = append(specs, spec)
	}
	return specs, nil
}

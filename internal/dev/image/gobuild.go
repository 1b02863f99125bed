package image

import (
	"bytes"
	"context"
	"debug/buildinfo"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// Binary is one cross-compiled executable and what Go recorded about it.
type Binary struct {
	Platform v1.Platform
	Path     string
	Info     *buildinfo.BuildInfo
}

// LDFlags strip the symbol table and DWARF (as the Dockerfile does) and
// empty the build ID, which would otherwise hash the linker's inputs.
const LDFlags = "-s -w -buildid="

// goBuild cross-compiles pkg (relative to srcDir) for platform into out. The
// environment is pinned so the binary does not depend on the caller's GOFLAGS,
// GOAMD64 or cgo setting; -trimpath drops local paths and -buildvcs=false the
// work tree's state, so the same source gives the same bytes.
func goBuild(ctx context.Context, srcDir, pkg string, platform v1.Platform, ldflags, out string) (Binary, error) {
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return Binary{}, err
	}
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-buildvcs=false",
		"-ldflags", ldflags, "-o", out, pkg)
	cmd.Dir = srcDir
	cmd.Env = buildEnv(platform)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return Binary{}, fmt.Errorf("go build %s for %s: %w\n%s", pkg, platform.String(), err, stderr.String())
	}
	info, err := buildinfo.ReadFile(out)
	if err != nil {
		return Binary{}, fmt.Errorf("build info of %s: %w", out, err)
	}
	return Binary{Platform: platform, Path: out, Info: info}, nil
}

// buildEnv is the caller's environment less every variable that changes
// what go build produces, with those set explicitly.
func buildEnv(p v1.Platform) []string {
	pinned := map[string]string{
		"CGO_ENABLED":  "0",
		"GOOS":         p.OS,
		"GOARCH":       p.Architecture,
		"GOFLAGS":      "",
		"GOAMD64":      "v1",
		"GOARM64":      "v8.0",
		"GOEXPERIMENT": "",
		"GOTOOLCHAIN":  "local",
	}
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if _, ok := pinned[k]; !ok {
			env = append(env, kv)
		}
	}
	for k, v := range pinned {
		env = append(env, k+"="+v)
	}
	return env
}

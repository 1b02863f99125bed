package image

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// The markers the tiny program prints: committed, then edited in the work
// tree without a commit.
const (
	committedMarker = "marker-committed-7c1e"
	editedMarker    = "marker-edited-3f9a"
)

// makeImageBuilds are the hack/image build argument lists make would run for
// target, each evaluated by the shell as make would run it (so $(go env
// GOARCH) is this machine's) with hack/image itself replaced by an echo.
func makeImageBuilds(t *testing.T, target string) [][]string {
	t.Helper()
	root := repoRoot(t)
	dry := exec.Command("make", "-n", "--no-print-directory", "GO=go", target)
	dry.Dir = root
	dry.Env = withoutMakeFlags(os.Environ())
	out, err := dry.CombinedOutput()
	if err != nil {
		t.Fatalf("make -n %s: %v\n%s", target, err, out)
	}
	var builds [][]string
	for _, line := range strings.Split(string(out), "\n") {
		if strings.Contains(line, "./hack/image build") {
			builds = append(builds, echoImageArgs(t, root, line))
		}
	}
	return builds
}

// echoImageArgs runs one recipe line in bash with go run ./hack/image
// printing its arguments instead of building.
func echoImageArgs(t *testing.T, root, line string) []string {
	t.Helper()
	const echo = `go() { if [ "$1 $2" = "run ./hack/image" ]; then shift 2; printf '%s\0' "$@"; else command go "$@"; fi; }; `
	cmd := exec.Command("bash", "-c", echo+line)
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: %v: %s", line, err, stderr.String())
	}
	return strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
}

// withoutMakeFlags drops an outer make's flags (a -n, a jobserver) so the
// dry run sees the Makefile alone.
func withoutMakeFlags(env []string) []string {
	var out []string
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if name != "MAKEFLAGS" && name != "MFLAGS" && name != "MAKELEVEL" && name != "GO" {
			out = append(out, kv)
		}
	}
	return out
}

// tinyEdited is a one-package module committed with committedMarker, then
// edited to print editedMarker from a new, untracked file; an ignored file
// that would break the build shows whether ignored files stay out.
func tinyEdited(t *testing.T) string {
	t.Helper()
	repo, _ := gitRepoWith(t, map[string]string{
		"main.go":    "package main\n\nfunc main() { println(\"" + committedMarker + "\") }\n",
		".gitignore": "/scratch.go\n",
	})
	write(t, repo, "main.go", "package main\n\nfunc main() { println(marker) }\n")
	write(t, repo, "marker.go", "package main\n\nconst marker = \""+editedMarker+"\"\n")
	write(t, repo, "scratch.go", "package main\n\nthis does not compile\n")
	return repo
}

func write(t *testing.T, dir, name, body string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

// binaryOf is the program in b's first platform image.
func binaryOf(t *testing.T, b *Built) []byte {
	t.Helper()
	layers, err := b.Images[0].Layers()
	if err != nil {
		t.Fatal(err)
	}
	files := layerFiles(t, layers[len(layers)-1])
	if len(files) != 1 {
		t.Fatalf("binary layer holds %q", fileNames(files))
	}
	return files[0].body
}

// runOnTiny runs the release r selects, with its images replaced by the tiny
// program and its repository by repo: what is tested is the source it takes.
func runOnTiny(t *testing.T, r Release, repo string) (*Built, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	r.RepoDir, r.OutDir, r.Version = repo, filepath.Join(t.TempDir(), "images"), "1.2.3"
	r.Specs = []Spec{{Name: "tiny", Package: ".", Binary: "/tiny", Repository: "example.test/tiny"}}
	built, err := r.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return built[0], r.OutDir
}

// The cluster stage tests what you changed: every image make test-cluster
// builds, built in a repository holding an uncommitted edit, holds the edit.
// make image stays the build of a commit.
func TestClusterStageBuildsTheWorkTreeAndMakeImageTheCommit(t *testing.T) {
	t.Setenv("SOURCE_DATE_EPOCH", "")
	repo := tinyEdited(t)
	for _, tc := range []struct {
		target string
		// want is the marker the built program must hold, unwant the other.
		want, unwant string
	}{
		{"test-cluster", editedMarker, committedMarker},
		{"image", committedMarker, editedMarker},
	} {
		builds := makeImageBuilds(t, tc.target)
		if len(builds) == 0 {
			t.Fatalf("make %s builds no image with hack/image", tc.target)
		}
		for _, args := range builds {
			r, err := ParseBuild(args[1:])
			if err != nil {
				t.Fatalf("make %s: hack/image %q: %v", tc.target, args, err)
			}
			b, _ := runOnTiny(t, r, repo)
			bin := binaryOf(t, b)
			if !bytes.Contains(bin, []byte(tc.want)) || bytes.Contains(bin, []byte(tc.unwant)) {
				t.Errorf("make %s: hack/image %q built a program without %s (or with %s)", tc.target, args, tc.want, tc.unwant)
			}
		}
	}
}

// A clean work tree builds its commit's image, byte for byte.
func TestCleanWorkTreeBuildsTheCommitsImage(t *testing.T) {
	t.Setenv("SOURCE_DATE_EPOCH", "")
	repo, revision := gitRepo(t)
	host := []v1.Platform{Platforms[0]}
	commit, _ := runOnTiny(t, Release{Revision: "HEAD", Platforms: host}, repo)
	tree, _ := runOnTiny(t, Release{WorkTree: true, Platforms: host}, repo)
	if d1, d2 := digestOf(t, commit.Index), digestOf(t, tree.Index); d1 != d2 {
		t.Errorf("the clean work tree built %s, its commit %s", d2, d1)
	}
	if tree.Meta.Revision != revision {
		t.Errorf("revision %q, want the commit's %s", tree.Meta.Revision, revision)
	}
}

// An edited work tree is built as it stands, is marked dirty, leaves the
// user's index alone and cannot be pushed.
func TestEditedWorkTreeIsBuiltMarkedAndNeverPushed(t *testing.T) {
	t.Setenv("SOURCE_DATE_EPOCH", "")
	repo := tinyEdited(t)
	head, err := git(context.Background(), repo, nil, "rev-parse", "HEAD")
	if err != nil {
		t.Fatal(err)
	}
	before := gitStatus(t, repo)
	b, out := runOnTiny(t, Release{WorkTree: true, Platforms: []v1.Platform{Platforms[0]}}, repo)
	if !bytes.Contains(binaryOf(t, b), []byte(editedMarker)) {
		t.Errorf("the image lacks the uncommitted edit")
	}
	if want := strings.TrimSpace(head) + DirtySuffix; b.Meta.Revision != want {
		t.Errorf("revision %q, want %q", b.Meta.Revision, want)
	}
	if after := gitStatus(t, repo); after != before {
		t.Errorf("git status changed:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	tag, err := name.NewTag(startRegistry(t)+"/team/tiny:v1", name.StrictValidation)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Push(context.Background(), out, "tiny", tag); err == nil || !strings.Contains(err.Error(), "uncommitted") {
		t.Errorf("push of a dirty build: %v, want a refusal", err)
	}
}

func digestOf(t *testing.T, idx v1.ImageIndex) v1.Hash {
	t.Helper()
	d, err := idx.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// gitStatus is the index and work tree as git reports them.
func gitStatus(t *testing.T, repo string) string {
	t.Helper()
	out, err := git(context.Background(), repo, nil, "status", "--porcelain", "--untracked-files=all")
	if err != nil {
		t.Fatal(err)
	}
	return out
}

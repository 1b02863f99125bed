package image

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// gitRepo makes a repository holding a one-file module and commits it at a
// fixed time.
func gitRepo(t *testing.T) (dir, revision string) {
	t.Helper()
	return gitRepoWith(t, map[string]string{"main.go": "package main\n\nfunc main() { println(\"committed\") }\n"})
}

// gitRepoWith makes a repository holding go.mod and files and commits them
// at a fixed time.
func gitRepoWith(t *testing.T, files map[string]string) (dir, revision string) {
	t.Helper()
	dir = t.TempDir()
	write(t, dir, "go.mod", "module example.test/tiny\n\ngo 1.26\n")
	for name, body := range files {
		write(t, dir, name, body)
	}
	for _, args := range [][]string{
		{"init", "-q"},
		{"add", "-A"},
		{"-c", "user.name=t", "-c", "user.email=t@example.test", "commit", "-q", "-m", "tiny"},
	} {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_DATE=2026-11-02T03:04:05Z", "GIT_COMMITTER_DATE=2026-11-02T03:04:05Z")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v: %s", args, err, out)
		}
	}
	out, err := git(context.Background(), dir, nil, "rev-parse", "HEAD")
	if err != nil {
		t.Fatal(err)
	}
	return dir, strings.TrimSpace(out)
}

// A release builds the commit, not the work tree: an uncommitted edit
// changes nothing, and the commit's time and hash are the image's.
func TestReleaseBuildsTheCommitReproducibly(t *testing.T) {
	t.Setenv("SOURCE_DATE_EPOCH", "")
	repo, revision := gitRepo(t)
	tiny := Spec{Name: "tiny", Package: ".", Binary: "/tiny", Repository: "example.test/tiny"}
	release := func(out string) *Built {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		r := Release{RepoDir: repo, Revision: "HEAD", OutDir: out, Version: "1.2.3", Source: "https://example.test/tiny", Specs: []Spec{tiny}}
		built, err := r.Run(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return built[0]
	}
	first := release(filepath.Join(t.TempDir(), "images"))
	if err := os.WriteFile(filepath.Join(repo, "main.go"), []byte("package main\n\nfunc main() { println(\"uncommitted\") }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	second := release(filepath.Join(t.TempDir(), "images"))
	d1, _ := first.Index.Digest()
	d2, _ := second.Index.Digest()
	if d1 != d2 {
		t.Errorf("digests %s and %s: the build depends on the work tree or the clock", d1, d2)
	}
	m, err := first.Index.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if m.Annotations[AnnotationRevision] != revision || m.Annotations[AnnotationCreated] != "2026-11-02T03:04:05Z" {
		t.Errorf("annotations %v, want revision %s created 2026-11-02T03:04:05Z", m.Annotations, revision)
	}
}

func TestSourceDateEpochOverridesTheCommitTime(t *testing.T) {
	repo, _ := gitRepo(t)
	t.Setenv("SOURCE_DATE_EPOCH", "1700000000")
	c, err := ResolveCommit(context.Background(), repo, "HEAD")
	if err != nil {
		t.Fatal(err)
	}
	if !c.Time.Equal(time.Unix(1700000000, 0)) {
		t.Errorf("time %s, want SOURCE_DATE_EPOCH's", c.Time)
	}
}

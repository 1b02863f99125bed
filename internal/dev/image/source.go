package image

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"sigs.k8s.io/yaml"
)

// Commit is the revision to build and its commit time.
type Commit struct {
	// Revision is the image's org.opencontainers.image.revision: a commit
	// hash, with -dirty appended when the work tree was built and differs
	// from it.
	Revision string
	Time     time.Time
	// Tree is what is exported and built: the commit, or the tree object
	// a work tree was recorded as.
	Tree string
}

// ResolveCommit reads rev's full hash and commit time from the repository
// in repoDir. SOURCE_DATE_EPOCH, when set, replaces the commit time, as
// reproducible-builds tools expect.
func ResolveCommit(ctx context.Context, repoDir, rev string) (Commit, error) {
	out, err := git(ctx, repoDir, nil, "log", "-1", "--format=%H %ct", rev, "--")
	if err != nil {
		return Commit{}, err
	}
	hash, epoch, ok := strings.Cut(strings.TrimSpace(out), " ")
	if !ok {
		return Commit{}, fmt.Errorf("git log %s: unexpected output %q", rev, out)
	}
	if env := os.Getenv("SOURCE_DATE_EPOCH"); env != "" {
		epoch = env
	}
	secs, err := strconv.ParseInt(epoch, 10, 64)
	if err != nil {
		return Commit{}, fmt.Errorf("commit time %q: %w", epoch, err)
	}
	return Commit{Revision: hash, Time: time.Unix(secs, 0).UTC(), Tree: hash}, nil
}

// DirtySuffix marks the revision of an image built from a work tree that
// differs from its HEAD, as git describe --dirty does.
const DirtySuffix = "-dirty"

// ResolveWorkTree records the work tree of repoDir as a tree object and
// dates it by HEAD: a clean work tree then builds exactly HEAD's image.
// scratch holds the index used to record it.
func ResolveWorkTree(ctx context.Context, repoDir, scratch string) (Commit, error) {
	head, err := ResolveCommit(ctx, repoDir, "HEAD")
	if err != nil {
		return Commit{}, err
	}
	tree, err := recordWorkTree(ctx, repoDir, filepath.Join(scratch, "worktree.index"))
	if err != nil {
		return Commit{}, err
	}
	headTree, err := git(ctx, repoDir, nil, "rev-parse", "HEAD^{tree}")
	if err != nil {
		return Commit{}, err
	}
	head.Tree = tree
	if strings.TrimSpace(headTree) != tree {
		head.Revision += DirtySuffix
	}
	return head, nil
}

// recordWorkTree writes what git add -A would stage — edits, deletions and
// untracked files that are not ignored — as a tree object. It stages into
// its own index, starting from HEAD, so the repository's index and whatever
// the user staged are left as they were.
func recordWorkTree(ctx context.Context, repoDir, index string) (string, error) {
	env := []string{"GIT_INDEX_FILE=" + index}
	for _, args := range [][]string{{"read-tree", "HEAD"}, {"add", "--all"}} {
		if _, err := git(ctx, repoDir, env, args...); err != nil {
			return "", err
		}
	}
	tree, err := git(ctx, repoDir, env, "write-tree")
	return strings.TrimSpace(tree), err
}

// ExportCommit writes a tree-ish (a commit, or a recorded work tree) into
// dir. A commit's export never holds the work tree's uncommitted edits.
func ExportCommit(ctx context.Context, repoDir, revision, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	archive := exec.CommandContext(ctx, "git", "archive", "--format=tar", revision)
	archive.Dir = repoDir
	extract := exec.CommandContext(ctx, "tar", "-x", "-C", dir)
	pipe, err := archive.StdoutPipe()
	if err != nil {
		return err
	}
	extract.Stdin = pipe
	var archiveErr, extractErr bytes.Buffer
	archive.Stderr, extract.Stderr = &archiveErr, &extractErr
	if err := extract.Start(); err != nil {
		return err
	}
	if err := archive.Run(); err != nil {
		_ = extract.Wait()
		return fmt.Errorf("git archive %s: %w: %s", revision, err, strings.TrimSpace(archiveErr.String()))
	}
	if err := extract.Wait(); err != nil {
		return fmt.Errorf("extract %s: %w: %s", revision, err, strings.TrimSpace(extractErr.String()))
	}
	return nil
}

// ChartAppVersion is the chart's appVersion, the image version the chart
// pulls by default.
func ChartAppVersion(srcDir string) (string, error) {
	raw, err := os.ReadFile(filepath.Join(srcDir, "charts", "ragcanary", "Chart.yaml"))
	if err != nil {
		return "", err
	}
	var chart struct {
		AppVersion string `json:"appVersion"`
	}
	if err := yaml.Unmarshal(raw, &chart); err != nil {
		return "", fmt.Errorf("Chart.yaml: %w", err)
	}
	if chart.AppVersion == "" {
		return "", fmt.Errorf("Chart.yaml has no appVersion")
	}
	return chart.AppVersion, nil
}

// git runs git in dir with env added to ours.
func git(ctx context.Context, dir string, env []string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return string(out), nil
}

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
	Revision string
	Time     time.Time
}

// ResolveCommit reads rev's full hash and commit time from the repository
// in repoDir. SOURCE_DATE_EPOCH, when set, replaces the commit time, as
// reproducible-builds tools expect.
func ResolveCommit(ctx context.Context, repoDir, rev string) (Commit, error) {
	out, err := git(ctx, repoDir, "log", "-1", "--format=%H %ct", rev, "--")
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
	return Commit{Revision: hash, Time: time.Unix(secs, 0).UTC()}, nil
}

// ExportCommit writes the commit's tree into dir, so the image holds what
// was committed, never the work tree's uncommitted edits.
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

func git(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return string(out), nil
}

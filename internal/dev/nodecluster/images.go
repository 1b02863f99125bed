package nodecluster

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os/exec"
	"strings"
)

var errEOF = io.EOF

func bytesReader(b []byte) io.Reader { return bytes.NewReader(b) }

// Ctr runs ctr against the cluster's containerd in the k8s.io namespace
// (the one the CRI plugin, and so the kubelet, sees).
func (c *Cluster) Ctr(ctx context.Context, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, c.opts.BinDir+"/ctr", append([]string{"--address", c.l.containerdSocket, "--namespace", "k8s.io"}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return out, fmt.Errorf("ctr %s: %w: %s", strings.Join(args, " "), err, bytes.TrimSpace(stderr.Bytes()))
	}
	return out, nil
}

// ImportImage loads an image archive (docker or OCI) into the runtime and
// unpacks it for the CRI plugin's snapshotter, so a Pod can start from it
// without a pull.
func (c *Cluster) ImportImage(ctx context.Context, archive string) error {
	_, err := c.Ctr(ctx, "images", "import", "--snapshotter", "overlayfs", "--local", archive)
	return err
}

// pinDigests gives every tagged image a second name by digest
// (repo@sha256:...), as the CRI plugin does for an image it pulls, so a Pod
// naming the image by digest (the chart's image.digest) finds it locally.
func (c *Cluster) pinDigests(ctx context.Context) error {
	out, err := c.Ctr(ctx, "images", "list")
	if err != nil {
		return err
	}
	have := map[string]bool{}
	type named struct{ ref, digest string }
	var tagged []named
	for _, line := range strings.Split(string(out), "\n")[1:] {
		f := strings.Fields(line)
		if len(f) < 3 {
			continue
		}
		have[f[0]] = true
		if !strings.HasPrefix(f[0], "sha256:") && !strings.Contains(f[0], "@") {
			tagged = append(tagged, named{f[0], f[2]})
		}
	}
	for _, t := range tagged {
		repo := t.ref[:strings.LastIndexByte(t.ref, ':')]
		byDigest := repo + "@" + t.digest
		if have[byDigest] {
			continue
		}
		if _, err := c.Ctr(ctx, "images", "tag", t.ref, byDigest); err != nil {
			return err
		}
	}
	return nil
}

// Images are the names of the images in the runtime.
func (c *Cluster) Images(ctx context.Context) ([]string, error) {
	out, err := c.Ctr(ctx, "images", "list", "--quiet")
	if err != nil {
		return nil, err
	}
	return strings.Fields(string(out)), nil
}

// ImageDigest is the digest the runtime holds name at (the index's, for a
// multi-platform image).
func (c *Cluster) ImageDigest(ctx context.Context, name string) (string, error) {
	out, err := c.Ctr(ctx, "images", "list", "name=="+dockerName(name))
	if err != nil {
		return "", err
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) < 2 {
		return "", fmt.Errorf("image %s not in the runtime", name)
	}
	for _, f := range strings.Fields(lines[1]) {
		if strings.HasPrefix(f, "sha256:") {
			return f, nil
		}
	}
	return "", fmt.Errorf("no digest in %q", lines[1])
}

// dockerName is an image name as containerd stores it: Docker Hub names
// get docker.io/ and library/.
func dockerName(ref string) string {
	first, _, hasSlash := strings.Cut(ref, "/")
	if !hasSlash {
		return "docker.io/library/" + ref
	}
	if !strings.ContainsAny(first, ".:") && first != "localhost" {
		return "docker.io/" + ref
	}
	return ref
}

// Command image builds the manager and ragtarget images without a Docker
// engine (make image) and pushes them to a registry (make image-push).
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/ragcanary/ragcanary/internal/dev/image"
)

const usage = `usage:
  image build [--out bin/images] [--rev HEAD] [--version V] [--images manager,ragtarget] [--platforms linux/amd64,linux/arm64]
  image push  --image host/repo:tag [--ragtarget-image host/repo:tag] [--out bin/images]`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout io.Writer) error {
	if len(args) == 0 {
		return fmt.Errorf("%s", usage)
	}
	switch args[0] {
	case "build":
		return build(ctx, args[1:], stdout)
	case "push":
		return push(ctx, args[1:], stdout)
	}
	return fmt.Errorf("unknown command %q\n%s", args[0], usage)
}

func build(ctx context.Context, args []string, stdout io.Writer) error {
	r, err := image.ParseBuild(args)
	if err != nil {
		return err
	}
	built, err := r.Run(ctx)
	if err != nil {
		return err
	}
	for _, b := range built {
		digest, err := b.Index.Digest()
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%s %s@%s (%s, revision %s)\n", b.Spec.Name, b.Spec.Reference(b.Meta), digest, r.OutDir, b.Meta.Revision)
	}
	return nil
}

func push(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("push", flag.ContinueOnError)
	out := fs.String("out", "bin/images", "Directory make image wrote.")
	manager := fs.String("image", "", "Where the manager goes: host/repository:tag (required).")
	ragtarget := fs.String("ragtarget-image", "", "Where ragtarget goes, if anywhere.")
	insecure := fs.Bool("insecure", false, "Use plain HTTP (loopback registries use it without this flag).")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *manager == "" {
		return fmt.Errorf("push needs --image host/repository:tag")
	}
	targets := []struct{ name, dst string }{{image.Manager.Name, *manager}, {image.RagTarget.Name, *ragtarget}}
	for _, t := range targets {
		if t.dst == "" {
			continue
		}
		ref, err := parseTag(t.dst, *insecure)
		if err != nil {
			return err
		}
		p, err := image.Push(ctx, *out, t.name, ref)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%s pushed: %s (SBOM referrer %s)\n", t.name, p.Reference, p.SBOM)
		if t.name == image.Manager.Name {
			fmt.Fprintf(stdout, "chart values: --set image.repository=%s --set image.digest=%s\n",
				p.Reference.Context().Name(), p.Reference.DigestStr())
		}
	}
	return nil
}

// parseTag wants a registry host: an image that silently went to Docker
// Hub would be a surprise.
func parseTag(dst string, insecure bool) (name.Tag, error) {
	opts := []name.Option{name.StrictValidation}
	if insecure {
		opts = append(opts, name.Insecure)
	}
	ref, err := name.NewTag(dst, opts...)
	if err != nil {
		return name.Tag{}, fmt.Errorf("image %q: want host/repository:tag: %w", dst, err)
	}
	return ref, nil
}

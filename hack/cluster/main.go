// Command cluster starts, waits for and tears down the one-node Kubernetes
// cluster built here (internal/dev/nodecluster): make cluster-up, cluster-wait,
// cluster-down. The cluster keeps running after up returns; down removes
// everything it made, even after a crash.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/ragcanary/ragcanary/internal/dev/image"
	"github.com/ragcanary/ragcanary/internal/dev/nodecluster"
)

const usage = `usage:
  cluster demo   [--dir .local/cluster] [--id dev] [--block 200] [--refresh 15s] [--for 0]
  cluster up     [--dir .local/cluster] [--id dev] [--block 200] [--images a.oci.tar,...]
  cluster wait   [--dir .local/cluster]
  cluster down   [--dir .local/cluster]
  cluster status [--dir .local/cluster]`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "cluster:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout io.Writer) error {
	if len(args) == 0 {
		return fmt.Errorf("%s", usage)
	}
	fs := flag.NewFlagSet(args[0], flag.ContinueOnError)
	dir := fs.String("dir", ".local/cluster", "The cluster's directory (state, logs, kubeconfig).")
	id := fs.String("id", "dev", "Names the network namespace ragcanary-<id> and the cgroup tree.")
	block := fs.Int("block", 200, "Second octet of the cluster's 10.x ranges: link 10.x.0.0/30, Pods 10.x+1.0.0/24, Services 10.x+2.0.0/24.")
	bin := fs.String("bin", "bin", "Directory holding the binaries (make cluster-tools).")
	images := fs.String("images", "", "Image archives to import (default: the manager, ragtarget and pause images of make cluster-images).")
	refresh := fs.Duration("refresh", 15*time.Second, "demo: how often to print the canary table.")
	runFor := fs.Duration("for", 0, "demo: stop by itself after this long (0: until Ctrl-C).")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	absDir, err := filepath.Abs(*dir)
	if err != nil {
		return err
	}
	switch args[0] {
	case "demo":
		return runDemo(ctx, demoOptions{dir: absDir, id: *id, block: *block, bin: *bin, refresh: *refresh, runFor: *runFor}, stdout)
	case "up":
		return up(ctx, absDir, *id, *block, *bin, *images, stdout)
	case "wait":
		c, err := attach(absDir, *bin)
		if err != nil {
			return err
		}
		return c.WaitReady(ctx)
	case "down":
		return down(absDir, stdout)
	case "status":
		s, err := nodecluster.LoadState(absDir)
		if err != nil {
			return fmt.Errorf("no cluster in %s: %w", absDir, err)
		}
		fmt.Fprintf(stdout, "cluster %s in %s: kubeconfig %s\n", s.ID, s.Dir, filepath.Join(s.Dir, "kubeconfig"))
		return nil
	}
	return fmt.Errorf("unknown command %q\n%s", args[0], usage)
}

// defaultImages are the archives make cluster-images writes from HEAD, and
// make test-cluster from the work tree, so the last of the two wins.
func defaultImages(bin string) []string {
	return []string{
		filepath.Join(bin, "images", image.Manager.Name+".oci.tar"),
		filepath.Join(bin, "images", image.RagTarget.Name+".oci.tar"),
		filepath.Join(bin, "cluster-images", image.Pause.Name+".oci.tar"),
	}
}

func up(ctx context.Context, dir, id string, block int, bin, images string, stdout io.Writer) error {
	c, err := start(ctx, dir, id, block, bin, images)
	if err != nil {
		return err
	}
	if err := c.WaitReady(ctx); err != nil {
		return fmt.Errorf("%w\n(the cluster is still up for a look: make cluster-down removes it)", err)
	}
	fmt.Fprintf(stdout, "cluster %s ready in %s on %s (%s): export KUBECONFIG=%s\n",
		id, c.Ready.Sub(c.Started).Round(100*time.Millisecond), runtime.GOARCH, c.Server, c.Kubeconfig)
	return nil
}

func start(ctx context.Context, dir, id string, block int, bin, images string) (*nodecluster.Cluster, error) {
	absBin, err := filepath.Abs(bin)
	if err != nil {
		return nil, err
	}
	archives := defaultImages(absBin)
	if images != "" {
		archives = strings.Split(images, ",")
	}
	pause, err := pauseImage()
	if err != nil {
		return nil, err
	}
	return nodecluster.Start(ctx, nodecluster.Options{ID: id, Block: block, Dir: dir, BinDir: absBin, Images: archives, PauseImage: pause})
}

// pauseImage is the name make cluster-images gives the pause image (its
// version is the chart's appVersion, as every image of the project).
func pauseImage() (string, error) {
	v, err := image.ChartAppVersion(".")
	if err != nil {
		return "", err
	}
	return image.Pause.Repository + ":" + v, nil
}

func attach(dir, bin string) (*nodecluster.Cluster, error) {
	s, err := nodecluster.LoadState(dir)
	if err != nil {
		return nil, fmt.Errorf("no cluster in %s: %w", dir, err)
	}
	return nodecluster.Attach(s)
}

func down(dir string, stdout io.Writer) error {
	s, err := nodecluster.LoadState(dir)
	if os.IsNotExist(err) {
		fmt.Fprintf(stdout, "no cluster in %s\n", dir)
		return nil
	}
	if err != nil {
		return err
	}
	if err := nodecluster.Down(context.Background(), s); err != nil {
		return err
	}
	if left := nodecluster.Leftovers(s); len(left) > 0 {
		return fmt.Errorf("left behind: %s", strings.Join(left, "; "))
	}
	fmt.Fprintf(stdout, "cluster %s removed\n", s.ID)
	return nil
}

// Command kubectl-ragcanary is the kubectl plugin for ragcanary: the fleet at
// a glance (status), a canary's trend (history), run-now with a live view
// (run) and an evidence report per run (report). Copy it onto PATH and run it
// as "kubectl ragcanary <command>".
package main

import (
	"os"
	"time"

	"k8s.io/cli-runtime/pkg/genericclioptions"
)

func main() {
	o := &rootOptions{
		flags:  genericclioptions.NewConfigFlags(true),
		out:    os.Stdout,
		errOut: os.Stderr,
		now:    time.Now,
	}
	os.Exit(execute(o, os.Args[1:]))
}

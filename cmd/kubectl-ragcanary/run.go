package main

import (
	"context"
	"os"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/ragcanary/ragcanary/internal/cli"
)

func newRunCommand(o *rootOptions) *cobra.Command {
	var (
		wait         bool
		timeout      time.Duration
		pollInterval time.Duration
		output       string
	)
	cmd := &cobra.Command{
		Use:   "run CANARY|SUITE",
		Short: "Run a canary or suite now; with --wait follow the run to its verdict",
		Long: `Sets the run-now annotation on the RevocationCanary or EvalSuite with a fresh
token; the controller creates one run for it. Name the kind with canary/NAME
or suite/NAME when both exist.

With --wait, follows the run until it finishes: a redrawn progress line on a
terminal, one line per phase change otherwise. Exits 0 when the canary met its
SLO or the suite passed its gates, 1 otherwise.`,
		Args: exactArgs(1, "the name of a RevocationCanary or EvalSuite"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(output); err != nil {
				return err
			}
			c, ns, err := o.client()
			if err != nil {
				return err
			}
			target, err := cli.ResolveTarget(cmd.Context(), c, ns, args[0])
			if err != nil {
				return err
			}
			req, err := cli.RequestRun(cmd.Context(), c, target, o.now())
			if err != nil {
				return err
			}
			// With -o json, stdout holds only the JSON document.
			log := o.out
			if output == outputJSON {
				log = o.errOut
			}
			cli.Fprintf(log, "requested a run of %s in namespace %s (run-now token %s): run %s\n", target.String(), ns, req.Token, req.Run)
			if !wait {
				if output == outputJSON {
					return writeJSON(o.out, req)
				}
				return nil
			}
			ctx := cmd.Context()
			if timeout > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, timeout)
				defer cancel()
			}
			p, err := cli.Follow(ctx, c, req, pollInterval, o.now, o.view(log))
			if err != nil {
				return err
			}
			if output == outputJSON {
				if err := writeJSON(o.out, p); err != nil {
					return err
				}
			}
			if !p.OK {
				return failed()
			}
			return nil
		},
	}
	cmd.Flags().BoolVarP(&wait, "wait", "w", false, "follow the run to its verdict")
	cmd.Flags().DurationVar(&timeout, "timeout", time.Hour, "with --wait, give up after this long (0: never)")
	cmd.Flags().DurationVar(&pollInterval, "poll-interval", time.Second, "with --wait, how often to read the run")
	_ = cmd.Flags().MarkHidden("poll-interval")
	addOutputFlag(cmd, &output)
	return cmd
}

// view is a live progress line on a terminal, plain lines otherwise.
func (o *rootOptions) view(w interface{ Write([]byte) (int, error) }) cli.View {
	if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		return &cli.LiveView{W: w, Now: o.now}
	}
	return &cli.PlainView{W: w, Now: o.now, Start: o.now()}
}

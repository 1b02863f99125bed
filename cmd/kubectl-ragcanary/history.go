package main

import (
	"github.com/spf13/cobra"

	"github.com/ragcanary/ragcanary/internal/cli"
)

func newHistoryCommand(o *rootOptions) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "history CANARY",
		Short: "Every kept run of a canary, oldest first, with p50/p95/max and a sparkline",
		Args:  exactArgs(1, "the name of a RevocationCanary"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(output); err != nil {
				return err
			}
			c, ns, err := o.client()
			if err != nil {
				return err
			}
			h, err := cli.LoadHistory(cmd.Context(), c, ns, args[0])
			if err != nil {
				return err
			}
			if output == outputJSON {
				return writeJSON(o.out, h)
			}
			return cli.WriteHistory(o.out, h)
		},
	}
	addOutputFlag(cmd, &output)
	return cmd
}

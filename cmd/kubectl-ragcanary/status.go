package main

import "github.com/spf13/cobra"

func newStatusCommand(o *rootOptions) *cobra.Command {
	return &cobra.Command{Use: "status", Short: "The fleet at a glance"}
}

package main

import "github.com/spf13/cobra"

func newHistoryCommand(o *rootOptions) *cobra.Command {
	return &cobra.Command{Use: "history CANARY", Short: "Every kept run of a canary, with its trend"}
}

package main

import "github.com/spf13/cobra"

func newRunCommand(o *rootOptions) *cobra.Command {
	return &cobra.Command{Use: "run CANARY|SUITE", Short: "Run a canary or suite now"}
}

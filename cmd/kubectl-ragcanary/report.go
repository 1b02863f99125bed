// H8 owns this file: it replaces this placeholder with the report command.
package main

import "github.com/spf13/cobra"

func newReportCommand(o *rootOptions) *cobra.Command {
	return &cobra.Command{Use: "report RUN", Short: "Evidence report of one CanaryRun or SuiteRun"}
}

package main

import (
	"github.com/spf13/cobra"

	"github.com/ragcanary/ragcanary/internal/cli"
)

func newStatusCommand(o *rootOptions) *cobra.Command {
	var (
		allNamespaces bool
		output        string
	)
	cmd := &cobra.Command{
		Use:   "status",
		Short: "The fleet at a glance; exits 1 when anything is breached or violated",
		Long: `Every Corpus, RevocationCanary (last verdict, time to exclusion per surface
as an interval against its SLO), run in flight (live exposure), runs of the
last 24 hours by verdict, and EvalSuite (last gates and disclosures).

Exits 1 when a canary's last run is SLOBreached, NotExcluded or
IsolationViolation, a run in flight has already been seen by a control
persona, or a suite's last run failed a gate; 0 otherwise.`,
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(output); err != nil {
				return err
			}
			c, ns, err := o.client()
			if err != nil {
				return err
			}
			if allNamespaces {
				ns = ""
			}
			fleet, err := cli.LoadFleet(cmd.Context(), c, ns, o.now())
			if err != nil {
				return err
			}
			if output == outputJSON {
				err = writeJSON(o.out, fleet)
			} else {
				err = cli.WriteFleet(o.out, fleet, allNamespaces)
			}
			if err != nil {
				return err
			}
			if fleet.Breached() {
				return failed()
			}
			return nil
		},
	}
	cmd.Flags().BoolVarP(&allNamespaces, "all-namespaces", "A", false, "list every namespace")
	addOutputFlag(cmd, &output)
	return cmd
}

package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/cli"
)

// Exit codes: scripts tell "something is breached" from "you called it wrong".
const (
	exitOK      = 0
	exitFailed  = 1
	exitInvalid = 2
)

// exitError carries an exit code out of a command's RunE. A command that has
// already printed what went wrong returns one with a nil err.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

// failed is the error of a command whose output shows a breach or violation.
func failed() error { return &exitError{code: exitFailed} }

// usageError is the error of a command called wrongly.
func usageError(format string, args ...any) error {
	return &exitError{code: exitInvalid, err: fmt.Errorf(format, args...)}
}

// rootOptions is what every subcommand shares: the kubeconfig flags, where
// to write, and the clock (injected in tests so output is reproducible).
type rootOptions struct {
	flags       *genericclioptions.ConfigFlags
	out, errOut io.Writer
	now         func() time.Time
}

// scheme knows the ragcanary kinds and the core kinds.
func scheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	if err := corev1.AddToScheme(s); err != nil {
		return nil, err
	}
	if err := v1alpha1.AddToScheme(s); err != nil {
		return nil, err
	}
	return s, nil
}

// client returns a client with the ragcanary scheme and the namespace from
// the flags (default: the kubeconfig context's namespace).
func (o *rootOptions) client() (client.Client, string, error) {
	cfg, err := o.flags.ToRESTConfig()
	if err != nil {
		return nil, "", err
	}
	ns, _, err := o.flags.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return nil, "", err
	}
	s, err := scheme()
	if err != nil {
		return nil, "", err
	}
	c, err := client.New(cfg, client.Options{Scheme: s})
	if err != nil {
		return nil, "", err
	}
	return c, ns, nil
}

// newRootCommand wires the subcommands under the kubeconfig flags.
func newRootCommand(o *rootOptions) *cobra.Command {
	root := &cobra.Command{
		Use:           "kubectl-ragcanary",
		Short:         "Revocation canaries and eval suites at a glance",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(o.out)
	root.SetErr(o.errOut)
	o.flags.AddFlags(root.PersistentFlags())
	// A mistyped flag is a usage error (exit 2), not a failed check.
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error {
		return &exitError{code: exitInvalid, err: err}
	})
	root.AddCommand(
		newStatusCommand(o),
		newHistoryCommand(o),
		newRunCommand(o),
		newReportCommand(o),
	)
	return root
}

// execute runs the command line and maps its error to an exit code.
func execute(o *rootOptions, args []string) int {
	root := newRootCommand(o)
	root.SetArgs(args)
	err := root.Execute()
	if err == nil {
		return exitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil {
			cli.Fprintf(o.errOut, "error: %v\n", ee.err)
		}
		return ee.code
	}
	cli.Fprintf(o.errOut, "error: %v\n", err)
	// cobra's own argument and command errors are usage errors.
	if isCobraUsageError(err) {
		return exitInvalid
	}
	return exitFailed
}

// isCobraUsageError tells cobra's own "unknown command" error, which has no
// type, from a failure of the command itself.
func isCobraUsageError(err error) bool {
	return strings.HasPrefix(err.Error(), "unknown command")
}

// exactArgs is cobra.ExactArgs with a usage exit code.
func exactArgs(n int, what string) cobra.PositionalArgs {
	return func(_ *cobra.Command, args []string) error {
		if len(args) != n {
			return usageError("expected %s, got %d argument(s)", what, len(args))
		}
		return nil
	}
}

// Output formats: people by default, exact values with -o json.
const outputJSON = "json"

func addOutputFlag(cmd *cobra.Command, output *string) {
	cmd.Flags().StringVarP(output, "output", "o", "", "output format: json for exact values (default: text for people)")
}

func checkOutput(output string) error {
	if output != "" && output != outputJSON {
		return usageError("unknown output format %q: use -o json, or no -o for text", output)
	}
	return nil
}

func writeJSON(w io.Writer, v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return err
	}
	_, err := w.Write(jsonSafe(buf.Bytes()))
	return err
}

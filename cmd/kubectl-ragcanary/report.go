package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/ragcanary/ragcanary/internal/cli"
	"github.com/ragcanary/ragcanary/internal/report"
)

// newReportCommand writes the evidence report of one CanaryRun or SuiteRun.
func newReportCommand(o *rootOptions) *cobra.Command {
	var output, format string
	cmd := &cobra.Command{
		Use:   "report RUN -o report.html|report.json|report.md",
		Short: "Evidence report of one CanaryRun or SuiteRun",
		Long: `Writes the evidence behind one run's verdict: what was measured and when,
the corpus and persona as read now, the verdict and why, the bounds on a
timeline and the probe counts; for a suite run, per-persona and per-stratum
tables with numerators and denominators and every failing case.

RUN is a run's name, or canaryrun/NAME or suiterun/NAME when both kinds have
it. The format follows the file's extension: .html is one self-contained page
(inline SVG, no network, prints), .json has the exact values, .md is
Markdown. Secret values never appear in a report.`,
		Example: `  kubectl ragcanary report docs-grant-1772436600 -o report.html
  kubectl ragcanary report suiterun/access-1772434800 -o report.md
  kubectl ragcanary report docs-grant-1772436600 -o - --format json | jq .canaryRun.surfaces`,
		Args: exactArgs(1, "one run: NAME, canaryrun/NAME or suiterun/NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runReport(cmd, o, args[0], output, format)
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", "file to write; its extension (.html, .json, .md) picks the format; - writes to standard output")
	cmd.Flags().StringVar(&format, "format", "", "html, json or md, instead of the file's extension (needed with -o -)")
	return cmd
}

func runReport(cmd *cobra.Command, o *rootOptions, arg, output, format string) error {
	ref, err := report.ParseRef(arg)
	if err != nil {
		return usageError("%v", err)
	}
	f, err := reportFormat(output, format)
	if err != nil {
		return err
	}
	c, ns, err := o.client()
	if err != nil {
		return err
	}
	ev, err := report.Load(cmd.Context(), c, ns, ref, o.now())
	if errors.Is(err, report.ErrAmbiguous) {
		return usageError("%v", err)
	}
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := report.Render(&buf, ev, f); err != nil {
		return err
	}
	if output == "-" {
		_, err := o.out.Write(terminalReport(buf.Bytes(), f))
		return err
	}
	if err := writeFileAtomic(output, buf.Bytes()); err != nil {
		return err
	}
	cli.Fprintf(o.out, "wrote %s: %s report of %s %s/%s\n", output, string(f), ev.Kind, ev.Namespace, ev.Name)
	return nil
}

// terminalReport is a report as standard output may show it: what it quotes
// from objects cannot act on the terminal.
func terminalReport(doc []byte, f report.Format) []byte {
	if f == report.FormatJSON {
		return jsonSafe(doc)
	}
	return textSafe(doc)
}

// reportFormat is --format, else the output file's extension.
func reportFormat(output, format string) (report.Format, error) {
	if output == "" {
		return "", usageError("-o FILE is required (report.html, report.json or report.md; - for standard output)")
	}
	if format != "" {
		f, err := report.ParseFormat(format)
		if err != nil {
			return "", usageError("%v", err)
		}
		return f, nil
	}
	if output == "-" {
		return "", usageError("-o - needs --format html, json or md")
	}
	f, err := report.FormatForPath(output)
	if err != nil {
		return "", usageError("%v", err)
	}
	return f, nil
}

// writeFileAtomic writes through a temporary file in the same directory, so
// a failed write never leaves a partial report under the asked name.
func writeFileAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

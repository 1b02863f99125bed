package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/ragcanary/ragcanary/internal/scoring"
)

func init() {
	register("eval", subcommand{
		summary: "score exported results against eval cases (exit 0 pass, 1 gate failed, 2 invalid input)",
		run:     runEval,
	})
}

const evalUsage = `usage: ragcanary eval CASES.json RESULTS.json [--k N] [--format text|json] [--min-recall X] [--min-mrr X]
       ragcanary eval --suite SUITE.yaml --corpus CORPUS.yaml --personas PERSONAS.yaml [flags]   (live mode; --suite --help)

Scores RESULTS.json against CASES.json. Exit status: 0 every gate passed,
1 a gate failed, 2 invalid input or flags. Flags may come before or after
the file arguments.

flags:
  --k N             rank cutoff for recall, fill and MRR (default 10, >= 1)
  --format F        text (default) or json
  --min-recall X    fail when the overall mean recall@k is below X (0..1)
  --min-mrr X       fail when the overall MRR@k is below X (0..1)

A threshold on a metric that is undefined (no answerable case with relevant
evidence) fails. A required-block case that got an answer fails the
no_failed_to_abstain gate. Each input file may be at most 512 MiB; a larger
one is invalid input. See docs/eval.md for the file formats and the JSON report.
`

// evalConfig is the parsed command line.
type evalConfig struct {
	casesPath, resultsPath string
	format                 string
	opts                   scoring.Options
}

func runEval(args []string, stdout, stderr io.Writer) int {
	if isLiveInvocation(args) {
		return runEvalLive(args, stdout, stderr)
	}
	cfg, err := parseEvalArgs(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		fmt.Fprintf(stderr, "ragcanary eval: %v\nrun 'ragcanary eval --help' for usage\n", err)
		return exitInvalid
	}
	report, err := evaluateFiles(cfg)
	if err != nil {
		fmt.Fprintf(stderr, "ragcanary eval: %v\n", err)
		return exitInvalid
	}
	if err := writeReport(stdout, cfg.format, report); err != nil {
		fmt.Fprintf(stderr, "ragcanary eval: writing report: %v\n", err)
		return exitInvalid
	}
	if !report.Passed {
		return exitFailed
	}
	return exitOK
}

// parseEvalArgs parses flags and exactly two positional arguments.
func parseEvalArgs(args []string, stderr io.Writer) (evalConfig, error) {
	cfg := evalConfig{}
	fs := flag.NewFlagSet("eval", flag.ContinueOnError)
	// The flag package would print usage on every error; runEval prints
	// the error and usage once instead.
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	// Descriptions live in evalUsage, which is what users see.
	k := fs.Int("k", scoring.DefaultK, "")
	fs.StringVar(&cfg.format, "format", "text", "")
	fs.Var(optionalFloat{&cfg.opts.MinRecall}, "min-recall", "")
	fs.Var(optionalFloat{&cfg.opts.MinMRR}, "min-mrr", "")

	pos, err := parseInterspersed(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(stderr, evalUsage)
		return cfg, err
	}
	if err != nil {
		return cfg, err
	}
	if len(pos) != 2 {
		return cfg, fmt.Errorf("expected CASES.json and RESULTS.json, got %d file argument(s)", len(pos))
	}
	cfg.casesPath, cfg.resultsPath = pos[0], pos[1]
	// Checked here rather than left to scoring.Options, where 0 means
	// "default": on the command line --k 0 is a mistake.
	if *k < 1 {
		return cfg, fmt.Errorf("--k must be at least 1, got %d", *k)
	}
	cfg.opts.K = *k
	if cfg.format != "text" && cfg.format != "json" {
		return cfg, fmt.Errorf("--format must be text or json, got %q", cfg.format)
	}
	return cfg, nil
}

// parseInterspersed lets flags appear before and after positional arguments,
// which the flag package alone does not allow. "--" ends flag parsing.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if consumed := len(args) - len(rest); consumed > 0 && args[consumed-1] == "--" {
			return append(pos, rest...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// optionalFloat is a flag whose absence is distinguishable from 0, because
// an unset threshold means "no gate", not "gate at 0".
type optionalFloat struct{ p **float64 }

func (o optionalFloat) String() string {
	if o.p == nil || *o.p == nil {
		return ""
	}
	return strconv.FormatFloat(**o.p, 'g', -1, 64)
}

func (o optionalFloat) Set(s string) error {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return fmt.Errorf("not a number: %q", s)
	}
	if v != v || v < 0 || v > 1 { // v != v catches NaN
		return fmt.Errorf("must be within [0,1], got %s", s)
	}
	*o.p = &v
	return nil
}

// evaluateFiles decodes both files and runs the engine. Decode problems are
// prefixed with the file name so the user knows which export to fix.
func evaluateFiles(cfg evalConfig) (scoring.Report, error) {
	cases, err := decodeFile(cfg.casesPath, scoring.DecodeCases)
	if err != nil {
		return scoring.Report{}, err
	}
	results, err := decodeFile(cfg.resultsPath, scoring.DecodeResults)
	if err != nil {
		return scoring.Report{}, err
	}
	return scoring.Evaluate(cases, results, cfg.opts)
}

// decodeFile refuses a regular file over scoring.MaxInputBytes before
// reading any of it; the decoders stop any other input (a pipe) one byte
// past the cap.
func decodeFile[T any](path string, decode func(io.Reader) ([]T, error)) ([]T, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Mode().IsRegular() && st.Size() > scoring.MaxInputBytes {
		return nil, fmt.Errorf("%s: the file is %d bytes, larger than the limit of %d MiB for an input file",
			path, st.Size(), scoring.MaxInputBytes>>20)
	}
	items, err := decode(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return items, nil
}

func writeReport(w io.Writer, format string, r scoring.Report) error {
	if format == "json" {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	}
	return writeText(w, r)
}

// writeText prints the human report: summary per persona, gates, then the
// cases that need attention.
func writeText(w io.Writer, r scoring.Report) error {
	verdict := "PASSED"
	if !r.Passed {
		verdict = "FAILED"
	}
	fmt.Fprintf(w, "ragcanary eval: %s (k=%d, %d cases)\n\n", verdict, r.K, len(r.Cases))
	// Write errors surface through the tabwriters' Flush.
	err := writeSummaryTable(w, r.Summary)
	fmt.Fprintln(w)
	err = errors.Join(err, writeGateTable(w, r.Gates))
	var failing []scoring.CaseScore
	for _, c := range r.Cases {
		if c.Failing() {
			failing = append(failing, c)
		}
	}
	if len(failing) > 0 {
		fmt.Fprintln(w)
		err = errors.Join(err, writeCaseTable(w, failing))
	}
	return err
}

func writeSummaryTable(w io.Writer, s scoring.Summary) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "PERSONA\tANSWERABLE\tREQUIRED_BLOCK\tUTILITY\tFALSE_BLOCK_RATE\tDISCLOSURE_RATE\tFAILED_TO_ABSTAIN\tRECALL@K\tMRR@K")
	writeStatsRow(tw, "(all)", s.Overall)
	for _, name := range slices.Sorted(maps.Keys(s.Personas)) {
		writeStatsRow(tw, personaLabel(name), s.Personas[name])
	}
	return tw.Flush()
}

func writeStatsRow(w io.Writer, label string, st scoring.Stats) {
	fmt.Fprintf(w, "%s\t%d\t%d\t%s\t%s\t%s\t%s\t%s\t%s\n", label, st.Answerable, st.RequiredBlock,
		fmtRatio(st.Utility), fmtRatio(st.FalseBlockRate), fmtRatio(st.DisclosureRate),
		fmtRatio(st.FailedToAbstainRate), fmtMean(st.RecallAtK), fmtMean(st.MRRAtK))
}

func writeGateTable(w io.Writer, gates []scoring.Gate) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "GATE\tRESULT\tVALUE\tTHRESHOLD")
	for _, g := range gates {
		result := "pass"
		if !g.Passed {
			result = "FAIL"
		}
		// Zero-tolerance gates cap a count; threshold gates set a floor.
		threshold := "<= " + fmtNumber(&g.Threshold)
		if g.Name == scoring.GateMinRecall || g.Name == scoring.GateMinMRR {
			threshold = ">= " + fmtNumber(&g.Threshold)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", g.Name, result, fmtNumber(g.Value), threshold)
	}
	return tw.Flush()
}

func writeCaseTable(w io.Writer, cases []scoring.CaseScore) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CASE\tPERSONA\tOUTCOME\tRECALL@K\tRR\tDETAILS")
	for _, c := range cases {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", c.ID, personaLabel(c.Persona), c.Outcome,
			fmtFloat(c.RecallAtK), fmtFloat(c.ReciprocalRank), caseDetails(c))
	}
	return tw.Flush()
}

// caseDetails explains why a case is listed.
func caseDetails(c scoring.CaseScore) string {
	var parts []string
	if len(c.ForbiddenIDs) > 0 {
		parts = append(parts, "forbidden="+strings.Join(c.ForbiddenIDs, ","))
	}
	if len(c.InvalidCitations) > 0 {
		parts = append(parts, "invalid_citations="+strings.Join(c.InvalidCitations, ","))
	}
	if c.DuplicateCount > 0 {
		parts = append(parts, fmt.Sprintf("duplicates=%d", c.DuplicateCount))
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, " ")
}

// personaLabel makes the no-persona key visible in text output.
func personaLabel(name string) string {
	if name == scoring.NoPersona {
		return "(none)"
	}
	return name
}

// fmtRatio shows value and counts, "n/a" for an undefined value.
func fmtRatio(r scoring.Ratio) string {
	return fmt.Sprintf("%s (%s/%d)", fmtFloat(r.Value), strconv.FormatFloat(r.Numerator, 'f', -1, 64), r.Denominator)
}

// fmtMean shows a mean with the number of cases it averages.
func fmtMean(r scoring.Ratio) string {
	return fmt.Sprintf("%s (n=%d)", fmtFloat(r.Value), r.Denominator)
}

func fmtFloat(v *float64) string {
	if v == nil {
		return "n/a"
	}
	return strconv.FormatFloat(*v, 'f', 3, 64)
}

// fmtNumber prints counts without decimals and other values like fmtFloat.
func fmtNumber(v *float64) string {
	if v != nil && *v == float64(int64(*v)) {
		return strconv.FormatInt(int64(*v), 10)
	}
	return fmtFloat(v)
}

package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"sigs.k8s.io/yaml"

	"github.com/ragcanary/ragcanary/internal/scoring"
)

func init() {
	register("eval", subcommand{
		summary: "score exported results against eval cases (exit 0 pass, 1 gate failed, 2 invalid input)",
		run:     runEval,
	})
}

const evalUsage = `usage: ragcanary eval CASES RESULTS [--k N] [--format text|json] [gate flags]
       ragcanary eval --replay REPORT.json [CASES] [--format text|json]
       ragcanary eval --suite SUITE.yaml --corpus CORPUS.yaml --personas PERSONAS.yaml [flags]   (live mode; --suite --help)

Scores RESULTS against CASES. Both are JSON arrays (or YAML lists, for
files ending in .yaml or .yml); each case and result may be in the v1 or
the v2 format (docs/eval.md). Exit status: 0 every gate passed, 1 a gate
failed, 2 invalid input or flags. Flags may come before or after the file
arguments.

With --replay, rescores a frozen-evidence report (written by a SuiteRun)
with the current engine; a CASES file replaces the report's frozen cases,
so a corrected annotation can be applied to a past run.

flags:
  --k N                      rank cutoff for recall, fill, MRR, precision, nDCG (default 10, >= 1)
  --format F                 text (default) or json
  --min-recall X             fail when a persona's mean recall@k is below X (0..1)
  --min-mrr X                fail when a persona's MRR@k is below X (0..1)
  --min-utility X            fail when a persona's utility is below X (0..1)
  --max-false-block-rate X   fail when a persona's false-block rate is above X (0..1)
  --max-stale-rate X         fail when a persona's stale-evidence rate is above X (0..1)

Forbidden evidence, failed-to-abstain and invalid citations are zero
tolerance. A threshold fails when no persona has a defined value for it. Each
input file may be at most 512 MiB; a larger one is invalid input. See
docs/eval.md for the file formats and the JSON report.
`

// evalConfig is the parsed command line.
type evalConfig struct {
	casesPath, resultsPath string
	// replayPath is the frozen-evidence report to rescore; casesPath then
	// optionally replaces its cases.
	replayPath string
	format     string
	opts       scoring.Options
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
	var report scoring.Report
	var session *scoring.Session
	if cfg.replayPath != "" {
		report, err = replayFile(cfg)
	} else {
		if os.Getenv("GOGC") == "" {
			// What is kept per case is small next to what decoding
			// allocates and drops, so collecting half as often costs
			// little peak memory (still well under a Python script's)
			// and saves much of the collector's CPU time.
			defer debug.SetGCPercent(debug.SetGCPercent(evalGCPercent))
		}
		session, report, err = evaluateFiles(cfg)
	}
	if err != nil {
		fmt.Fprintf(stderr, "ragcanary eval: %v\n", err)
		return exitInvalid
	}
	if err := writeSessionReport(stdout, cfg.format, report, session); err != nil {
		fmt.Fprintf(stderr, "ragcanary eval: writing report: %v\n", err)
		return exitInvalid
	}
	if !report.Passed {
		return exitFailed
	}
	return exitOK
}

// evalGCPercent is the collector's GOGC while a file evaluation runs,
// unless the GOGC environment variable sets one.
const evalGCPercent = 200

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
	fs.Var(optionalFloat{&cfg.opts.MinUtility}, "min-utility", "")
	fs.Var(optionalFloat{&cfg.opts.MaxFalseBlockRate}, "max-false-block-rate", "")
	fs.Var(optionalFloat{&cfg.opts.MaxStaleRate}, "max-stale-rate", "")
	fs.StringVar(&cfg.replayPath, "replay", "", "")

	pos, err := parseInterspersed(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(stderr, evalUsage)
		return cfg, err
	}
	if err != nil {
		return cfg, err
	}
	if cfg.replayPath != "" {
		// A replay is scored with the options the run froze; silently
		// ignoring a flag would claim a gate that was not applied.
		var set []string
		fs.Visit(func(f *flag.Flag) {
			if f.Name != "replay" && f.Name != "format" {
				set = append(set, "--"+f.Name)
			}
		})
		if len(set) > 0 {
			return cfg, fmt.Errorf("--replay scores with the k and gates frozen in the report; %s cannot be combined with it", strings.Join(set, ", "))
		}
	}
	switch {
	case cfg.replayPath != "" && len(pos) > 1:
		return cfg, fmt.Errorf("--replay takes at most one CASES file, got %d file arguments", len(pos))
	case cfg.replayPath != "" && len(pos) == 1:
		cfg.casesPath = pos[0]
	case cfg.replayPath == "" && len(pos) != 2:
		return cfg, fmt.Errorf("expected CASES.json and RESULTS.json, got %d file argument(s)", len(pos))
	case cfg.replayPath == "":
		cfg.casesPath, cfg.resultsPath = pos[0], pos[1]
	}
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

// evaluateFiles streams both files through one scoring session: cases
// first, then each result is scored as it is decoded. Decode problems are
// prefixed with the file name so the user knows which export to fix.
func evaluateFiles(cfg evalConfig) (*scoring.Session, scoring.Report, error) {
	s, err := scoring.NewSession(cfg.opts)
	if err != nil {
		return nil, scoring.Report{}, err
	}
	if err := readFile(cfg.casesPath, s.ReadCases); err != nil {
		return nil, scoring.Report{}, err
	}
	if err := readFile(cfg.resultsPath, s.ReadResults); err != nil {
		return nil, scoring.Report{}, err
	}
	// The JSON report streams the cases from the session; the text one
	// needs only the failing ones, which it also walks from there.
	rep, err := s.Finish(false)
	return s, rep, err
}

// replayFile rescores a frozen-evidence report, with its cases replaced by
// the CASES file when one is given.
func replayFile(cfg evalConfig) (scoring.Report, error) {
	var ev *scoring.Evidence
	err := readFile(cfg.replayPath, func(r io.Reader) error {
		var err error
		ev, err = scoring.ReadEvidence(r)
		return err
	})
	if err != nil {
		return scoring.Report{}, err
	}
	if cfg.casesPath != "" {
		var cases []scoring.CaseV2
		if err := readFile(cfg.casesPath, func(r io.Reader) error {
			var err error
			cases, err = scoring.DecodeCasesV2(r)
			return err
		}); err != nil {
			return scoring.Report{}, err
		}
		ev.Cases = cases
	}
	return scoring.Replay(ev)
}

// readFile refuses a regular file over scoring.MaxInputBytes before reading
// any of it (the decoders stop any other input one byte past the cap),
// converts a .yaml or .yml file to JSON, and hands the JSON to read.
func readFile(path string, read func(io.Reader) error) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Mode().IsRegular() && st.Size() > scoring.MaxInputBytes {
		return fmt.Errorf("%s: the file is %d bytes, larger than the limit of %d MiB for an input file",
			path, st.Size(), scoring.MaxInputBytes>>20)
	}
	var in io.Reader = f
	if ext := strings.ToLower(filepath.Ext(path)); ext == ".yaml" || ext == ".yml" {
		js, err := yamlToJSON(f)
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		in = bytes.NewReader(js)
	}
	if err := read(in); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// yamlToJSON converts a YAML document strictly: a duplicate key is an
// error, as in JSON input.
func yamlToJSON(r io.Reader) ([]byte, error) {
	raw, err := io.ReadAll(io.LimitReader(r, scoring.MaxInputBytes+1))
	if err != nil {
		return nil, err
	}
	js, err := yaml.YAMLToJSONStrict(raw)
	if err != nil {
		return nil, fmt.Errorf("invalid input: malformed YAML: %v", err)
	}
	return js, nil
}

// writeReport writes a report that holds its cases.
func writeReport(w io.Writer, format string, r scoring.Report) error {
	return writeSessionReport(w, format, r, nil)
}

// writeSessionReport writes r; with s, the cases come from the session.
func writeSessionReport(w io.Writer, format string, r scoring.Report, s *scoring.Session) error {
	if format == "json" {
		if s != nil {
			return s.WriteJSON(w, r)
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	}
	return writeText(w, r, s)
}

// writeText prints the human report: summary per persona, gates, then the
// cases that need attention.
func writeText(w io.Writer, r scoring.Report, s *scoring.Session) error {
	verdict := "PASSED"
	if !r.Passed {
		verdict = "FAILED"
	}
	var failing []scoring.CaseScore
	n := 0
	each := func(c scoring.CaseScore) {
		n++
		if c.Failing() {
			failing = append(failing, c)
		}
	}
	if s != nil {
		s.EachCase(each)
	} else {
		for _, c := range r.Cases {
			each(c)
		}
	}
	fmt.Fprintf(w, "ragcanary eval: %s (k=%d, %d cases)\n\n", verdict, r.K, n)
	if r.Replay != nil {
		writeReplayNote(w, r.Replay)
	}
	// Write errors surface through the tabwriters' Flush.
	err := writeSummaryTable(w, r.Summary)
	fmt.Fprintln(w)
	err = errors.Join(err, writeGateTable(w, r.Gates))
	if len(failing) > 0 {
		fmt.Fprintln(w)
		err = errors.Join(err, writeCaseTable(w, failing))
	}
	return err
}

// writeSummaryTable has a column per row of scoring.Figures with a text
// header, in the table's order.
func writeSummaryTable(w io.Writer, s scoring.Summary) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprint(tw, "PERSONA")
	for _, f := range scoring.Figures {
		if f.Text != "" {
			fmt.Fprintf(tw, "\t%s", f.Text)
		}
	}
	fmt.Fprintln(tw)
	writeStatsRows(tw, "", s)
	for _, name := range slices.Sorted(maps.Keys(s.Strata)) {
		writeStatsRows(tw, name+": ", s.Strata[name])
	}
	err := tw.Flush()
	return errors.Join(err, writeStatusTable(w, s))
}

// writeStatsRows writes the overall and per-persona rows of one summary.
func writeStatsRows(w io.Writer, prefix string, s scoring.Summary) {
	writeStatsRow(w, prefix+"(all)", s.Overall)
	for _, name := range slices.Sorted(maps.Keys(s.Personas)) {
		writeStatsRow(w, prefix+personaLabel(name), s.Personas[name])
	}
}

func writeStatsRow(w io.Writer, label string, st scoring.Stats) {
	fmt.Fprint(w, label)
	for _, f := range scoring.Figures {
		if f.Text != "" {
			fmt.Fprintf(w, "\t%s", fmtFigure(f, &st))
		}
	}
	fmt.Fprintln(w)
}

// fmtFigure shows a count as a number, a rate with its counts and a mean
// with the number of cases it averages.
func fmtFigure(f scoring.Figure, st *scoring.Stats) string {
	switch f.Kind {
	case scoring.KindCount:
		return strconv.Itoa(f.Count(st))
	case scoring.KindMean:
		return fmtMean(f.Ratio(st))
	}
	return fmtRatio(f.Ratio(st))
}

// writeStatusTable shows the per-status correct-abstention rates, only when
// some case expects a status, so a v1 report keeps its shape.
func writeStatusTable(w io.Writer, s scoring.Summary) error {
	any := false
	for _, a := range scoring.StatusActions {
		any = any || s.Overall.CorrectAbstention[a].Denominator > 0
	}
	if !any {
		return nil
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprint(tw, "PERSONA")
	for _, a := range scoring.StatusActions {
		fmt.Fprintf(tw, "\t%s", strings.ToUpper(string(a)))
	}
	fmt.Fprintln(tw)
	row := func(label string, st scoring.Stats) {
		fmt.Fprint(tw, label)
		for _, a := range scoring.StatusActions {
			fmt.Fprintf(tw, "\t%s", fmtRatio(st.CorrectAbstention[a]))
		}
		fmt.Fprintln(tw)
	}
	row("(all)", s.Overall)
	for _, name := range slices.Sorted(maps.Keys(s.Personas)) {
		row(personaLabel(name), s.Personas[name])
	}
	return tw.Flush()
}

func writeGateTable(w io.Writer, gates []scoring.Gate) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "GATE\tRESULT\tVALUE\tTHRESHOLD\tFAILED")
	for _, g := range gates {
		result := "pass"
		if !g.Passed {
			result = "FAIL"
		}
		// Zero-tolerance gates and ceilings cap a value; floors set a minimum.
		threshold := "<= " + fmtNumber(&g.Threshold)
		if strings.HasPrefix(g.Name, "min_") {
			threshold = ">= " + fmtNumber(&g.Threshold)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", g.Name, result, fmtNumber(g.Value), threshold, gateFailures(g))
	}
	return tw.Flush()
}

// gateFailures names the persona (and stratum) behind each failure.
func gateFailures(g scoring.Gate) string {
	if len(g.Failures) == 0 {
		return "-"
	}
	parts := make([]string, 0, len(g.Failures))
	for _, f := range g.Failures {
		where := personaLabel(f.Persona)
		if f.Stratum != "" {
			where += "/" + f.Stratum
		}
		parts = append(parts, where+"="+fmtNumber(f.Value))
	}
	return strings.Join(parts, " ")
}

// writeReplayNote says what a replayed report was rescored from.
func writeReplayNote(w io.Writer, r *scoring.ReplayInfo) {
	recorded := "none recorded"
	if r.RecordedPassed != nil {
		recorded = "FAILED"
		if *r.RecordedPassed {
			recorded = "PASSED"
		}
	}
	changed := "unchanged since the run"
	if r.CasesChanged {
		changed = "changed since the run (" + r.RecordedCasesHash + " -> " + r.CasesHash + ")"
	}
	fmt.Fprintf(w, "replay: recorded verdict %s; cases %s; %d execution(s) without a reply\n\n", recorded, changed, r.ProbeErrors)
}

func writeCaseTable(w io.Writer, cases []scoring.CaseScore) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CASE\tPERSONA\tOUTCOME\tRECALL@K\tRR\tDETAILS")
	for _, c := range cases {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", c.ID, personaLabel(c.Persona), outcomeLabel(c),
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
	if len(c.LeakedMarkers) > 0 {
		parts = append(parts, fmt.Sprintf("leaked_markers=%d", len(c.LeakedMarkers)))
	}
	if len(c.LeakedTexts) > 0 {
		parts = append(parts, "leaked_texts="+strings.Join(c.LeakedTexts, ","))
	}
	if c.DuplicateCount > 0 {
		parts = append(parts, fmt.Sprintf("duplicates=%d", c.DuplicateCount))
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, " ")
}

// outcomeLabel adds what was declared when it is not the outcome's own
// word, and names a leak the outcome does not: an answerable case that
// leaked is "unsupported, disclosed".
func outcomeLabel(c scoring.CaseScore) string {
	label := string(c.Outcome)
	if c.Outcome == scoring.OutcomeWrongStatus || c.Outcome == scoring.OutcomeCorrectStatus {
		label = fmt.Sprintf("%s (expected %s, declared %s)", c.Outcome, c.Action, c.Declared)
	}
	if c.Leaked() && c.Outcome != scoring.OutcomeDisclosure {
		label += ", disclosed"
	}
	return label
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

package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/ragcanary/ragcanary/internal/manifests"
	"github.com/ragcanary/ragcanary/internal/scoring"
	"github.com/ragcanary/ragcanary/internal/suite"
	"github.com/ragcanary/ragcanary/internal/target"
)

const evalLiveUsage = `usage: ragcanary eval --suite SUITE.yaml --corpus CORPUS.yaml --personas PERSONAS.yaml
                      --allowed-target-urls URL[,URL...] | --allow-any-target
                      [--k N] [--format text|json] [--min-recall X] [--min-mrr X]
                      [--evidence FILE]

Live mode: runs an EvalSuite against its corpus's real target, exactly as a
SuiteRun does in the cluster, and prints the same report. The files hold
Kubernetes manifests (multi-document YAML): one EvalSuite, its Corpus, the
Personas it names, and optionally Secrets and case ConfigMaps. Each flag may
be repeated. Exit status: 0 every gate passed, 1 a gate failed (including
no_probe_errors), 2 invalid input, or interrupted before anything was scored.

Credentials: a Secret key named by the Corpus or a Persona is taken from
$RAGCANARY_SECRET_<SECRET>_<KEY> (upper case, '-' and '.' as '_') when set,
else from a Secret manifest in the given files, which must carry the label
ragcanary.dev/credential: "true" as in a cluster.

Targets: the Corpus URL must be admitted by --allowed-target-urls (URL
prefixes matched on whole path segments, as the operator's flag), so a
manifest from elsewhere cannot send your credentials to its own host.
Redirects are never followed.

flags:
  --allowed-target-urls L  comma-separated URL prefixes the corpus may use (required
                    unless --allow-any-target)
  --allow-any-target       allow any http(s) corpus URL
  --k N             rank cutoff (default: the suite's spec.k, else 10)
  --format F        text (default) or json
  --min-recall X    override the suite's gates.minRecall (0..1)
  --min-mrr X       override the suite's gates.minMRR (0..1)
  --evidence FILE   also write the run's frozen evidence (the SuiteRun's
                    evidence.json format) to FILE, for ragcanary eval --replay

See docs/eval.md ("Live mode").
`

// liveConfig is the parsed live-mode command line.
type liveConfig struct {
	files  []string
	format string
	// k is 0 when the suite's k applies.
	k                 int
	minRecall, minMRR *float64
	// allow is the target allowlist from --allowed-target-urls.
	allow target.Allowlist
	// evidence is the file the frozen evidence goes to; empty for none.
	evidence string
}

// isLiveInvocation reports whether args ask for live mode.
func isLiveInvocation(args []string) bool {
	for _, a := range args {
		if a == "--" {
			return false
		}
		name := strings.TrimLeft(a, "-")
		if a != name && (name == "suite" || strings.HasPrefix(name, "suite=")) {
			return true
		}
	}
	return false
}

// errLiveInput is invalid live-mode input: exit 2.
type errLiveInput struct{ msg string }

func (e *errLiveInput) Error() string { return e.msg }

func inputError(format string, args ...any) error {
	return &errLiveInput{msg: fmt.Sprintf(format, args...)}
}

func runEvalLive(args []string, stdout, stderr io.Writer) int {
	cfg, err := parseLiveArgs(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		fmt.Fprintf(stderr, "ragcanary eval: %v\nrun 'ragcanary eval --suite x --help' for usage\n", err)
		return exitInvalid
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	res, err := runLive(ctx, cfg, os.LookupEnv, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "ragcanary eval: %v\n", err)
		return exitInvalid
	}
	if err := writeEvidence(cfg.evidence, res); err != nil {
		fmt.Fprintf(stderr, "ragcanary eval: writing evidence: %v\n", err)
		return exitInvalid
	}
	report := suite.FinalReport(res)
	if err := writeReport(stdout, cfg.format, report); err != nil {
		fmt.Fprintf(stderr, "ragcanary eval: writing report: %v\n", err)
		return exitInvalid
	}
	// The JSON report keeps the offline schema, so the list of executions
	// without a reply goes to stderr; the text report shows it inline.
	errOut := stderr
	if cfg.format == "text" {
		errOut = stdout
		if len(res.Errored) > 0 {
			fmt.Fprintln(stdout)
		}
	}
	if err := writeProbeErrors(errOut, res.Errored); err != nil {
		fmt.Fprintf(stderr, "ragcanary eval: writing report: %v\n", err)
		return exitInvalid
	}
	if !res.Passed {
		return exitFailed
	}
	return exitOK
}

func parseLiveArgs(args []string, stderr io.Writer) (liveConfig, error) {
	cfg := liveConfig{}
	fs := flag.NewFlagSet("eval", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	var suites, corpora, personas fileList
	fs.Var(&suites, "suite", "")
	fs.Var(&corpora, "corpus", "")
	fs.Var(&personas, "personas", "")
	k := fs.Int("k", 0, "")
	fs.StringVar(&cfg.format, "format", "text", "")
	fs.Var(optionalFloat{&cfg.minRecall}, "min-recall", "")
	fs.Var(optionalFloat{&cfg.minMRR}, "min-mrr", "")
	fs.StringVar(&cfg.evidence, "evidence", "", "")
	allowed := fs.String("allowed-target-urls", "", "")
	anyTarget := fs.Bool("allow-any-target", false, "")
	err := fs.Parse(args)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(stderr, evalLiveUsage)
		return cfg, err
	}
	if err != nil {
		return cfg, err
	}
	if fs.NArg() > 0 {
		return cfg, fmt.Errorf("live mode takes no file arguments, got %q: pass files with --suite, --corpus and --personas", fs.Arg(0))
	}
	if len(suites) == 0 {
		return cfg, errors.New("--suite is required")
	}
	cfg.files = append(append(append(cfg.files, suites...), corpora...), personas...)
	if *k < 0 || (*k == 0 && flagSet(fs, "k")) {
		return cfg, fmt.Errorf("--k must be at least 1, got %d", *k)
	}
	cfg.k = *k
	if cfg.allow, err = target.AllowlistFromFlags(*allowed, *anyTarget); err != nil {
		return cfg, err
	}
	if cfg.format != "text" && cfg.format != "json" {
		return cfg, fmt.Errorf("--format must be text or json, got %q", cfg.format)
	}
	return cfg, nil
}

func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// fileList is a repeatable file flag.
type fileList []string

func (l *fileList) String() string { return strings.Join(*l, ",") }

func (l *fileList) Set(s string) error {
	if s == "" {
		return errors.New("empty file name")
	}
	*l = append(*l, s)
	return nil
}

// runLive loads the manifests, resolves the suite with the controller's
// loader and validator, and executes and scores it with the controller's
// executor and scoring. Errors are invalid input (exit 2); a finished run,
// passed or not, is a Result.
func runLive(ctx context.Context, cfg liveConfig, env func(string) (string, bool), notes io.Writer) (suite.Result, error) {
	m, err := manifests.Load(cfg.files, notes)
	if err != nil {
		return suite.Result{}, asInputError(err)
	}
	s, err := m.Suite()
	if err != nil {
		return suite.Result{}, asInputError(err)
	}
	m.NormalizeNamespaces(s.Namespace)
	m.OverlayEnv(env)
	def, err := suite.Resolve(ctx, m, s)
	if err != nil {
		return suite.Result{}, problemError(err)
	}
	gates, err := suite.ParseGates(s.Spec.Gates)
	if err != nil {
		return suite.Result{}, problemError(err)
	}
	if cfg.minRecall != nil {
		gates.MinRecall = cfg.minRecall
	}
	if cfg.minMRR != nil {
		gates.MinMRR = cfg.minMRR
	}
	plan, err := suite.Freeze(def, s, gates, cfg.k, time.Now())
	if err != nil {
		return suite.Result{}, problemError(err)
	}
	t, corpus, err := liveTarget(ctx, m, cfg.allow, plan, def)
	if err != nil {
		return suite.Result{}, err
	}
	res, cleanup, err := suite.RunPlan(ctx, suite.Run{Plan: plan, Target: t, Source: corpus.Driver, Prefix: livePrefix(),
		Corpus: suite.CorpusSnapshot(ctx, corpus, def.Corpus)})
	if cleanup != nil {
		// The verdict stands; the leftovers are named so they can be removed.
		fmt.Fprintf(notes, "ragcanary eval: removing the fixture failed; documents may remain at the target: %s\n", suite.ErrorText(cleanup))
	}
	var setup *suite.SetupError
	if errors.As(err, &setup) {
		return suite.Result{}, inputError("%s: %v", setup.Reason, setup.Err)
	}
	if err != nil {
		return suite.Result{}, fmt.Errorf("interrupted before every execution finished; nothing was scored: %w", err)
	}
	if res.Evidence != nil {
		res.Evidence.CreatedAt = time.Now().UTC().Format(time.RFC3339)
	}
	return res, nil
}

// livePrefix scopes a live run's fixture: random, so two live runs (or a
// live run and a SuiteRun) against one target never share a document.
func livePrefix() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return "live-" + hex.EncodeToString(b)
}

// problemError keeps a *suite.Problem's message, which names the case,
// persona or ConfigMap, and marks anything else as unexpected.
func problemError(err error) error {
	var p *suite.Problem
	if errors.As(err, &p) {
		return inputError("%s: %s", p.Reason, p.Message)
	}
	return err
}

// liveTarget builds what suite.Execute needs through the door, as the
// controller does: credentials from the manifests (or environment), the
// allowlist from the flags, and a private limiter at the corpus's rate, with
// the operator's default where the corpus sets none, so CI and the cluster
// load a target alike.
func liveTarget(ctx context.Context, m *manifests.Set, allow target.Allowlist, plan *suite.Plan, def *suite.Definition) (suite.Target, *target.Corpus, error) {
	c := def.Corpus
	// Checked here for a message that names the environment variable too.
	for _, r := range c.Spec.SecretRefs() {
		if _, err := m.Credential(c.Namespace, r.Ref); err != nil {
			return suite.Target{}, nil, inputError("Corpus %q: %s: %v", c.Name, r.Field, err)
		}
	}
	for name, p := range def.Personas {
		for _, r := range p.Spec.SecretRefs() {
			if _, err := m.Credential(p.Namespace, r.Ref); err != nil {
				return suite.Target{}, nil, inputError("Persona %q: %s: %v", name, r.Field, err)
			}
		}
	}
	t, corpus, err := suite.BuildTarget(ctx, &target.Door{Reader: m, Allow: allow, DefaultLimit: target.DefaultLimit}, plan, c, def.Personas)
	if p, ok := target.IsUserProblem(err); ok {
		return suite.Target{}, nil, inputError("%s: %s", p.Reason, p.Message)
	}
	if err != nil {
		return suite.Target{}, nil, inputError("%v", err)
	}
	return t, corpus, nil
}

// writeEvidence writes the frozen evidence to path, when one is given.
func writeEvidence(path string, res suite.Result) error {
	if path == "" || res.Evidence == nil {
		return nil
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := scoring.WriteEvidence(f, res.Evidence); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

// asInputError keeps a manifests.InputError's message as invalid input.
func asInputError(err error) error {
	var ie *manifests.InputError
	if errors.As(err, &ie) {
		return inputError("%s", ie.Msg)
	}
	return err
}

// writeProbeErrors lists executions without a reply, with sanitized errors.
func writeProbeErrors(w io.Writer, errored []suite.Execution) error {
	if len(errored) == 0 {
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "PROBE ERRORS (%d executions got no usable reply and were not scored)\n", len(errored))
	fmt.Fprintln(tw, "CASE\tPERSONA\tERROR")
	for _, x := range errored {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", x.CaseID, x.Persona, suite.ErrorText(x.Err))
	}
	return tw.Flush()
}

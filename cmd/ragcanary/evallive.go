package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/signal"
	"reflect"
	"strings"
	"syscall"
	"text/tabwriter"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/corpusdriver"
	"github.com/ragcanary/ragcanary/internal/probe"
	"github.com/ragcanary/ragcanary/internal/scoring"
	"github.com/ragcanary/ragcanary/internal/suite"
)

const evalLiveUsage = `usage: ragcanary eval --suite SUITE.yaml --corpus CORPUS.yaml --personas PERSONAS.yaml
                      [--k N] [--format text|json] [--min-recall X] [--min-mrr X]

Live mode: runs an EvalSuite against its corpus's real target, exactly as a
SuiteRun does in the cluster, and prints the same report. The files hold
Kubernetes manifests (multi-document YAML): one EvalSuite, its Corpus, the
Personas it names, and optionally Secrets and case ConfigMaps. Each flag may
be repeated. Exit status: 0 every gate passed, 1 a gate failed (including
no_probe_errors), 2 invalid input, or interrupted before anything was scored.

Credentials: a Secret key named by the Corpus or a Persona is taken from
$RAGCANARY_SECRET_<SECRET>_<KEY> (upper case, '-' and '.' as '_') when set,
else from a Secret manifest in the given files.

flags:
  --k N             rank cutoff (default: the suite's spec.k, else 10)
  --format F        text (default) or json
  --min-recall X    override the suite's gates.minRecall (0..1)
  --min-mrr X       override the suite's gates.minMRR (0..1)

See docs/eval.md ("Live mode").
`

// SecretEnvPrefix starts the environment variable holding a Secret key.
const SecretEnvPrefix = "RAGCANARY_SECRET_"

// liveConfig is the parsed live-mode command line.
type liveConfig struct {
	files  []string
	format string
	// k is 0 when the suite's k applies.
	k                 int
	minRecall, minMRR *float64
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
	report := liveReport(res)
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
	m, err := loadManifests(cfg.files, notes)
	if err != nil {
		return suite.Result{}, err
	}
	s, err := m.theSuite()
	if err != nil {
		return suite.Result{}, err
	}
	m.normalizeNamespaces(s.Namespace)
	m.overlayEnv(env)
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
	target, err := m.target(ctx, s, def, cfg.k)
	if err != nil {
		return suite.Result{}, err
	}
	execs, err := suite.Execute(ctx, target, def.Cases)
	if err != nil {
		return suite.Result{}, fmt.Errorf("interrupted before every execution finished; nothing was scored: %w", err)
	}
	return suite.Score(def.Cases, execs, target.K, gates)
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

// target builds what suite.Execute needs with the controller's builder:
// credentials from the manifests (or environment), and a private limiter at
// the corpus's rate, with the operator's default where the corpus sets none,
// so CI and the cluster load a target alike.
func (m *manifests) target(ctx context.Context, s *v1alpha1.EvalSuite, def *suite.Definition, k int) (suite.Target, error) {
	c := def.Corpus
	if c.Spec.Driver.Type == v1alpha1.DriverHTTP && c.Spec.Driver.HTTP != nil {
		if err := checkTargetURL(c.Spec.Driver.HTTP.URL); err != nil {
			return suite.Target{}, inputError("Corpus %q: %v", c.Name, err)
		}
		// Checked here for a message that names the environment variable too.
		if _, err := m.credential(c.Namespace, c.Spec.Driver.HTTP.CredentialSecretRef); err != nil {
			return suite.Target{}, inputError("Corpus %q: %v", c.Name, err)
		}
	}
	limiters := probe.NewLimiters(clock.RealClock{})
	limiters.Set(c.Name, probe.CorpusLimit(c, probe.DefaultLimit))
	t, err := suite.BuildTarget(ctx, suite.TargetSource{
		Drivers: &corpusdriver.Builder{Reader: m},
		Credential: func(_ context.Context, ns string, ref v1alpha1.SecretKeyReference) ([]byte, error) {
			return m.credential(ns, ref)
		},
		Wait: func(ctx context.Context) error { return limiters.Wait(ctx, c.Name) },
	}, s, def, k)
	if reason, _, ok := corpusdriver.IsUserProblem(err); ok {
		return suite.Target{}, inputError("%s: %v", reason, err)
	}
	if err != nil {
		return suite.Target{}, inputError("%v", err)
	}
	return t, nil
}

// checkTargetURL enforces what the CRD's validation enforces in a cluster.
func checkTargetURL(raw string) error {
	u, err := url.Parse(raw)
	switch {
	case err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https"):
		return errors.New("spec.driver.http.url must be an absolute http or https URL")
	case u.User != nil:
		return errors.New("spec.driver.http.url must not embed credentials; use credentialSecretRef")
	}
	return nil
}

// liveReport is the scoring report with the probe-error gate appended, as
// status.gates has it: executions without a reply were never scored, and
// the verdict says so.
func liveReport(res suite.Result) scoring.Report {
	r := res.Report
	errs := float64(len(res.Errored))
	r.Gates = append(append([]scoring.Gate{}, r.Gates...),
		scoring.Gate{Name: suite.GateProbeErrors, Passed: errs == 0, Value: &errs, Threshold: 0})
	r.Passed = res.Passed
	return r
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

// manifests are the objects of the given files, keyed by Go type,
// namespace and name. It serves them as a client.Reader so suite.Resolve
// and the corpus driver factory read them exactly as they read a cluster.
type manifests struct {
	objs  map[objectKey]client.Object
	order []objectKey
	// suites are the EvalSuites found, with the file each came from.
	suites []*v1alpha1.EvalSuite
}

type objectKey struct {
	typ             reflect.Type
	namespace, name string
}

func keyOf(obj client.Object) objectKey {
	return objectKey{typ: reflect.TypeOf(obj).Elem(), namespace: obj.GetNamespace(), name: obj.GetName()}
}

// kinds are the manifests live mode reads; anything else is skipped.
var kinds = map[schema.GroupVersionKind]func() client.Object{
	v1alpha1.GroupVersion.WithKind("EvalSuite"):  func() client.Object { return &v1alpha1.EvalSuite{} },
	v1alpha1.GroupVersion.WithKind("Corpus"):     func() client.Object { return &v1alpha1.Corpus{} },
	v1alpha1.GroupVersion.WithKind("Persona"):    func() client.Object { return &v1alpha1.Persona{} },
	corev1.SchemeGroupVersion.WithKind("Secret"): func() client.Object { return &corev1.Secret{} },
	corev1.SchemeGroupVersion.WithKind("ConfigMap"): func() client.Object {
		return &corev1.ConfigMap{}
	},
}

// loadManifests decodes every document of every file strictly.
func loadManifests(files []string, notes io.Writer) (*manifests, error) {
	m := &manifests{objs: map[objectKey]client.Object{}}
	for _, path := range files {
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, inputError("%v", err)
		}
		r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
		for doc := 1; ; doc++ {
			raw, err := r.Read()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return nil, inputError("%s: document %d: not YAML: %v", path, doc, err)
			}
			if err := m.add(path, doc, raw, notes); err != nil {
				return nil, err
			}
		}
	}
	return m, nil
}

// add decodes one document. A Secret's decoding error is reported without
// the decoder's text, which could quote part of a value.
func (m *manifests) add(path string, doc int, raw []byte, notes io.Writer) error {
	where := fmt.Sprintf("%s: document %d", path, doc)
	var tm metav1.TypeMeta
	if err := yaml.Unmarshal(raw, &tm); err != nil {
		return inputError("%s: not a Kubernetes manifest: %v", where, err)
	}
	if tm.APIVersion == "" && tm.Kind == "" {
		var anything any
		if err := yaml.Unmarshal(raw, &anything); err == nil && anything == nil {
			return nil // an empty document, such as a trailing "---"
		}
		return inputError("%s: not a Kubernetes manifest: apiVersion and kind are missing", where)
	}
	newObj, ok := kinds[schema.FromAPIVersionAndKind(tm.APIVersion, tm.Kind)]
	if !ok {
		fmt.Fprintf(notes, "ragcanary eval: %s: ignoring %s %s\n", where, tm.APIVersion, tm.Kind)
		return nil
	}
	obj := newObj()
	if err := yaml.UnmarshalStrict(raw, obj); err != nil {
		if tm.Kind == "Secret" {
			return inputError("%s: Secret %q is not a valid Secret manifest (check field names and that data values are base64)",
				where, nameOf(raw))
		}
		return inputError("%s: invalid %s: %v", where, tm.Kind, err)
	}
	if obj.GetName() == "" {
		return inputError("%s: %s has no metadata.name", where, tm.Kind)
	}
	if sec, ok := obj.(*corev1.Secret); ok {
		mergeStringData(sec)
	}
	if s, ok := obj.(*v1alpha1.EvalSuite); ok {
		m.suites = append(m.suites, s)
	}
	key := keyOf(obj)
	if _, dup := m.objs[key]; dup {
		return inputError("%s: %s %q appears twice in the given files", where, tm.Kind, obj.GetName())
	}
	m.objs[key] = obj
	m.order = append(m.order, key)
	return nil
}

// nameOf reads metadata.name alone, for a message about a broken object.
func nameOf(raw []byte) string {
	var meta struct {
		Metadata struct {
			Name string `json:"name"`
		} `json:"metadata"`
	}
	_ = yaml.Unmarshal(raw, &meta)
	return meta.Metadata.Name
}

// mergeStringData applies stringData over data, as the API server does.
func mergeStringData(s *corev1.Secret) {
	if len(s.StringData) == 0 {
		return
	}
	if s.Data == nil {
		s.Data = map[string][]byte{}
	}
	for k, v := range s.StringData {
		s.Data[k] = []byte(v)
	}
	s.StringData = nil
}

// theSuite is the one EvalSuite of the given files.
func (m *manifests) theSuite() (*v1alpha1.EvalSuite, error) {
	switch len(m.suites) {
	case 1:
		return m.suites[0], nil
	case 0:
		return nil, inputError("no EvalSuite (apiVersion %s) in the given files", v1alpha1.GroupVersion)
	default:
		return nil, inputError("%d EvalSuites in the given files; live mode runs exactly one", len(m.suites))
	}
}

// normalizeNamespaces puts objects without a namespace into the suite's
// (or "default"), as kubectl apply would. Objects in another namespace stay
// there and, as in a cluster, are not found by the suite.
func (m *manifests) normalizeNamespaces(suiteNS string) {
	if suiteNS == "" {
		suiteNS = metav1.NamespaceDefault
	}
	objs := make(map[objectKey]client.Object, len(m.objs))
	for i, key := range m.order {
		obj := m.objs[key]
		if obj.GetNamespace() == "" {
			obj.SetNamespace(suiteNS)
		}
		m.order[i] = keyOf(obj)
		objs[m.order[i]] = obj
	}
	m.objs = objs
}

// SecretEnvName is the environment variable that supplies key of Secret
// name: RAGCANARY_SECRET_<NAME>_<KEY>, upper case, '-' and '.' as '_'.
func SecretEnvName(name, key string) string {
	norm := strings.NewReplacer("-", "_", ".", "_").Replace
	return SecretEnvPrefix + strings.ToUpper(norm(name)) + "_" + strings.ToUpper(norm(key))
}

// overlayEnv puts every credential that the environment supplies for a
// Corpus or Persona reference into the Secret it names, over any value a
// manifest gave: the pipeline's secret store wins over a file.
func (m *manifests) overlayEnv(env func(string) (string, bool)) {
	for _, ref := range m.secretRefs() {
		value, ok := env(SecretEnvName(ref.name, ref.key))
		if !ok || value == "" {
			continue
		}
		key := objectKey{typ: reflect.TypeFor[corev1.Secret](), namespace: ref.namespace, name: ref.name}
		sec, _ := m.objs[key].(*corev1.Secret)
		if sec == nil {
			sec = &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ref.namespace, Name: ref.name}}
			m.objs[key] = sec
			m.order = append(m.order, key)
		}
		if sec.Data == nil {
			sec.Data = map[string][]byte{}
		}
		sec.Data[ref.key] = []byte(value)
	}
}

type secretRef struct{ namespace, name, key string }

func (m *manifests) secretRefs() []secretRef {
	var refs []secretRef
	for _, key := range m.order {
		switch o := m.objs[key].(type) {
		case *v1alpha1.Corpus:
			if h := o.Spec.Driver.HTTP; h != nil {
				refs = append(refs, secretRef{o.Namespace, h.CredentialSecretRef.Name, h.CredentialSecretRef.Key})
			}
			if p := o.Spec.Driver.Postgres; p != nil {
				refs = append(refs, secretRef{o.Namespace, p.DSNSecretRef.Name, p.DSNSecretRef.Key})
			}
		case *v1alpha1.Persona:
			refs = append(refs, secretRef{o.Namespace, o.Spec.CredentialSecretRef.Name, o.Spec.CredentialSecretRef.Key})
		}
	}
	return refs
}

// credential returns a Secret key's value. The error names the Secret, the
// key and the variable to set, never a value.
func (m *manifests) credential(namespace string, ref v1alpha1.SecretKeyReference) ([]byte, error) {
	key := objectKey{typ: reflect.TypeFor[corev1.Secret](), namespace: namespace, name: ref.Name}
	if sec, ok := m.objs[key].(*corev1.Secret); ok && len(sec.Data[ref.Key]) > 0 {
		return sec.Data[ref.Key], nil
	}
	return nil, fmt.Errorf("missing credential: Secret %q key %q is neither set in $%s nor in a Secret manifest in the given files",
		ref.Name, ref.Key, SecretEnvName(ref.Name, ref.Key))
}

// Get implements client.Reader over the loaded objects.
func (m *manifests) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	stored, ok := m.objs[objectKey{typ: reflect.TypeOf(obj).Elem(), namespace: key.Namespace, name: key.Name}]
	if !ok {
		return apierrors.NewNotFound(schema.GroupResource{Resource: reflect.TypeOf(obj).Elem().Name()}, key.Name)
	}
	reflect.ValueOf(obj).Elem().Set(reflect.ValueOf(stored.DeepCopyObject()).Elem())
	return nil
}

// List implements client.Reader; nothing in live mode lists.
func (m *manifests) List(context.Context, client.ObjectList, ...client.ListOption) error {
	return errors.New("listing is not supported in live mode")
}

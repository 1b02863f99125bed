package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/conformance"
	"github.com/ragcanary/ragcanary/internal/manifests"
	"github.com/ragcanary/ragcanary/internal/target"
)

// runRESTConformance checks the REST source of the Corpus in --corpus:
// each declared operation once, through the operator's door.
func runRESTConformance(opts conformanceOptions, stdout, stderr io.Writer) int {
	ctx := context.Background()
	cfg, release, err := opts.restConfig(ctx, os.LookupEnv)
	if err != nil {
		fmt.Fprintf(stderr, "ragcanary conformance: %v\n", err)
		return exitInvalid
	}
	defer release()
	report := conformance.RunREST(ctx, cfg)
	printReport(stdout, report)
	if !report.Passed() {
		fmt.Fprintf(stderr, "ragcanary conformance: failed checks: %s\n", strings.Join(report.Failed(), ", "))
		return exitFailed
	}
	return exitOK
}

// restConfig reads the Corpus (and any Secret and Persona manifests) of
// --corpus and builds its REST source through the door, as the operator
// does: allowlist, address rules, credential Secret, bounds. The source
// credential comes from $<--source-token-env> when set, else as in eval's
// live mode ($RAGCANARY_SECRET_<SECRET>_<KEY>, or a labelled Secret
// manifest in the file).
func (o conformanceOptions) restConfig(ctx context.Context, env func(string) (string, bool)) (conformance.RESTConfig, func(), error) {
	none := func() {}
	switch {
	case o.url != "" || o.surfaces != "":
		return conformance.RESTConfig{}, none, errors.New("--corpus checks a REST source: it takes neither --url nor --surfaces")
	case o.personaPrincipal == "":
		return conformance.RESTConfig{}, none, errors.New("--persona-principal is required: the subject grant, revoke and addToGroup name")
	case o.timeout <= 0 || o.pollInterval <= 0:
		return conformance.RESTConfig{}, none, errors.New("--timeout and --poll-interval must be positive")
	}
	corpus, m, personas, err := loadRESTCorpus(o.corpus)
	if err != nil {
		return conformance.RESTConfig{}, none, err
	}
	m.OverlayEnv(o.sourceEnv(corpus, env))
	if a := corpus.Spec.Driver.REST.Auth; a != nil {
		if _, err := m.Credential(corpus.Namespace, a.SecretRef); err != nil {
			return conformance.RESTConfig{}, none, fmt.Errorf("Corpus %q: %v, and $%s is not set", corpus.Name, err, o.sourceTokenEnv)
		}
	}
	allowed := o.allowedURLs
	if allowed == "" {
		allowed = strings.Join(restURLs(corpus), ",")
	}
	allow, err := target.AllowlistFromFlags(allowed, false)
	if err != nil {
		return conformance.RESTConfig{}, none, err
	}
	door := &target.Door{Reader: m, Allow: allow, DefaultLimit: target.DefaultLimit}
	c, err := door.Corpus(ctx, corpus)
	if p, ok := target.IsUserProblem(err); ok {
		return conformance.RESTConfig{}, none, fmt.Errorf("Corpus %q: %s: %s", corpus.Name, p.Reason, p.Message)
	}
	if err != nil {
		return conformance.RESTConfig{}, none, fmt.Errorf("Corpus %q: %v", corpus.Name, err)
	}
	return conformance.RESTConfig{Source: c.Source(), Subject: o.personaPrincipal, Group: o.groupFor(personas),
		Timeout: o.timeout, PollInterval: o.pollInterval}, c.Release, nil
}

// sourceEnv supplies the Corpus's credential from --source-token-env when
// that variable is set, and every other variable as env does.
func (o conformanceOptions) sourceEnv(corpus *v1alpha1.Corpus, env func(string) (string, bool)) func(string) (string, bool) {
	a := corpus.Spec.Driver.REST.Auth
	return func(name string) (string, bool) {
		if a != nil && name == manifests.SecretEnvName(a.SecretRef.Name, a.SecretRef.Key) {
			if v, ok := env(o.sourceTokenEnv); ok && v != "" {
				return v, true
			}
		}
		return env(name)
	}
}

// groupFor is --group, else the first group of a Persona in the file
// whose subject is --persona-principal.
func (o conformanceOptions) groupFor(personas []*v1alpha1.Persona) string {
	if o.group != "" {
		return o.group
	}
	for _, p := range personas {
		if p.Spec.Subject == o.personaPrincipal && len(p.Spec.Groups) > 0 {
			return p.Spec.Groups[0]
		}
	}
	return ""
}

// restURLs are the URLs a REST corpus names, allowed by default: the user
// named them in the file.
func restURLs(c *v1alpha1.Corpus) []string {
	r := c.Spec.Driver.REST
	out := []string{r.URL}
	if r.Auth != nil && r.Auth.Type == v1alpha1.RESTAuthOAuth2ClientCredentials {
		out = append(out, r.Auth.TokenURL)
	}
	return append(out, c.Spec.Surfaces.URLs()...)
}

// loadRESTCorpus reads the one Corpus of path, which must be a REST
// source, and the Personas beside it.
func loadRESTCorpus(path string) (*v1alpha1.Corpus, *manifests.Set, []*v1alpha1.Persona, error) {
	m, err := manifests.Load([]string{path}, io.Discard)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("--corpus: %v", err)
	}
	corpora, personas, err := objectNames(path)
	if err != nil {
		return nil, nil, nil, err
	}
	if len(corpora) != 1 {
		return nil, nil, nil, fmt.Errorf("--corpus: %s holds %d Corpora, want exactly one", path, len(corpora))
	}
	ns := corpora[0].Namespace
	if ns == "" {
		ns = metav1.NamespaceDefault
	}
	m.NormalizeNamespaces(ns)
	corpus := &v1alpha1.Corpus{}
	if err := m.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: corpora[0].Name}, corpus); err != nil {
		return nil, nil, nil, fmt.Errorf("--corpus: %v", err)
	}
	if corpus.Spec.Driver.Type != v1alpha1.DriverREST || corpus.Spec.Driver.REST == nil {
		return nil, nil, nil, fmt.Errorf("--corpus: Corpus %q has driver type %q; --corpus checks a REST source (spec.driver.type: REST with spec.driver.rest), --url a contract target",
			corpus.Name, corpus.Spec.Driver.Type)
	}
	var ps []*v1alpha1.Persona
	for _, n := range personas {
		p := &v1alpha1.Persona{}
		key := types.NamespacedName{Namespace: n.Namespace, Name: n.Name}
		if key.Namespace == "" {
			key.Namespace = ns
		}
		if err := m.Get(context.Background(), key, p); err == nil {
			ps = append(ps, p)
		}
	}
	return corpus, m, ps, nil
}

// objectNames are the names of the Corpora and Personas in path, in order.
func objectNames(path string) (corpora, personas []types.NamespacedName, err error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("--corpus: %w", err)
	}
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for {
		raw, err := r.Read()
		if errors.Is(err, io.EOF) {
			return corpora, personas, nil
		}
		if err != nil {
			return nil, nil, fmt.Errorf("--corpus: %s: not YAML: %v", path, err)
		}
		var head struct {
			metav1.TypeMeta   `json:",inline"`
			metav1.ObjectMeta `json:"metadata"`
		}
		if yaml.Unmarshal(raw, &head) != nil || head.APIVersion != v1alpha1.GroupVersion.String() {
			continue
		}
		name := types.NamespacedName{Namespace: head.Namespace, Name: head.Name}
		switch head.Kind {
		case "Corpus":
			corpora = append(corpora, name)
		case "Persona":
			if !slices.Contains(personas, name) {
				personas = append(personas, name)
			}
		}
	}
}

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/conformance"
	"github.com/ragcanary/ragcanary/internal/driver"
	"github.com/ragcanary/ragcanary/internal/target"
)

func init() {
	register("conformance", subcommand{
		summary: "check a RAG service against the driver contract (create, grant, visible, revoke, excluded, delete), or a REST source's declared operations (--corpus)",
		run:     runConformance,
	})
}

// conformanceOptions are the parsed flags. Credentials are read from the
// environment variables the flags name, so they never appear in argv.
type conformanceOptions struct {
	url              string
	sourceTokenEnv   string
	personaTokenEnv  string
	personaPrincipal string
	timeout          time.Duration
	pollInterval     time.Duration
	requestTimeout   time.Duration
	allowedURLs      string
	surfaces         string
	corpus           string
	group            string
}

func runConformance(args []string, stdout, stderr io.Writer) int {
	opts, err := parseConformanceFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		fmt.Fprintf(stderr, "ragcanary conformance: %v\n", err)
		return exitInvalid
	}
	if opts.corpus != "" {
		return runRESTConformance(opts, stdout, stderr)
	}
	cfg, err := opts.config()
	if err != nil {
		fmt.Fprintf(stderr, "ragcanary conformance: %v\n", err)
		return exitInvalid
	}
	report := conformance.Run(context.Background(), cfg)
	printReport(stdout, report)
	if !report.Passed() {
		fmt.Fprintf(stderr, "ragcanary conformance: failed checks: %s\n", strings.Join(report.Failed(), ", "))
		return exitFailed
	}
	return exitOK
}

func parseConformanceFlags(args []string, stderr io.Writer) (conformanceOptions, error) {
	var o conformanceOptions
	fs := flag.NewFlagSet("ragcanary conformance", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.url, "url", "", "base URL of the driver contract implementation (required)")
	fs.StringVar(&o.sourceTokenEnv, "source-token-env", "RAGCANARY_SOURCE_TOKEN", "environment variable holding the source credential")
	fs.StringVar(&o.personaTokenEnv, "persona-token-env", "RAGCANARY_PERSONA_TOKEN", "environment variable holding the persona's bearer token")
	fs.StringVar(&o.personaPrincipal, "persona-principal", "", "principal the persona token resolves to, e.g. user:alice (required)")
	fs.DurationVar(&o.timeout, "timeout", 2*time.Minute, "how long to wait for the document to become visible and to be excluded")
	fs.DurationVar(&o.pollInterval, "poll-interval", time.Second, "pause between probes while waiting")
	fs.DurationVar(&o.requestTimeout, "request-timeout", 10*time.Second, "timeout of each request")
	fs.StringVar(&o.allowedURLs, "allowed-target-urls", "", "comma-separated URL prefixes the check may call, matched on whole path segments as the operator's flag (default: exactly --url and the declared surfaces' URLs)")
	fs.StringVar(&o.surfaces, "surfaces", "", "YAML file with a Corpus, or its spec.surfaces block: probe Search, Answer, Conversation and Stream through the assistant's own APIs as declared")
	fs.StringVar(&o.corpus, "corpus", "", "YAML file with a REST source Corpus (spec.driver.type: REST), and optionally its Secret and Personas: send each declared operation once instead of checking a contract --url")
	fs.StringVar(&o.group, "group", "", "with --corpus: the group grantGroup, revokeGroup, addToGroup and removeFromGroup name (default: the first spec.groups of a Persona in the file whose subject is --persona-principal)")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments: %s", strings.Join(fs.Args(), " "))
	}
	return o, nil
}

// config validates the options and builds the checker's configuration.
func (o conformanceOptions) config() (conformance.Config, error) {
	switch {
	case o.url == "":
		return conformance.Config{}, errors.New("--url (a contract target) or --corpus (a REST source) is required")
	case o.personaPrincipal == "":
		return conformance.Config{}, errors.New("--persona-principal is required")
	case o.timeout <= 0 || o.pollInterval <= 0 || o.requestTimeout <= 0:
		return conformance.Config{}, errors.New("--timeout, --poll-interval and --request-timeout must be positive")
	}
	source, persona := os.Getenv(o.sourceTokenEnv), os.Getenv(o.personaTokenEnv)
	if source == "" || persona == "" {
		return conformance.Config{}, fmt.Errorf("environment variables %s and %s must hold the source and persona tokens", o.sourceTokenEnv, o.personaTokenEnv)
	}
	declared, err := readSurfaces(o.surfaces)
	if err != nil {
		return conformance.Config{}, err
	}
	allowed := o.allowedURLs
	if allowed == "" {
		allowed = strings.Join(append([]string{o.url}, declared.URLs()...), ",")
	}
	allow, err := target.AllowlistFromFlags(allowed, false)
	if err != nil {
		return conformance.Config{}, err
	}
	// The same door as the operator: normalised URL, allowlist, no redirects.
	door := &target.Door{Allow: allow}
	u, err := allow.Check("--url", o.url)
	if err != nil {
		return conformance.Config{}, err
	}
	drv, err := door.HTTPDriver(u.String(), source, o.requestTimeout)
	if err != nil {
		return conformance.Config{}, err
	}
	if declared != nil {
		// The persona's and the source's keys may travel only in their
		// headers: never in a template, which the invalid-token check
		// would send too.
		known := []driver.Token{driver.Token(persona), driver.Token(source)}
		if drv, err = door.WithSurfaces(drv, "conformance", declared, o.requestTimeout, nil, known...); err != nil {
			return conformance.Config{}, err
		}
	}
	serves := declared.Serves()
	return conformance.Config{
		Chat:             slices.Contains(serves, v1alpha1.SurfaceAnswer),
		Stream:           slices.Contains(serves, v1alpha1.SurfaceStream),
		Driver:           drv,
		PersonaToken:     driver.Token(persona),
		PersonaPrincipal: o.personaPrincipal,
		Timeout:          o.timeout,
		PollInterval:     o.pollInterval,
	}, nil
}

func printReport(w io.Writer, r conformance.Report) {
	for _, res := range r.Results {
		if res.Detail == "" {
			fmt.Fprintf(w, "%s %s\n", res.Status, res.Name)
			continue
		}
		fmt.Fprintf(w, "%s %s: %s\n", res.Status, res.Name, res.Detail)
	}
}

// readSurfaces reads --surfaces: a Corpus manifest or its spec.surfaces
// block; nil when the flag is empty.
func readSurfaces(path string) (*v1alpha1.CorpusSurfaces, error) {
	if path == "" {
		return nil, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--surfaces: %w", err)
	}
	var corpus v1alpha1.Corpus
	if err := yaml.UnmarshalStrict(data, &corpus); err == nil && corpus.Kind == "Corpus" {
		if corpus.Spec.Surfaces == nil {
			return nil, fmt.Errorf("--surfaces: the Corpus in %s declares no spec.surfaces", path)
		}
		return corpus.Spec.Surfaces, nil
	}
	var block struct {
		Surfaces *v1alpha1.CorpusSurfaces `json:"surfaces"`
	}
	if err := yaml.UnmarshalStrict(data, &block); err != nil {
		return nil, fmt.Errorf("--surfaces: %s holds neither a Corpus nor a surfaces block: %w", path, err)
	}
	if block.Surfaces == nil {
		return nil, fmt.Errorf("--surfaces: %s declares no surfaces", path)
	}
	return block.Surfaces, nil
}

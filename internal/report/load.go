package report

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
)

// ErrAmbiguous is returned when a bare run name is both a CanaryRun and a
// SuiteRun; the caller names the kind (canaryrun/NAME or suiterun/NAME).
var ErrAmbiguous = errors.New("both a CanaryRun and a SuiteRun have this name")

// ErrNotFound is returned when no run of the asked kind has the name.
var ErrNotFound = errors.New("no such run")

// Ref is a run named on the command line: KIND/NAME or a bare NAME.
type Ref struct {
	// Kind is KindCanaryRun, KindSuiteRun, or empty for either.
	Kind string
	Name string
}

// kindAliases are the names kubectl knows these kinds by (singular, plural,
// short names from the CRDs), so "rcr/NAME" works as with kubectl get.
var kindAliases = map[string]string{
	"canaryrun": KindCanaryRun, "canaryruns": KindCanaryRun, "rcr": KindCanaryRun,
	"suiterun": KindSuiteRun, "suiteruns": KindSuiteRun, "rcsr": KindSuiteRun,
}

// ParseRef reads RUN as given to the report command.
func ParseRef(s string) (Ref, error) {
	kind, name, ok := strings.Cut(s, "/")
	if !ok {
		return Ref{Name: s}, validName(s)
	}
	k, known := kindAliases[strings.ToLower(strings.Split(kind, ".")[0])]
	if !known {
		return Ref{}, fmt.Errorf("%q is not a run kind: use canaryrun/NAME or suiterun/NAME", kind)
	}
	return Ref{Kind: k, Name: name}, validName(name)
}

func validName(name string) error {
	if name == "" || strings.Contains(name, "/") {
		return fmt.Errorf("%q is not a run name", name)
	}
	return nil
}

// Load reads the run and everything its report shows. A referenced object
// that is gone is recorded as not found; any other read error fails the
// report, since it would otherwise show as an absence.
func Load(ctx context.Context, c client.Reader, namespace string, ref Ref, now time.Time) (Evidence, error) {
	kind, err := resolveKind(ctx, c, namespace, ref)
	if err != nil {
		return Evidence{}, err
	}
	if kind == KindCanaryRun {
		return loadCanary(ctx, c, namespace, ref.Name, now)
	}
	return loadSuite(ctx, c, namespace, ref.Name, now)
}

// resolveKind finds which kind a bare name is.
func resolveKind(ctx context.Context, c client.Reader, namespace string, ref Ref) (string, error) {
	if ref.Kind != "" {
		return ref.Kind, nil
	}
	canary, err := get(ctx, c, namespace, ref.Name, &v1alpha1.CanaryRun{})
	if err != nil {
		return "", err
	}
	suiteRun, err := get(ctx, c, namespace, ref.Name, &v1alpha1.SuiteRun{})
	if err != nil {
		return "", err
	}
	switch {
	case canary && suiteRun:
		return "", fmt.Errorf("%s/%s: %w: name canaryrun/%s or suiterun/%s", namespace, ref.Name, ErrAmbiguous, ref.Name, ref.Name)
	case canary:
		return KindCanaryRun, nil
	case suiteRun:
		return KindSuiteRun, nil
	}
	return "", fmt.Errorf("%s/%s: %w: no CanaryRun or SuiteRun has this name", namespace, ref.Name, ErrNotFound)
}

// get reads one object; a missing object is (false, nil).
func get(ctx context.Context, c client.Reader, namespace, name string, obj client.Object) (bool, error) {
	if name == "" {
		return false, nil
	}
	err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, obj)
	switch {
	case err == nil:
		return true, nil
	case apierrors.IsNotFound(err):
		return false, nil
	}
	return false, fmt.Errorf("reading %T %s/%s: %w", obj, namespace, name, err)
}

func loadCanary(ctx context.Context, c client.Reader, namespace, name string, now time.Time) (Evidence, error) {
	run := &v1alpha1.CanaryRun{}
	found, err := get(ctx, c, namespace, name, run)
	if err != nil {
		return Evidence{}, err
	}
	if !found {
		return Evidence{}, fmt.Errorf("CanaryRun %s/%s: %w", namespace, name, ErrNotFound)
	}
	in := CanaryInput{Run: run, Controls: map[string]*v1alpha1.Persona{}}
	if in.Corpus, err = getCorpus(ctx, c, namespace, run.Spec.CorpusRef.Name); err != nil {
		return Evidence{}, err
	}
	if in.Persona, err = getPersona(ctx, c, namespace, run.Spec.PersonaRef.Name); err != nil {
		return Evidence{}, err
	}
	for _, ref := range run.Spec.ControlPersonaRefs {
		if in.Controls[ref.Name], err = getPersona(ctx, c, namespace, ref.Name); err != nil {
			return Evidence{}, err
		}
	}
	return BuildCanary(in, now), nil
}

func getCorpus(ctx context.Context, c client.Reader, namespace, name string) (*v1alpha1.Corpus, error) {
	obj := &v1alpha1.Corpus{}
	found, err := get(ctx, c, namespace, name, obj)
	if !found {
		return nil, err
	}
	return obj, nil
}

func getPersona(ctx context.Context, c client.Reader, namespace, name string) (*v1alpha1.Persona, error) {
	obj := &v1alpha1.Persona{}
	found, err := get(ctx, c, namespace, name, obj)
	if !found {
		return nil, err
	}
	return obj, nil
}

func loadSuite(ctx context.Context, c client.Reader, namespace, name string, now time.Time) (Evidence, error) {
	run := &v1alpha1.SuiteRun{}
	found, err := get(ctx, c, namespace, name, run)
	if err != nil {
		return Evidence{}, err
	}
	if !found {
		return Evidence{}, fmt.Errorf("SuiteRun %s/%s: %w", namespace, name, ErrNotFound)
	}
	in := SuiteInput{Run: run}
	s := &v1alpha1.EvalSuite{}
	if found, err = get(ctx, c, namespace, run.Spec.SuiteRef.Name, s); err != nil {
		return Evidence{}, err
	}
	if found {
		in.Suite = s
		if in.Corpus, err = getCorpus(ctx, c, namespace, s.Spec.CorpusRef.Name); err != nil {
			return Evidence{}, err
		}
	}
	if ref := run.Status.ReportConfigMapRef; ref != nil {
		cm := &corev1.ConfigMap{}
		in.ReportFound, err = get(ctx, c, namespace, ref.Name, cm)
		switch {
		case apierrors.IsForbidden(err):
			// A user who may read runs but not ConfigMaps still gets the
			// bounded list status keeps, and the report says so.
			in.ReportUnreadable = "forbidden"
		case err != nil:
			return Evidence{}, err
		}
		if in.ReportFound {
			// A found but empty ConfigMap decodes as an error, not as no failures.
			in.ReportData = cm.Data
			if in.ReportData == nil {
				in.ReportData = map[string]string{}
			}
		}
	}
	return BuildSuite(in, now)
}

package benchkit

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/dev/testutil/objects"
)

// CanariesPerCorpus keeps each corpus's probes (two per canary per interval
// with a control persona) well inside the largest rate limit a Corpus may
// declare, 1,000 requests/s.
const CanariesPerCorpus = 1000

// CorporaFor is the number of corpora n canaries are spread over.
func CorporaFor(n int) int { return max(1, (n+CanariesPerCorpus-1)/CanariesPerCorpus) }

// ShardNamespace is the i-th namespace: one corpus, its personas,
// credentials and up to 1,000 canaries each. A canary's reconcile lists its
// runs from the API server by label within its namespace, which the API
// server answers by scanning every run there: with the fleet in one
// namespace that is O(canaries) per reconcile and the fleet's start
// O(canaries²), and at 10,000 kube-apiserver's CPU was the setup's limit.
func ShardNamespace(i int) string { return fmt.Sprintf("bench-%02d", i) }

// CorpusName is every namespace's corpus.
const CorpusName = "target"

// Fleet describes the canaries a benchmark creates.
type Fleet struct {
	Canaries int
	// Corpora is the number of namespaces the canaries are spread over.
	Corpora int
	// Interval is every canary's probe interval.
	Interval time.Duration
	// Controls gives each canary a control persona (two probes per round).
	Controls bool
	// RunTimeout bounds each run's visibility and exclusion waits: longer
	// than the whole setup and window.
	RunTimeout time.Duration
}

// CanaryName is the i-th canary's name; it lives in ShardNamespace(i % corpora).
func CanaryName(i int) string { return fmt.Sprintf("canary-%05d", i) }

// NewScheme has the core kinds and ragcanary's.
func NewScheme() (*runtime.Scheme, error) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, err
	}
	return scheme, v1alpha1.AddToScheme(scheme)
}

// NewClient is the benchmark's own client, without client-side rate limits.
func NewClient(base *rest.Config, scheme *runtime.Scheme) (client.WithWatch, error) {
	cfg := rest.CopyConfig(base)
	cfg.QPS, cfg.Burst = -1, 0
	return client.NewWithWatch(cfg, client.Options{Scheme: scheme})
}

// CreateFixture creates, per namespace, the namespace, credentials, the
// personas and the corpus (with the largest rate limit a Corpus may
// declare, well above its canaries' probes per second); corpora are spread
// round-robin over the targets.
func CreateFixture(ctx context.Context, c client.Client, urls []string, f Fleet) error {
	var objs []client.Object
	for i := range f.Corpora {
		ns := ShardNamespace(i)
		objs = append(objs, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
			objects.CredentialSecret(ns, objects.SourceSecretName, SourceToken),
			objects.CredentialSecret(ns, "alice-cred", AliceToken), objects.CredentialSecret(ns, "mallory-cred", MalloryToken),
			objects.Persona(ns, "alice", "alice@example.com"), objects.Persona(ns, "mallory", "mallory@example.com"),
			objects.Corpus(ns, CorpusName, urls[i%len(urls)], func(c *v1alpha1.Corpus) {
				c.Spec.RateLimit = v1alpha1.RateLimit{RequestsPerSecond: 1000, Burst: 2000}
			}))
	}
	for _, obj := range objs {
		if err := c.Create(ctx, obj); err != nil {
			return err
		}
	}
	return nil
}

// CreateCanaries creates the canaries with 8 workers. Each runs daily and
// asks for one run at once (run-now), so exactly one run per canary exists
// during the window.
func CreateCanaries(ctx context.Context, c client.Client, f Fleet) error {
	type named struct{ name, namespace string }
	names := make(chan named)
	errs := make(chan error, 8)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for name := range names {
				if err := c.Create(ctx, Canary(name.name, name.namespace, f)); err != nil && !apierrors.IsAlreadyExists(err) {
					errs <- err
					return
				}
			}
		})
	}
	var err error
feed:
	for i := range f.Canaries {
		select {
		case names <- named{CanaryName(i), ShardNamespace(i % f.Corpora)}:
		case err = <-errs:
			break feed
		}
	}
	close(names)
	wg.Wait()
	if err != nil {
		return err
	}
	select {
	case err = <-errs:
	default:
	}
	return err
}

// Canary is one benchmark canary: daily, with one run at once (run-now),
// probing search every Interval.
func Canary(name, namespace string, f Fleet) *v1alpha1.RevocationCanary {
	var controls []string
	if f.Controls {
		controls = []string{"mallory"}
	}
	c := objects.RevocationCanary(namespace, name, 24*time.Hour, objects.OnCorpus(CorpusName), objects.Controls(controls...),
		objects.SLO(0), objects.Every(f.Interval, 3), objects.Timeouts(f.RunTimeout, f.RunTimeout))
	c.Spec.Probing.MaxInterval = objects.Duration(f.Interval)
	c.Annotations = map[string]string{v1alpha1.AnnotationRunNow: "bench"}
	return c
}

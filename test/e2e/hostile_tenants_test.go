package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/dev/testutil"
	"github.com/ragcanary/ragcanary/internal/dev/testutil/objects"
	"github.com/ragcanary/ragcanary/internal/manager"
)

// The hostile tenants test's workload and bounds.
const (
	// hostileGoodRuns is how many runs the well-behaved tenant's canary
	// must finish with SLOMet once the hostile tenants exist.
	hostileGoodRuns = 6
	// hostileChatTenants each have a chat surface answering
	// hostileAnswerBytes a completion and a canary probing it.
	hostileChatTenants = 4
	hostileAnswerBytes = 1000 * 1000
	// hostileStorePageBytes is what the OpenFGA stand-in writes for every
	// page of its store list, whose continuation token always advances.
	hostileStorePageBytes = 8 << 20
	// hostileHitBytes of U+FDFA are in the stand-in's one search hit: the
	// reply stays within the 1 MiB a reply may carry, so it is read and
	// searched, not refused for its size.
	hostileHitBytes = 1<<20 - 4<<10
	// hostileVisibility is the hostile canaries' visibility timeout: their
	// canary never shows on the hostile surfaces, so each run ends there.
	hostileVisibility = 8 * time.Second
	// hostileRunsEach is how many runs each hostile canary must finish,
	// every one with an honest verdict.
	hostileRunsEach = 2
	// hostileStartTimeout bounds the manager's start and the good
	// canary's first SLOMet run; hostileTimeout what follows.
	hostileStartTimeout = 45 * time.Second
	hostileTimeout      = 90 * time.Second
)

// hostileAttempts numbers the test's namespaces, so it can run again in
// the same process (-count).
var hostileAttempts atomic.Int64

// TestHostileTenantsUnderChartLimit is issue 37's "Done when": the manager
// binary runs in a memory group holding it to the chart's default memory
// limit, with the Go memory limit and the operator flags the chart derives
// (all rendered from charts/ragcanary with only the values an install must
// set). A well-behaved tenant's canary runs back to back against the e2e
// ragtarget; once it has reached SLOMet, hostile tenants arrive, each in a
// namespace of its own:
//
//   - templates: a search body doubling a variable 40 times (861 bytes) and
//     one re-binding dot through 24 doubling withs;
//   - chat-N: a chat surface answering about 1 MB per completion, probed on
//     Answer and Conversation every 250ms, several tenants at once;
//   - openfga: an OpenFGA store name looked up on a server whose pages are
//     8 MiB and whose continuation token always advances, re-checked every
//     5s;
//   - fdfa: a search hit of 1 MiB of U+FDFA (NFKC expands it elevenfold),
//     probed every 250ms;
//   - leaky: a search body hard-coding another Persona's key.
//
// The manager must stay alive in its group (never exited, never OOM-killed,
// never at its limit, peak RSS below the limit), the good canary must finish
// hostileGoodRuns more runs with SLOMet and no other verdict, the templates
// and the leaky body must leave their Corpus Ready=False naming the field
// (their surface never called), the store lookup must leave its Corpus
// Ready=False saying the list did not end, and every hostile canary must end
// its runs with a verdict that claims nothing it did not observe
// (SetupFailed or Inconclusive: its canary was never seen).
func TestHostileTenantsUnderChartLimit(t *testing.T) {
	began := time.Now()
	pauseSharedManager(t)
	chart := chartDefaultManager(t)
	prefix := fmt.Sprintf("e2e-hostile-%d", hostileAttempts.Add(1))
	targets := startHostileTargets(t)
	if n := len(testutil.DoublingTemplate(40)); n != 861 {
		t.Fatalf("the doubling template is %d bytes, not issue 37's 861", n)
	}
	victimKey := testutil.RandomKey(t, "e2e-victim-key-")
	tenants := hostileTenants(prefix, targets, victimKey)
	good := prefix + "-good"
	createObjects(t, goodTenant(good))

	cg := testutil.NewMemCgroup(t, chart.limit)
	allowed := strings.Join([]string{env.ragtargetURL, targets.chat.URL, targets.stores.URL, targets.fdfa.URL, targets.refused.URL}, ",")
	m := startGroupManager(t, cg, chart.environ, append(slices.Clone(chart.args), "--allowed-target-urls", allowed)...)
	pid := m.cmd.Process.Pid
	// Registered after the manager's, so it runs first: the manager still
	// runs while the namespaces go.
	t.Cleanup(func() { deleteNamespaces(t, append(tenants.namespaces(), good)) })
	w := &hostileWatch{m: m, cg: cg, good: good, start: began}
	defer func() {
		if t.Failed() {
			t.Logf("samples:\n%s\nmanager log (tail):\n%s", strings.Join(w.trace, "\n"), m.logs)
		}
	}()

	if !w.until(hostileStartTimeout, func(s hostileSample) bool { return s.goodMet >= 1 }) {
		t.Fatalf("before any hostile tenant: %s", w.failure(hostileStartTimeout, "the good canary's first SLOMet run"))
	}
	before := w.last
	attackedAt := time.Now()
	createObjects(t, tenants.objects)
	settled := w.until(hostileTimeout, func(s hostileSample) bool {
		return s.goodMet-before.goodMet >= hostileGoodRuns && tenants.settled(t, w.text) == nil
	})
	// Read while the manager still runs: the stop is not part of it.
	rss := peakRSS(pid)
	procs, procsErr := cg.Procs()
	usage, failcnt, ooms := must(t, cg.MaxUsage), must(t, cg.Failcnt), must(t, cg.OOMKills)
	alive := m.running()
	if !settled {
		t.Errorf("with the hostile tenants: %s", w.failure(hostileTimeout, fmt.Sprintf("%d SLOMet runs of the good canary and every hostile tenant settled", hostileGoodRuns)))
	}

	// The manager lived through it, within the chart's limit.
	if !alive || w.exited {
		t.Errorf("the manager exited (%v)", m.stop())
	}
	if procsErr != nil || !slices.Equal(procs, []int{pid}) {
		t.Errorf("the manager's group holds %v (%v), want only the manager, pid %d", procs, procsErr, pid)
	}
	if ooms != 0 {
		t.Errorf("the kernel OOM-killed %d process(es) of the manager's group", ooms)
	}
	if failcnt != 0 || usage >= chart.limit {
		t.Errorf("the manager reached the chart's limit: peak usage %.1f MiB of %.1f MiB, %d charges failed", mib(usage), mib(chart.limit), failcnt)
	}
	if rss == 0 || rss >= chart.limit {
		t.Errorf("the manager's peak RSS is %.1f MiB, want above 0 and below the chart's limit %.1f MiB", mib(rss), mib(chart.limit))
	}
	if want, ok := manager.SoftMemoryLimit(fmt.Sprint(chart.limit), chart.gomemlimit); ok && int64(w.last.goLimit) != want {
		t.Errorf("Go memory limit %.0f, want %d from the chart's environment", w.last.goLimit, want)
	}

	// The good tenant kept reaching its verdicts, all of them SLOMet.
	if got := w.last.goodMet - before.goodMet; got < hostileGoodRuns {
		t.Errorf("the good canary finished %.0f runs with SLOMet after the hostile tenants came, want at least %d", got, hostileGoodRuns)
	}
	if w.last.goodOther != 0 {
		t.Errorf("the good canary finished %.0f runs with a verdict other than SLOMet", w.last.goodOther)
	}

	// Each hostile tenant was refused or got an honest verdict.
	if err := tenants.settled(t, w.text); err != nil {
		t.Error(err)
	}
	for _, v := range tenants.verdicts(t) {
		t.Log(v)
	}
	// Their replies were read and searched (valid replies without the
	// canary), not only refused: the manager met what they send.
	for _, c := range tenants.canaries {
		for _, sf := range c.surfaces {
			labels := []string{`namespace="` + c.key.Namespace + `"`, `surface="` + string(sf) + `"`}
			absent := metricSum(w.text, "ragcanary_probes_total", append(labels, `outcome="absent"`)...)
			errs := metricSum(w.text, "ragcanary_probes_total", append(labels, `outcome="error"`)...)
			if absent == 0 {
				t.Errorf("canary %s: no valid %s reply was read (%.0f probe errors)", c.key, sf, errs)
			}
			t.Logf("canary %s: %s probes %.0f absent, %.0f errors", c.key, sf, absent, errs)
		}
	}
	for name, n := range targets.refused.counts() {
		t.Errorf("the refused surface %s was called %d times", name, n)
	}
	if strings.Contains(m.logs.String(), victimKey) {
		t.Error("the manager logged the victim persona's key")
	}
	for _, tc := range []struct {
		name   string
		target *hostileTarget
		least  int64
	}{
		// Every chat tenant was probed through its run.
		{"chat", targets.chat, hostileChatTenants},
		// The store list was read, and read again at a later check.
		{"OpenFGA store list", targets.stores, 2},
		{"U+FDFA search", targets.fdfa, 1},
	} {
		counts := tc.target.counts()
		if int64(len(counts)) < min(tc.least, int64(tc.target.paths)) {
			t.Errorf("the hostile %s target was called on %d of its %d paths: %v", tc.name, len(counts), tc.target.paths, counts)
		}
		var total int64
		for _, n := range counts {
			total += n
		}
		if total < tc.least {
			t.Errorf("the hostile %s target was called %d times, want at least %d: the manager never met it", tc.name, total, tc.least)
		}
		t.Logf("hostile %s target: %d requests %v, %.1f MiB written", tc.name, total, counts, mib(tc.target.written.Load()))
	}
	t.Logf("chart limit %.0f MiB (Go limit %.1f MiB): peak RSS %.1f MiB, group peak usage %.1f MiB, failcnt %d, oom_kill %d; the good canary finished %.0f SLOMet runs with the hostile tenants (%.0f before); hostile tenants for %s, test %s",
		mib(chart.limit), w.last.goLimit/(1<<20), mib(rss), mib(usage), failcnt, ooms, w.last.goodMet-before.goodMet, before.goodMet,
		time.Since(attackedAt).Round(100*time.Millisecond), time.Since(began).Round(100*time.Millisecond))
}

// chartManager is how the chart, with its defaults, runs the manager.
type chartManager struct {
	// limit is the container's memory limit in bytes.
	limit int64
	// environ is the test's environment without Go memory settings, plus
	// those the chart sets (RAGCANARY_MEMORY_LIMIT from the limit;
	// GOMEMLIMIT or GOGC if it sets them).
	environ    []string
	gomemlimit string
	// args are the chart's flags but those the test sets itself.
	args []string
}

// testOwnedFlags are the chart's flags the test sets itself: its
// addresses, its target allowlist, and leader election (one replica, so
// nothing to elect; a Lease left behind would hold the next manager back).
var testOwnedFlags = map[string]bool{
	"metrics-bind-address": true, "metrics-secure": true, "health-probe-bind-address": true,
	"allowed-target-urls": true, "leader-elect": true, "leader-election-namespace": true,
	"kubeconfig": true, "watch-namespace": true,
}

// chartDefaultManager renders the chart with only the values an install
// must set and reads its manager container.
func chartDefaultManager(t *testing.T) chartManager {
	t.Helper()
	var dep appsv1.Deployment
	u := object(t, renderedObjects(t, requiredValues...), "Deployment", "")
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &dep); err != nil {
		t.Fatalf("the rendered Deployment: %v", err)
	}
	i := slices.IndexFunc(dep.Spec.Template.Spec.Containers, func(c corev1.Container) bool { return c.Name == "manager" })
	if i < 0 {
		t.Fatal("the rendered Deployment has no manager container")
	}
	c := dep.Spec.Template.Spec.Containers[i]
	mem := c.Resources.Limits.Memory()
	if mem.IsZero() {
		t.Fatal("the chart sets no memory limit on the manager container")
	}
	cm := chartManager{limit: mem.Value()}
	setsLimit := false
	var goEnv []string
	for _, e := range c.Env {
		switch e.Name {
		case manager.MemoryLimitEnv:
			ref := e.ValueFrom
			if ref == nil || ref.ResourceFieldRef == nil || ref.ResourceFieldRef.Resource != "limits.memory" ||
				(!ref.ResourceFieldRef.Divisor.IsZero() && ref.ResourceFieldRef.Divisor.Value() != 1) {
				t.Fatalf("the chart sets %s to %+v; the test knows only the container's limits.memory in bytes", e.Name, e.ValueFrom)
			}
			setsLimit = true
		case "GOMEMLIMIT", "GOGC":
			if e.ValueFrom != nil {
				t.Fatalf("the chart sets %s from %+v; the test knows only a plain value", e.Name, e.ValueFrom)
			}
			goEnv = append(goEnv, e.Name+"="+e.Value)
			if e.Name == "GOMEMLIMIT" {
				cm.gomemlimit = e.Value
			}
		}
	}
	cm.environ = append(managerEnv(cm.limit, setsLimit), goEnv...)
	for _, a := range append(slices.Clone(c.Command), c.Args...) {
		name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if strings.HasPrefix(a, "--") && !testOwnedFlags[name] {
			cm.args = append(cm.args, a)
		}
	}
	return cm
}

// hostileTarget is a loopback server answering as a hostile tenant's
// target does. It counts the requests it was sent by the first segment of
// their path, and the bytes it wrote.
type hostileTarget struct {
	*httptest.Server
	paths   int // how many first segments the test gives it
	written atomic.Int64
	mu      sync.Mutex
	calls   map[string]int64
}

func newHostileTarget(t *testing.T, paths int, serve func(w io.Writer, r *http.Request)) *hostileTarget {
	t.Helper()
	h := &hostileTarget{paths: paths, calls: map[string]int64{}}
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		first, _, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
		h.mu.Lock()
		h.calls[first]++
		h.mu.Unlock()
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		serve(&countingWriter{w: w, n: &h.written}, r)
	}))
	t.Cleanup(h.Close)
	return h
}

func (h *hostileTarget) counts() map[string]int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return maps.Clone(h.calls)
}

type countingWriter struct {
	w io.Writer
	n *atomic.Int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n.Add(int64(n))
	return n, err
}

// hostileTargets are the hostile tenants' targets.
type hostileTargets struct {
	// chat answers every completion with hostileAnswerBytes of text; each
	// chat tenant has a path of its own (/t<i>/v1).
	chat *hostileTarget
	// stores is OpenFGA's store list, hostileStorePageBytes a page, never
	// ending.
	stores *hostileTarget
	// fdfa is a search API whose one hit holds hostileHitBytes of U+FDFA.
	fdfa *hostileTarget
	// refused is where the refused search surfaces point: it must never be
	// called.
	refused *hostileTarget
}

func startHostileTargets(t *testing.T) hostileTargets {
	t.Helper()
	answer, err := json.Marshal(map[string]any{"id": "c", "object": "chat.completion", "created": 1, "model": "hostile",
		"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
			"message": map[string]any{"role": "assistant", "content": strings.Repeat("x", hostileAnswerBytes)}}}})
	if err != nil {
		t.Fatal(err)
	}
	hit, err := json.Marshal(map[string]any{"value": []any{map[string]any{"id": "hostile-hit",
		"text": strings.Repeat("\uFDFA", hostileHitBytes/len("\uFDFA"))}}})
	if err != nil {
		t.Fatal(err)
	}
	return hostileTargets{
		chat: newHostileTarget(t, hostileChatTenants, func(w io.Writer, _ *http.Request) { _, _ = w.Write(answer) }),
		stores: newHostileTarget(t, 1, func(w io.Writer, r *http.Request) {
			writeStorePage(w, r.URL.Query().Get("continuation_token"))
		}),
		fdfa:    newHostileTarget(t, 1, func(w io.Writer, _ *http.Request) { _, _ = w.Write(hit) }),
		refused: newHostileTarget(t, 0, func(w io.Writer, _ *http.Request) { _, _ = io.WriteString(w, `{"value":[]}`) }),
	}
}

// writeStorePage streams a page of OpenFGA's ListStores reply of
// hostileStorePageBytes (none of its stores named "canary") with a
// continuation token that always advances, without a Content-Length: only
// what the client reads bounds it.
func writeStorePage(w io.Writer, token string) {
	next := "page-1"
	if n, ok := strings.CutPrefix(token, "page-"); ok {
		next = "page-" + n + "1"
	}
	name := strings.Repeat("n", 64)
	if _, err := io.WriteString(w, `{"stores":[`); err != nil {
		return
	}
	for i, written := 0, 0; written < hostileStorePageBytes; i++ {
		sep := ","
		if i == 0 {
			sep = ""
		}
		n, err := fmt.Fprintf(w, `%s{"id":"01J%023d","name":%q,"created_at":"2024-05-01T12:00:00Z","updated_at":"2024-05-01T12:00:00Z"}`, sep, i, name)
		if err != nil {
			return
		}
		written += n
	}
	_, _ = fmt.Fprintf(w, `],"continuation_token":%q}`, next)
}

// hostileTenantSet is every hostile tenant's objects and what each must
// come to.
type hostileTenantSet struct {
	objects []client.Object
	// refused corpora must be Ready=False with reason, the message holding
	// every want.
	refused []refusal
	// canaries must each have finished hostileRunsEach runs with an honest
	// verdict.
	canaries []hostileCanary
	// secret must appear in no condition.
	secret string
}

type hostileCanary struct {
	key      client.ObjectKey
	surfaces []v1alpha1.Surface
}

type refusal struct {
	key    client.ObjectKey
	reason string
	want   []string
}

func (s hostileTenantSet) namespaces() []string {
	var out []string
	for _, o := range s.objects {
		if _, ok := o.(*corev1.Namespace); ok {
			out = append(out, o.GetName())
		}
	}
	return out
}

func hostileTenants(prefix string, targets hostileTargets, victimKey string) hostileTenantSet {
	var s hostileTenantSet
	s.secret = victimKey
	search := func(url, body string) *v1alpha1.CorpusSurfaces {
		return &v1alpha1.CorpusSurfaces{Search: &v1alpha1.SearchSurface{Type: v1alpha1.SearchHTTP, URL: url, Method: "POST", Body: body,
			CredentialHeader: v1alpha1.CredentialHeader{Name: "api-key"}, Hits: "/value", ID: "/id", Text: "/text"}}
	}
	const invalid = "InvalidSurface"

	ns := prefix + "-templates"
	s.objects = append(s.objects, aliceNamespace(ns)...)
	for name, body := range map[string]string{"doubling": testutil.DoublingTemplate(40), "with-chain": testutil.WithChainTemplate(24)} {
		s.objects = append(s.objects, tenantCorpus(ns, name, search(targets.refused.URL+"/"+name, body), nil))
		s.refused = append(s.refused, refusal{key: client.ObjectKey{Namespace: ns, Name: name}, reason: invalid,
			want: []string{"spec.surfaces.search", "Body"}})
	}

	for i := range hostileChatTenants {
		ns := fmt.Sprintf("%s-chat-%d", prefix, i)
		chat := &v1alpha1.CorpusSurfaces{Chat: &v1alpha1.ChatSurface{Type: v1alpha1.ChatOpenAI,
			URL: fmt.Sprintf("%s/t%d/v1", targets.chat.URL, i), Model: "hostile"}}
		c := hostileCanary{key: client.ObjectKey{Namespace: ns, Name: "chat"}, surfaces: []v1alpha1.Surface{v1alpha1.SurfaceAnswer, v1alpha1.SurfaceConversation}}
		s.objects = append(append(s.objects, aliceNamespace(ns)...),
			tenantCorpus(ns, "kb", chat, nil), backToBackCanary(ns, c.key.Name, hostileVisibility, c.surfaces...))
		s.canaries = append(s.canaries, c)
	}

	ns = prefix + "-openfga"
	s.objects = append(append(s.objects, aliceNamespace(ns)...),
		objects.CredentialSecret(ns, "fga", "e2e-fga-token"),
		tenantCorpus(ns, "kb", nil, &v1alpha1.Permissions{Type: v1alpha1.PermissionsOpenFGA, OpenFGA: &v1alpha1.OpenFGAPermissions{
			APIURL: targets.stores.URL, StoreName: "canary", APITokenSecretRef: v1alpha1.SecretKeyReference{Name: "fga", Key: "token"}}}))
	s.refused = append(s.refused, refusal{key: client.ObjectKey{Namespace: ns, Name: "kb"},
		want: []string{"store list did not end"}})

	ns = prefix + "-fdfa"
	fdfa := hostileCanary{key: client.ObjectKey{Namespace: ns, Name: "fdfa"}, surfaces: []v1alpha1.Surface{v1alpha1.SurfaceSearch}}
	s.objects = append(append(s.objects, aliceNamespace(ns)...),
		tenantCorpus(ns, "kb", search(targets.fdfa.URL+"/search", `{"search": {{json .Query}}, "top": {{.K}}}`), nil),
		backToBackCanary(ns, fdfa.key.Name, hostileVisibility, fdfa.surfaces...))
	s.canaries = append(s.canaries, fdfa)

	ns = prefix + "-leaky"
	s.objects = append(append(s.objects, aliceNamespace(ns)...),
		objects.CredentialSecret(ns, "victim", victimKey),
		tokenPersona(ns, "victim", "victim@example.com"),
		tenantCorpus(ns, "kb", search(targets.refused.URL+"/leaky", `{"search": {{json .Query}}, "key": "`+victimKey+`"}`), nil))
	s.refused = append(s.refused, refusal{key: client.ObjectKey{Namespace: ns, Name: "kb"}, reason: invalid,
		want: []string{"spec.surfaces.search", "Body", "credential"}})
	return s
}

// tenantCorpus is a corpus on the e2e ragtarget with the given surfaces
// and permissions backend, re-checked every 5s (the least allowed), so a
// check against a hostile backend is repeated while the test runs.
func tenantCorpus(ns, name string, surfaces *v1alpha1.CorpusSurfaces, perms *v1alpha1.Permissions) *v1alpha1.Corpus {
	return scenarioCorpus(ns, name, env.ragtargetURL, objects.HealthCheck(5*time.Second), func(c *v1alpha1.Corpus) {
		c.Spec.Surfaces, c.Spec.Permissions = surfaces, perms
	})
}

// backToBackCanary is alice's canary on the namespace's corpus "kb", run
// every second (never overlapping), probing every 250ms.
func backToBackCanary(ns, name string, visibility time.Duration, surfaces ...v1alpha1.Surface) *v1alpha1.RevocationCanary {
	dur := func(d time.Duration) metav1.Duration { return metav1.Duration{Duration: d} }
	every := dur(time.Second)
	return &v1alpha1.RevocationCanary{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.RevocationCanarySpec{
			Scheduling: v1alpha1.Scheduling{Schedule: v1alpha1.Schedule{Every: &every}},
			CanarySpec: v1alpha1.CanarySpec{
				CorpusRef: v1alpha1.LocalObjectReference{Name: "kb"}, PersonaRef: v1alpha1.LocalObjectReference{Name: "alice"},
				Probing: v1alpha1.Probing{Interval: dur(250 * time.Millisecond), Confirmations: 2,
					VisibilityTimeout: dur(visibility), ExclusionTimeout: dur(30 * time.Second), Surfaces: surfaces},
			},
		}}
}

// goodTenant is the well-behaved tenant: alice, a corpus on the e2e
// ragtarget and a Search canary running back to back.
func goodTenant(ns string) []client.Object {
	return append(aliceNamespace(ns), tenantCorpus(ns, "kb", nil, nil), backToBackCanary(ns, "good", 30*time.Second, v1alpha1.SurfaceSearch))
}

func createObjects(t *testing.T, objs []client.Object) {
	t.Helper()
	for _, obj := range objs {
		if err := env.client.Create(context.Background(), obj); err != nil {
			t.Fatalf("creating %T %s/%s: %v", obj, obj.GetNamespace(), obj.GetName(), err)
		}
	}
}

func deleteNamespaces(t *testing.T, names []string) {
	t.Helper()
	for _, ns := range names {
		err := env.client.Delete(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting namespace %s: %v", ns, err)
		}
	}
}

// settled is nil once every refused corpus shows its refusal and every
// hostile canary has finished hostileRunsEach runs, each with an honest
// verdict (by the manager's metrics text), its last one too by its status;
// otherwise it says what is missing or wrong.
func (s hostileTenantSet) settled(t *testing.T, metrics string) error {
	t.Helper()
	ctx := context.Background()
	var problems []string
	for _, r := range s.refused {
		var c v1alpha1.Corpus
		if err := env.client.Get(ctx, r.key, &c); err != nil {
			return err
		}
		cond := meta.FindStatusCondition(c.Status.Conditions, v1alpha1.ConditionReady)
		switch {
		case cond == nil:
			problems = append(problems, fmt.Sprintf("corpus %s: no Ready condition yet", r.key))
		case cond.Status != metav1.ConditionFalse || (r.reason != "" && cond.Reason != r.reason) || !hasEvery(cond.Message, r.want):
			problems = append(problems, fmt.Sprintf("corpus %s: Ready=%s %s %q, want False%s naming %q", r.key, cond.Status, cond.Reason, cond.Message, " "+r.reason, r.want))
		case strings.Contains(cond.Message, s.secret):
			problems = append(problems, fmt.Sprintf("corpus %s: the condition carries the victim's key", r.key))
		}
	}
	for _, hc := range s.canaries {
		key := hc.key
		ns := `namespace="` + key.Namespace + `"`
		runs := metricSum(metrics, "ragcanary_runs_total", ns)
		honest := metricSum(metrics, "ragcanary_runs_total", ns, `verdict="SetupFailed"`) +
			metricSum(metrics, "ragcanary_runs_total", ns, `verdict="Inconclusive"`)
		if runs < hostileRunsEach {
			problems = append(problems, fmt.Sprintf("canary %s: %.0f runs finished, want %d", key, runs, hostileRunsEach))
		}
		if honest != runs {
			problems = append(problems, fmt.Sprintf("canary %s: %.0f of its %.0f runs ended with neither SetupFailed nor Inconclusive", key, runs-honest, runs))
		}
		var c v1alpha1.RevocationCanary
		if err := env.client.Get(ctx, key, &c); err != nil {
			return err
		}
		switch r := c.Status.LastRun; {
		case r == nil || r.CompletionTime == nil:
			problems = append(problems, fmt.Sprintf("canary %s: no finished run yet", key))
		case r.Verdict != v1alpha1.VerdictSetupFailed && r.Verdict != v1alpha1.VerdictInconclusive:
			// Its canary never showed on the hostile surface: any verdict
			// about its exclusion would claim what was not observed.
			problems = append(problems, fmt.Sprintf("canary %s: run %s ended %s, want SetupFailed or Inconclusive", key, r.Name, r.Verdict))
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("hostile tenants:\n  %s", strings.Join(problems, "\n  "))
	}
	return nil
}

// verdicts describe each refused corpus's condition and each hostile
// canary's last run, for the log.
func (s hostileTenantSet) verdicts(t *testing.T) []string {
	t.Helper()
	ctx := context.Background()
	var out []string
	for _, r := range s.refused {
		var c v1alpha1.Corpus
		if err := env.client.Get(ctx, r.key, &c); err == nil {
			if cond := meta.FindStatusCondition(c.Status.Conditions, v1alpha1.ConditionReady); cond != nil {
				out = append(out, fmt.Sprintf("corpus %s: Ready=%s %s: %s", r.key, cond.Status, cond.Reason, cond.Message))
			}
		}
	}
	for _, hc := range s.canaries {
		key := hc.key
		var c v1alpha1.RevocationCanary
		if err := env.client.Get(ctx, key, &c); err != nil || c.Status.LastRun == nil {
			continue
		}
		msg := ""
		var run v1alpha1.CanaryRun
		if err := env.client.Get(ctx, client.ObjectKey{Namespace: key.Namespace, Name: c.Status.LastRun.Name}, &run); err == nil {
			msg = run.Status.Message
		}
		out = append(out, fmt.Sprintf("canary %s: last run %s %s: %s", key, c.Status.LastRun.Name, c.Status.LastRun.Verdict, msg))
	}
	return out
}

// hostileWatch samples the manager under test every memPollInterval.
type hostileWatch struct {
	m     *groupManager
	cg    *testutil.MemCgroup
	good  string
	start time.Time
	// exited: the manager was seen gone.
	exited bool
	last   hostileSample
	// text is the latest metrics scrape.
	text  string
	trace []string
}

type hostileSample struct {
	// goodMet and goodOther are the good canary's finished runs with
	// SLOMet and with any other verdict.
	goodMet, goodOther float64
	goLimit            float64
}

// until samples until cond holds of a sample (true), or the manager exits
// or timeout passes (false).
func (w *hostileWatch) until(timeout time.Duration, cond func(hostileSample) bool) bool {
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(memPollInterval)
	defer tick.Stop()
	for {
		if !w.m.running() {
			w.exited = true
			return false
		}
		if text, err := scrapeMetrics(w.m.metricsURL); err == nil {
			w.text = text
			ns := `namespace="` + w.good + `"`
			all := metricSum(text, "ragcanary_runs_total", ns)
			w.last = hostileSample{
				goodMet: metricSum(text, "ragcanary_runs_total", ns, `verdict="SLOMet"`),
				goLimit: metricSum(text, "go_gc_gomemlimit_bytes"),
			}
			w.last.goodOther = all - w.last.goodMet
			usage, _ := w.cg.Usage()
			w.trace = append(w.trace, fmt.Sprintf("%6s usage %.1f MiB, heap %.1f MiB, heap goal %.1f MiB, %.0f GCs, good runs %.0f SLOMet %.0f other",
				time.Since(w.start).Round(100*time.Millisecond), mib(usage), metricSum(text, "go_memstats_heap_alloc_bytes")/(1<<20),
				metricSum(text, "go_memstats_next_gc_bytes")/(1<<20), metricSum(text, "go_gc_duration_seconds_count"), w.last.goodMet, w.last.goodOther))
			if cond(w.last) {
				return true
			}
		}
		if time.Now().After(deadline) {
			return false
		}
		w.m.nextSample(tick)
	}
}

// failure says why a wait for what ended.
func (w *hostileWatch) failure(timeout time.Duration, what string) string {
	if w.exited {
		return fmt.Sprintf("the manager exited (%v) before %s", w.m.stop(), what)
	}
	return fmt.Sprintf("%s not reached within %s (good canary: %.0f SLOMet, %.0f other)", what, timeout, w.last.goodMet, w.last.goodOther)
}

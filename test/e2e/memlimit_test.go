package e2e

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/dev/testutil"
	"github.com/ragcanary/ragcanary/internal/manager"
)

// The memory-limit test's workload and bounds.
const (
	// memCanaries run back to back (every second, never overlapping)
	// against the e2e ragtarget: the work the manager must keep doing.
	memCanaries = 12
	// memRunsPerPhase is how many runs each manager must finish with
	// SLOMet, on top of one run of every canary.
	memRunsPerPhase = 4 * memCanaries
	// memSteadyGCs is how many collections each manager must go through
	// once its runs started: without a limit the heap grows to the
	// collector's goal (twice the live heap) before each, so the peak the
	// limit is taken from is the manager's steady one, not a moment of it.
	memSteadyGCs = 4
	// The ballast is what makes the Go heap big next to the runtime's own
	// memory, as a large fleet's informer cache does (1,000 canaries hold
	// about 55 MiB of heap), without the minutes a fleet takes to create:
	// ConfigMaps whose annotations the manager's metadata-only ConfigMap
	// watch keeps, as it keeps a kubectl-applied ConfigMap's
	// last-applied-configuration. About 50 MB in all.
	memBallastObjects = 200
	memBallastBytes   = 250_000 // an object's annotations may hold 256 KiB
	memBallastLabel   = "ragcanary.dev/e2e-ballast"
	// memLimitShare of the unconstrained peak is the limit: below what the
	// manager takes when nothing holds it back, above its live heap.
	memLimitShare = 0.8
	// memPhaseTimeout bounds one manager's start and its runs.
	memPhaseTimeout = 60 * time.Second
	memPollInterval = 500 * time.Millisecond
	memStopTimeout  = 10 * time.Second
	memLogTailBytes = 32 << 10
)

// TestManagerUnderMemoryLimit runs the manager binary three times on the
// same workload, each time in a cgroup v1 memory group of its own, as the
// kubelet runs a container:
//
//   - Unconstrained: no limit. The group's peak (memory.max_usage_in_bytes)
//     is what the manager takes when nothing holds it back.
//   - Limited: a limit of 80% of that peak, passed in RAGCANARY_MEMORY_LIMIT
//     as the chart passes the container's limit, GOMEMLIMIT unset. The
//     manager must stay alive, never reach the limit (no charge failed, no
//     OOM kill) and finish its runs.
//   - WithoutGoLimit, the control: the same limit without
//     RAGCANARY_MEMORY_LIMIT. The manager must hit the limit (the kernel
//     pushed back or killed it); otherwise the workload does not need more
//     than the limit and Limited proved nothing.
//
// Usage never exceeds a cgroup's limit, so "max usage ≤ limit" cannot fail;
// "within the limit" is checked as never reaching it: failcnt 0 and the
// peak below the limit.
func TestManagerUnderMemoryLimit(t *testing.T) {
	pauseSharedManager(t)
	ns := fmt.Sprintf("e2e-memlimit-%d", memLimitAttempts.Add(1))
	createMemWorkload(t, ns)

	var free memPhase
	if !t.Run("Unconstrained", func(t *testing.T) {
		free = runMemPhase(t, ns, 0, false)
		checkUnconstrained(t, free)
	}) {
		t.FailNow()
	}
	limit := int64(float64(free.peakUsage)*memLimitShare) &^ 4095
	goLimit, _ := manager.SoftMemoryLimit(strconv.FormatInt(limit, 10), "")
	// Half the heap goal the collector set last is an upper bound of the
	// live heap (GOGC 100). What the manager cannot do without must fit
	// the Go limit, or a failure below would be the workload's, not the
	// manager's.
	live, nonHeap := int64(free.heapGoal/2), int64(free.nonHeap)
	if live+nonHeap >= goLimit {
		t.Fatalf("the live heap (≤ %.1f MiB) and the runtime's other memory (%.1f MiB) do not fit the Go limit %.1f MiB of a %.1f MiB limit: the workload is too big for the test",
			mib(live), mib(nonHeap), mib(goLimit), mib(limit))
	}
	t.Logf("limit %.1f MiB (%.0f%% of the unconstrained peak %.1f MiB; peak RSS %.1f MiB), Go limit %.1f MiB; live heap ≤ %.1f MiB, runtime outside the heap %.1f MiB",
		mib(limit), 100*memLimitShare, mib(free.peakUsage), mib(free.peakRSS), mib(goLimit), mib(live), mib(nonHeap))

	t.Run("Limited", func(t *testing.T) {
		checkWithinLimit(t, runMemPhase(t, ns, limit, true), goLimit)
	})
	t.Run("WithoutGoLimit", func(t *testing.T) {
		checkHitLimit(t, runMemPhase(t, ns, limit, false))
	})
}

// memLimitAttempts numbers the test's namespaces, so it can run again in
// the same process (-count).
var memLimitAttempts atomic.Int64

// pauseSharedManager stops the suite's manager until the test ends: it
// watches every namespace and would run the test's canaries alongside the
// manager under test, doing the work the test must see that one do.
func pauseSharedManager(t *testing.T) {
	t.Helper()
	env.manager.stop()
	t.Cleanup(func() {
		if !env.manager.running() {
			if err := env.manager.restart(); err != nil {
				t.Errorf("restarting the shared manager: %v", err)
			}
		}
	})
}

// memPhase is what one manager did and took.
type memPhase struct {
	limit int64 // of its memory group; 0: none
	// peakUsage is the group's memory.max_usage_in_bytes, peakRSS the
	// process's VmHWM (which counts the binary's pages too; the group
	// does not, they were read into the page cache before it existed).
	peakUsage, peakRSS int64
	failcnt, oomKills  int64
	// pageCache is the group's page cache at the end (memory.stat), which
	// its usage counts too: the test keeps the manager from writing files.
	pageCache int64
	// exited: the process ended before the test stopped it.
	exited  bool
	exitErr error
	// done: it finished memRunsPerPhase runs with SLOMet, every canary
	// finished a run since it started, and it went through memSteadyGCs
	// collections since its first run, within memPhaseTimeout.
	done     bool
	runs     float64 // runs it finished with SLOMet
	goLimit  float64 // go_gc_gomemlimit_bytes
	heapGoal float64 // go_memstats_next_gc_bytes, last seen
	// nonHeap is the runtime's memory outside the heap (stacks, span and
	// GC metadata, buffers), last seen.
	nonHeap  float64
	gcCycles float64
	took     time.Duration
}

func (p memPhase) String() string {
	return fmt.Sprintf("peak usage %.1f MiB, peak RSS %.1f MiB, page cache %.1f MiB, failcnt %d, oom_kill %d, exited %t (%v), done %t, %.0f SLOMet runs, Go limit %.4g, heap goal %.1f MiB, %.0f GC cycles, %s",
		mib(p.peakUsage), mib(p.peakRSS), mib(p.pageCache), p.failcnt, p.oomKills, p.exited, p.exitErr, p.done, p.runs,
		p.goLimit, p.heapGoal/(1<<20), p.gcCycles, p.took.Round(100*time.Millisecond))
}

// runMemPhase runs a manager in a new memory group with the limit (0:
// none) until it has done the phase's work, exits, or memPhaseTimeout
// passes, then stops it. withGoLimit passes the limit in
// RAGCANARY_MEMORY_LIMIT.
func runMemPhase(t *testing.T, ns string, limit int64, withGoLimit bool) memPhase {
	t.Helper()
	start := time.Now()
	cg := testutil.NewMemCgroup(t, limit)
	m := startGroupManager(t, cg, managerEnv(limit, withGoLimit), "--allowed-target-urls", env.ragtargetURL, "--watch-namespace", ns)
	res := memPhase{limit: limit}
	var trace []string
	defer func() {
		if t.Failed() {
			t.Logf("samples:\n%s\nmanager log (tail):\n%s", strings.Join(trace, "\n"), m.logs)
		}
	}()
	deadline := start.Add(memPhaseTimeout)
	gcAtWork := -1.0 // GC cycles when the first run finished
	tick := time.NewTicker(memPollInterval)
	defer tick.Stop()
	for {
		if !m.running() {
			res.exited = true
			break
		}
		if text, err := scrapeMetrics(m.metricsURL); err == nil {
			res.runs = metricSum(text, "ragcanary_runs_total", `verdict="SLOMet"`)
			res.goLimit = metricSum(text, "go_gc_gomemlimit_bytes", "")
			res.heapGoal = metricSum(text, "go_memstats_next_gc_bytes", "")
			res.gcCycles = metricSum(text, "go_gc_duration_seconds_count", "")
			res.nonHeap = metricSum(text, "go_memstats_sys_bytes", "") - metricSum(text, "go_memstats_heap_sys_bytes", "")
			usage, _ := cg.Usage()
			trace = append(trace, fmt.Sprintf("%6s usage %.1f MiB, alloc %.1f MiB, %.0f GCs, heap %.1f MiB, heap goal %.1f MiB, %.0f runs",
				time.Since(start).Round(100*time.Millisecond), mib(usage), metricSum(text, "go_memstats_alloc_bytes_total", "")/(1<<20), res.gcCycles,
				metricSum(text, "go_memstats_heap_alloc_bytes", "")/(1<<20), res.heapGoal/(1<<20), res.runs))
		}
		if res.runs > 0 && gcAtWork < 0 {
			gcAtWork = res.gcCycles
		}
		if res.runs >= memRunsPerPhase && res.gcCycles-gcAtWork >= memSteadyGCs && everyCanaryRanSince(t, ns, start) {
			res.done = true
			break
		}
		if time.Now().After(deadline) {
			break
		}
		m.nextSample(tick)
	}
	// Read while the workload's process is still there: the stop is not
	// part of it.
	res.peakRSS = peakRSS(m.cmd.Process.Pid)
	res.peakUsage = must(t, cg.MaxUsage)
	res.failcnt = must(t, cg.Failcnt)
	res.oomKills = must(t, cg.OOMKills)
	res.pageCache = must(t, func() (int64, error) { return cg.Stat("cache") })
	res.exited = res.exited || !m.running()
	res.exitErr = m.stop()
	res.took = time.Since(start)
	group := "no limit"
	if limit > 0 {
		group = fmt.Sprintf("limit %.1f MiB", mib(limit))
	}
	t.Logf("%s, RAGCANARY_MEMORY_LIMIT set %t: %s", group, withGoLimit, res)
	return res
}

func checkUnconstrained(t *testing.T, p memPhase) {
	t.Helper()
	if p.exited || !p.done {
		t.Fatalf("the manager without a limit did not finish its runs: %s", p)
	}
	// Nothing set a Go limit: the environment the test passes is clean.
	if p.goLimit != math.MaxInt64 {
		t.Errorf("Go memory limit %.0f without RAGCANARY_MEMORY_LIMIT, want none (%d)", p.goLimit, int64(math.MaxInt64))
	}
}

func checkWithinLimit(t *testing.T, p memPhase, goLimit int64) {
	t.Helper()
	if p.exited {
		t.Errorf("the manager under the limit exited (%v)", p.exitErr)
	}
	if p.oomKills != 0 {
		t.Errorf("the kernel OOM-killed %d process(es) of the manager's group", p.oomKills)
	}
	if p.failcnt != 0 || p.peakUsage >= p.limit {
		t.Errorf("the manager reached its limit: peak %.1f MiB of %.1f MiB, %d charges failed", mib(p.peakUsage), mib(p.limit), p.failcnt)
	}
	if !p.done {
		t.Errorf("the manager under the limit did not finish %d runs, one of every canary and %d collections within %s: %s", memRunsPerPhase, memSteadyGCs, memPhaseTimeout, p)
	}
	if int64(p.goLimit) != goLimit {
		t.Errorf("Go memory limit %.0f, want %d (90%% of RAGCANARY_MEMORY_LIMIT)", p.goLimit, goLimit)
	}
}

func checkHitLimit(t *testing.T, p memPhase) {
	t.Helper()
	if p.oomKills == 0 && p.failcnt == 0 {
		t.Errorf("without RAGCANARY_MEMORY_LIMIT the manager stayed below the limit (peak %.1f MiB of %.1f MiB): the workload does not need more, and the limited run shows nothing",
			mib(p.peakUsage), mib(p.limit))
	}
}

// groupManager is a manager binary running in a memory group. Its output
// is kept in the test's memory: a log file would put page cache in the
// group.
type groupManager struct {
	cmd        *exec.Cmd
	done       chan struct{}
	waitErr    error
	logs       *logTail
	metricsURL string
}

// startGroupManager runs the manager binary in cg with the environment
// environ, plain-HTTP metrics and health probes on loopback, and args (the
// target allowlist, a namespace to watch, settings).
func startGroupManager(t *testing.T, cg *testutil.MemCgroup, environ []string, args ...string) *groupManager {
	t.Helper()
	metricsAddr, err := freeAddr()
	if err != nil {
		t.Fatal(err)
	}
	probeAddr, err := freeAddr()
	if err != nil {
		t.Fatal(err)
	}
	// Plain-HTTP metrics on loopback: the test reads the manager's Go
	// memory figures and run counters without a token.
	cmd := cg.Command(env.manager.name, append([]string{
		"--kubeconfig", env.kubeconfig,
		"--metrics-bind-address", metricsAddr, "--metrics-secure=false",
		"--health-probe-bind-address", probeAddr}, args...)...)
	cmd.Env = environ
	m := &groupManager{cmd: cmd, done: make(chan struct{}), logs: &logTail{max: memLogTailBytes}, metricsURL: "http://" + metricsAddr + "/metrics"}
	cmd.Stdout, cmd.Stderr = m.logs, m.logs
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting the manager: %v", err)
	}
	go func() {
		m.waitErr = cmd.Wait()
		close(m.done)
	}()
	// Registered after the group's removal, so it runs before it.
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGKILL)
		<-m.done
	})
	return m
}

func (m *groupManager) running() bool {
	select {
	case <-m.done:
		return false
	default:
		return true
	}
}

// nextSample waits for tick, or for the manager's exit if that comes
// first, so a sampling loop sees an exit at once.
func (m *groupManager) nextSample(tick *time.Ticker) {
	select {
	case <-tick.C:
	case <-m.done:
	}
}

// stop ends the manager (SIGTERM, SIGKILL after memStopTimeout); it
// returns how the manager ended if it had exited by itself.
func (m *groupManager) stop() error {
	if !m.running() {
		return m.waitErr
	}
	_ = m.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-m.done:
	case <-time.After(memStopTimeout):
		_ = m.cmd.Process.Signal(syscall.SIGKILL)
		<-m.done
	}
	return nil
}

// managerEnv is the test's environment without any Go memory or GC
// setting, with RAGCANARY_MEMORY_LIMIT when withGoLimit.
func managerEnv(limit int64, withGoLimit bool) []string {
	var out []string
	for _, kv := range os.Environ() {
		switch k, _, _ := strings.Cut(kv, "="); k {
		case "GOMEMLIMIT", "GOGC", manager.MemoryLimitEnv:
			continue
		}
		out = append(out, kv)
	}
	if withGoLimit {
		out = append(out, manager.MemoryLimitEnv+"="+strconv.FormatInt(limit, 10))
	}
	return out
}

// createMemWorkload creates the namespace, the canaries and the ballast.
// Cleanup removes the ballast before the shared manager comes back, so it
// never caches it, and deletes the namespace.
func createMemWorkload(t *testing.T, ns string) {
	t.Helper()
	ctx := context.Background()
	for _, obj := range memObjects(ns) {
		if err := env.client.Create(ctx, obj); err != nil {
			t.Fatalf("creating %T %s: %v", obj, obj.GetName(), err)
		}
	}
	t.Cleanup(func() {
		ctx := context.Background()
		if err := env.client.DeleteAllOf(ctx, &corev1.ConfigMap{}, client.InNamespace(ns), client.MatchingLabels{memBallastLabel: "true"}); err != nil {
			t.Errorf("deleting the ballast: %v", err)
		}
		testutil.Eventually(t, 30*time.Second, "the ballast deleted", func() error {
			var list metav1.PartialObjectMetadataList
			list.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ConfigMapList"))
			if err := env.client.List(ctx, &list, client.InNamespace(ns), client.MatchingLabels{memBallastLabel: "true"}); err != nil {
				return err
			}
			if n := len(list.Items); n > 0 {
				return fmt.Errorf("%d left", n)
			}
			return nil
		})
		if err := env.client.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Errorf("deleting namespace %s: %v", ns, err)
		}
	})
	createBallast(t, ns)
}

// memObjects are the namespace, credentials, a corpus on the e2e
// ragtarget and the canaries.
func memObjects(ns string) []client.Object {
	ref := func(n string) v1alpha1.LocalObjectReference { return v1alpha1.LocalObjectReference{Name: n} }
	dur := func(d time.Duration) metav1.Duration { return metav1.Duration{Duration: d} }
	objs := append(aliceNamespace(ns), scenarioCorpus(ns, "kb", env.ragtargetURL, func(c *v1alpha1.Corpus) {
		// Every canary probes every 250ms: well inside this rate.
		c.Spec.RateLimit = v1alpha1.RateLimit{RequestsPerSecond: 500, Burst: 100}
	}))
	every := dur(time.Second)
	for i := range memCanaries {
		objs = append(objs, &v1alpha1.RevocationCanary{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("c%02d", i)},
			Spec: v1alpha1.RevocationCanarySpec{
				Scheduling: v1alpha1.Scheduling{Schedule: v1alpha1.Schedule{Every: &every}},
				CanarySpec: v1alpha1.CanarySpec{
					CorpusRef: ref("kb"), PersonaRef: ref("alice"),
					Probing: v1alpha1.Probing{
						Interval: dur(250 * time.Millisecond), Confirmations: 2,
						VisibilityTimeout: dur(30 * time.Second), ExclusionTimeout: dur(30 * time.Second),
						Surfaces: []v1alpha1.Surface{v1alpha1.SurfaceSearch},
					},
				},
			},
		})
	}
	return objs
}

// createBallast creates the ballast ConfigMaps, four at a time.
func createBallast(t *testing.T, ns string) {
	t.Helper()
	pad := strings.Repeat("x", memBallastBytes)
	next := make(chan int)
	errs := make(chan error, memBallastObjects)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for i := range next {
				cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
					Namespace: ns, Name: fmt.Sprintf("ballast-%03d", i),
					Labels:      map[string]string{memBallastLabel: "true"},
					Annotations: map[string]string{memBallastLabel: pad},
				}}
				if err := env.client.Create(context.Background(), cm); err != nil {
					errs <- fmt.Errorf("%s: %w", cm.Name, err)
				}
			}
		})
	}
	for i := range memBallastObjects {
		next <- i
	}
	close(next)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("creating the ballast: %v", err)
	}
}

// everyCanaryRanSince: each canary's last finished run completed after t0,
// so every canary's status advanced under this manager.
func everyCanaryRanSince(t *testing.T, ns string, t0 time.Time) bool {
	t.Helper()
	var list v1alpha1.RevocationCanaryList
	if err := env.client.List(context.Background(), &list, client.InNamespace(ns)); err != nil {
		t.Fatalf("listing the canaries: %v", err)
	}
	if len(list.Items) != memCanaries {
		t.Fatalf("%d canaries in %s, want %d", len(list.Items), ns, memCanaries)
	}
	for _, c := range list.Items {
		// Completion times are whole seconds: one in t0's second may be
		// the previous manager's.
		if r := c.Status.LastRun; r == nil || r.CompletionTime == nil || !r.CompletionTime.After(t0) {
			return false
		}
	}
	return true
}

// peakRSS is a process's VmHWM in bytes; 0 once it is gone.
func peakRSS(pid int) int64 {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if v, ok := strings.CutPrefix(s.Text(), "VmHWM:"); ok {
			kib, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				return 0
			}
			return kib << 10
		}
	}
	return 0
}

func scrapeMetrics(url string) (string, error) {
	resp, err := http.Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%s: status %d", url, resp.StatusCode)
	}
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

// metricSum adds the samples of a metric in the text exposition format
// whose labels contain every match ("" for all), e.g. `verdict="SLOMet"`.
func metricSum(text, name string, match ...string) float64 {
	var sum float64
	for line := range strings.Lines(text) {
		rest, ok := strings.CutPrefix(strings.TrimSpace(line), name)
		if !ok || rest == "" || (rest[0] != ' ' && rest[0] != '{') || !hasEvery(rest, match) {
			continue
		}
		fields := strings.Fields(rest)
		if v, err := strconv.ParseFloat(fields[len(fields)-1], 64); err == nil {
			sum += v
		}
	}
	return sum
}

// hasEvery: s contains each of subs.
func hasEvery(s string, subs []string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}

func must(t *testing.T, read func() (int64, error)) int64 {
	t.Helper()
	v, err := read()
	if err != nil {
		t.Fatalf("reading the memory cgroup: %v", err)
	}
	return v
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }

// logTail keeps the last max bytes written to it.
type logTail struct {
	mu  sync.Mutex
	buf []byte
	max int
}

func (l *logTail) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, p...)
	if over := len(l.buf) - l.max; over > 0 {
		l.buf = append(l.buf[:0], l.buf[over:]...)
	}
	return len(p), nil
}

func (l *logTail) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return string(l.buf)
}

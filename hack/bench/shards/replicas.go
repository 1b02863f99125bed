package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/ragcanary/ragcanary/hack/bench/internal/benchkit"
)

// buildManager builds cmd/manager once into dir: every replica runs it, as
// in production, in its own process.
func buildManager(ctx context.Context, dir string) (string, error) {
	out := filepath.Join(dir, "manager")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", out, "./cmd/manager")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("building the manager: %w", err)
	}
	return out, nil
}

// replicaConfig is what every replica shares.
type replicaConfig struct {
	binary, kubeconfig, logDir string
	targetURLs                 []string
	checkpoint, shardLease     time.Duration
	verbose                    bool
	// pprof serves each replica's profiler on a loopback port, so the
	// benchmark can keep a heap profile of each (heapProfiles).
	pprof bool
}

// replica is one running manager process.
type replica struct {
	name       string
	cmd        *exec.Cmd
	metricsURL string
	// pprofURL is the replica's /debug/pprof/ root; empty without --pprof.
	pprofURL string
	log      *os.File
	exited   chan struct{}
	waitErr  error
	// killed is set when the benchmark killed it on purpose.
	killed bool
}

// leaderElectionNamespace holds the leader election and shard Leases.
const leaderElectionNamespace = "default"

// startReplica runs the manager as replica name: sharded, leader-elected,
// metrics over plain HTTP on a loopback port, no health probes.
func startReplica(cfg replicaConfig, name string) (*replica, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	allowed := make([]string, len(cfg.targetURLs))
	for i, u := range cfg.targetURLs {
		allowed[i] = strings.TrimSuffix(u, "/") + "/"
	}
	level := "error"
	if cfg.verbose {
		level = "info"
	}
	args := []string{
		"--kubeconfig", cfg.kubeconfig,
		"--leader-elect", "--leader-election-namespace", leaderElectionNamespace,
		"--sharding", "--shard-name", name, "--shard-lease-duration", cfg.shardLease.String(),
		"--metrics-bind-address", fmt.Sprintf("127.0.0.1:%d", port), "--metrics-secure=false",
		"--health-probe-bind-address", "0",
		"--allowed-target-urls", strings.Join(allowed, ","),
		"--status-checkpoint-interval", cfg.checkpoint.String(),
		"--zap-log-level", level,
	}
	pprofURL := ""
	if cfg.pprof {
		pport, err := freePort()
		if err != nil {
			return nil, err
		}
		args = append(args, "--pprof-bind-address", fmt.Sprintf("127.0.0.1:%d", pport))
		pprofURL = fmt.Sprintf("http://127.0.0.1:%d/debug/pprof/", pport)
	}
	logFile, err := os.Create(filepath.Join(cfg.logDir, name+".log"))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(cfg.binary, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// The last resort if the benchmark itself is killed.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("starting replica %s: %w", name, err)
	}
	r := &replica{name: name, cmd: cmd, metricsURL: fmt.Sprintf("http://127.0.0.1:%d/metrics", port), pprofURL: pprofURL, log: logFile, exited: make(chan struct{})}
	go func() {
		r.waitErr = cmd.Wait()
		close(r.exited)
	}()
	return r, nil
}

// freePort asks the kernel for a free loopback port.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

func (r *replica) pid() int { return r.cmd.Process.Pid }

func (r *replica) alive() bool {
	select {
	case <-r.exited:
		return false
	default:
		return true
	}
}

// exitError says why a replica the benchmark did not kill has exited.
func (r *replica) exitError() error {
	if r.alive() || r.killed {
		return nil
	}
	return fmt.Errorf("replica %s exited (%v); its log: %s", r.name, r.waitErr, r.log.Name())
}

// kill sends SIGKILL: the replica gets no chance to hand anything over.
func (r *replica) kill() {
	r.killed = true
	_ = r.cmd.Process.Signal(syscall.SIGKILL)
	<-r.exited
}

// stop asks the replica to stop (SIGTERM) and kills it if it lingers.
func (r *replica) stop() {
	if r.alive() {
		_ = r.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-r.exited:
		case <-time.After(15 * time.Second):
			_ = r.cmd.Process.Signal(syscall.SIGKILL)
			<-r.exited
		}
	}
	r.log.Close()
}

// replicaSet is every replica of a mode.
type replicaSet []*replica

func startReplicas(cfg replicaConfig, n int) (replicaSet, error) {
	var set replicaSet
	for i := range n {
		r, err := startReplica(cfg, fmt.Sprintf("r-%d", i))
		if err != nil {
			set.stop()
			return nil, err
		}
		set = append(set, r)
	}
	return set, nil
}

func (s replicaSet) stop() {
	var wg sync.WaitGroup
	for _, r := range s {
		wg.Go(r.stop)
	}
	wg.Wait()
}

// exitError is the first unexpected exit among the replicas.
func (s replicaSet) exitError() error {
	for _, r := range s {
		if err := r.exitError(); err != nil {
			return err
		}
	}
	return nil
}

// scrape reads a replica's metrics endpoint.
func (r *replica) scrape(ctx context.Context) (map[string]*dto.MetricFamily, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.metricsURL, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("scraping %s: %w", r.name, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("scraping %s: HTTP %d", r.name, resp.StatusCode)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(io.LimitReader(resp.Body, 256<<20))
	if err != nil {
		return nil, fmt.Errorf("parsing %s's metrics: %w", r.name, err)
	}
	return families, nil
}

// heapProfile writes the replica's heap profile (after a collection, so
// in-use figures are live objects) beside its log, as <name><suffix>.heap.
func (r *replica) heapProfile(ctx context.Context, suffix string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.pprofURL+"heap?gc=1", nil)
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", fmt.Errorf("heap profile of %s: %w", r.name, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("heap profile of %s: HTTP %d", r.name, resp.StatusCode)
	}
	path := filepath.Join(filepath.Dir(r.log.Name()), r.name+suffix+".heap")
	f, err := os.Create(path)
	if err != nil {
		return "", err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return "", err
	}
	return path, f.Close()
}

// memoryParts says what the replica's resident memory is made of: the
// kernel's anonymous and file-backed parts, and the Go runtime's heap in
// use, heap kept but idle (not yet returned to the kernel), next GC goal
// and stacks, so a difference in RSS between replicas can be placed.
func (r *replica) memoryParts(ctx context.Context) (string, error) {
	families, err := r.scrape(ctx)
	if err != nil {
		return "", err
	}
	// A figure the replica or the kernel did not give is an error, never
	// a 0 MiB part.
	var missing []string
	gauge := func(name string) float64 {
		if f := families[name]; f != nil && len(f.GetMetric()) > 0 {
			return f.GetMetric()[0].GetGauge().GetValue()
		}
		missing = append(missing, name)
		return 0
	}
	status := func(field string) float64 {
		kb, ok := benchkit.StatusKB(strconv.Itoa(r.pid()), field)
		if !ok {
			missing = append(missing, "/proc status "+field)
		}
		return float64(kb) / 1024
	}
	mib := func(v float64) float64 { return v / (1 << 20) }
	out := fmt.Sprintf("RSS anon %.1f MiB, file %.1f MiB; Go heap in use %.1f MiB, idle unreturned %.1f MiB, next GC %.1f MiB, stacks %.1f MiB",
		status("RssAnon:"), status("RssFile:"),
		mib(gauge("go_memstats_heap_inuse_bytes")), mib(gauge("go_memstats_heap_idle_bytes")-gauge("go_memstats_heap_released_bytes")),
		mib(gauge("go_memstats_next_gc_bytes")), mib(gauge("go_memstats_stack_inuse_bytes")))
	if len(missing) > 0 {
		return "", fmt.Errorf("memory of %s: no %s", r.name, strings.Join(missing, ", "))
	}
	return out, nil
}

// lag is the replica's probe scheduling lag histogram, summed over series.
func (r *replica) lag(ctx context.Context) (benchkit.LagBuckets, error) {
	families, err := r.scrape(ctx)
	if err != nil {
		return benchkit.LagBuckets{}, err
	}
	var out benchkit.LagBuckets
	if fam := families[benchkit.LagMetric]; fam != nil {
		out.AddFamilies([]*dto.MetricFamily{fam})
	}
	return out, nil
}

// isLeader reads controller-runtime's leader_election_master_status gauge.
func (r *replica) isLeader(ctx context.Context) (bool, error) {
	families, err := r.scrape(ctx)
	if err != nil {
		return false, err
	}
	fam := families["leader_election_master_status"]
	if fam == nil {
		return false, nil
	}
	for _, m := range fam.GetMetric() {
		if m.GetGauge().GetValue() == 1 {
			return true, nil
		}
	}
	return false, nil
}

// leader is the replica holding the leader election, or an error when
// none or several say they do.
func (s replicaSet) leader(ctx context.Context) (*replica, error) {
	var found []*replica
	for _, r := range s {
		if !r.alive() {
			continue
		}
		ok, err := r.isLeader(ctx)
		if err != nil {
			return nil, err
		}
		if ok {
			found = append(found, r)
		}
	}
	if len(found) != 1 {
		return nil, fmt.Errorf("%d replicas report leading, want 1", len(found))
	}
	return found[0], nil
}

// cpu is the replica's CPU time so far.
func (r *replica) cpu() (time.Duration, error) { return benchkit.ProcCPU(r.pid()) }

// rssMax samples the largest RSS of each replica while it runs.
type rssMax struct {
	mu   sync.Mutex
	max  map[string]int64
	stop chan struct{}
	done chan struct{}
}

func startRSSMax(set replicaSet, every time.Duration) *rssMax {
	m := &rssMax{max: map[string]int64{}, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(m.done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			m.sample(set)
			select {
			case <-m.stop:
				return
			case <-t.C:
			}
		}
	}()
	return m
}

func (m *rssMax) sample(set replicaSet) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, r := range set {
		if !r.alive() {
			continue
		}
		if rss := benchkit.RSSOf(strconv.Itoa(r.pid())); rss > m.max[r.name] {
			m.max[r.name] = rss
		}
	}
}

// snapshot is the maxima so far; reset starts them again.
func (m *rssMax) snapshot(reset bool) map[string]int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[string]int64, len(m.max))
	for k, v := range m.max {
		out[k] = v
	}
	if reset {
		m.max = map[string]int64{}
	}
	return out
}

func (m *rssMax) finish() map[string]int64 {
	close(m.stop)
	<-m.done
	return m.snapshot(false)
}

var errNoReplica = errors.New("no replica is running")

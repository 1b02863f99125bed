package main

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/hack/bench/internal/benchkit"
	"github.com/ragcanary/ragcanary/internal/dev/localcluster"
)

// replicaFigures are one replica's figures over a phase.
type replicaFigures struct {
	name   string
	maxRSS int64
	cpu    time.Duration
	lag    benchkit.LagBuckets
	// owned counts the canaries carrying its owner label at the phase's end
	// (at the kill for the steady phase).
	owned int
	// leader: it held the leader election at the phase's end, so it also
	// ran the sharder (its metadata view of every sharded object).
	leader bool
}

// phaseFigures are a phase's figures.
type phaseFigures struct {
	window   time.Duration
	replicas []replicaFigures
	// apiCPU is kube-apiserver's CPU time; apiBefore and apiAfter its
	// request counters.
	apiCPU              time.Duration
	apiBefore, apiAfter benchkit.RequestCounts
	machineBusy         float64
	// unowned counts canaries without an owner at the phase's end.
	unowned int
}

// phaseStart is what a phase's figures are differences from.
type phaseStart struct {
	at          time.Time
	cpu         map[string]time.Duration
	lag         map[string]benchkit.LagBuckets
	apiCPU      time.Duration
	api         benchkit.RequestCounts
	busy, total uint64
}

func startPhase(ctx context.Context, set replicaSet, api *benchkit.APIServerMetrics) (phaseStart, error) {
	p := phaseStart{cpu: map[string]time.Duration{}, lag: map[string]benchkit.LagBuckets{}}
	var err error
	if p.api, err = api.Requests(ctx); err != nil {
		return p, err
	}
	p.apiCPU = benchkit.Children()["kube-apiserver"].CPU
	for _, r := range set {
		if !r.alive() {
			continue
		}
		if p.lag[r.name], err = r.lag(ctx); err != nil {
			return p, err
		}
		if p.cpu[r.name], err = r.cpu(); err != nil {
			return p, err
		}
	}
	p.busy, p.total = benchkit.MachineCPU()
	p.at = time.Now()
	return p, nil
}

// endPhase reads the figures of the phase since p, for the replicas alive.
func endPhase(ctx context.Context, c client.Client, set replicaSet, api *benchkit.APIServerMetrics, p phaseStart, rss map[string]int64) (phaseFigures, error) {
	out := phaseFigures{window: time.Since(p.at)}
	if busy, total := benchkit.MachineCPU(); total > p.total {
		out.machineBusy = float64(busy-p.busy) / float64(total-p.total)
	}
	for _, r := range set {
		if !r.alive() {
			continue
		}
		lag, err := r.lag(ctx)
		if err != nil {
			return out, err
		}
		cpu, err := r.cpu()
		if err != nil {
			return out, err
		}
		leader, err := r.isLeader(ctx)
		if err != nil {
			return out, err
		}
		out.replicas = append(out.replicas, replicaFigures{name: r.name, maxRSS: rss[r.name],
			cpu: cpu - p.cpu[r.name], lag: lag.Minus(p.lag[r.name]), leader: leader})
	}
	out.apiCPU = benchkit.Children()["kube-apiserver"].CPU - p.apiCPU
	var err error
	if out.apiAfter, err = api.Requests(ctx); err != nil {
		return out, err
	}
	out.apiBefore = p.api
	owners, err := canaryOwners(ctx, c)
	if err != nil {
		return out, err
	}
	counts := map[string]int{}
	for _, owner := range owners {
		counts[owner]++
	}
	out.unowned = counts[""]
	for i := range out.replicas {
		out.replicas[i].owned = counts[out.replicas[i].name]
	}
	return out, nil
}

// measureMode measures the window; with more than one replica it kills one
// at o.killAt and measures the hand-over.
func measureMode(ctx context.Context, o options, c client.Client, cluster *localcluster.Cluster, targets benchkit.Targets, set replicaSet, res *modeResult) error {
	api, err := benchkit.NewAPIServerMetrics(cluster.Config)
	if err != nil {
		return err
	}
	kill := len(set) > 1
	if err := startRecording(ctx, targets); err != nil {
		return err
	}
	start, err := startPhase(ctx, set, api)
	if err != nil {
		return err
	}
	rss := startRSSMax(set, time.Second)
	defer rss.finish()
	steadyFor := o.measure
	if kill {
		steadyFor = o.killAt
	}
	if err := waitWindow(ctx, set, start.at, steadyFor, o.measure); err != nil {
		return err
	}
	if res.steady, err = endPhase(ctx, c, set, api, start, rss.snapshot(true)); err != nil {
		return err
	}
	if o.heapProfiles {
		if err := keepHeapProfiles(ctx, set, res.steady); err != nil {
			return err
		}
	}
	if !kill {
		return nil
	}
	f, err := killOne(ctx, o, c, set)
	if err != nil {
		return err
	}
	after, err := startPhase(ctx, set, api)
	if err != nil {
		return err
	}
	if err := waitWindow(ctx, set, start.at, o.measure, o.measure); err != nil {
		return err
	}
	if f.phase, err = endPhase(ctx, c, set, api, after, rss.snapshot(false)); err != nil {
		return err
	}
	if err := f.judge(ctx, c, targets); err != nil {
		return err
	}
	res.failover = f
	return nil
}

// keepHeapProfiles saves every live replica's heap profile, the leader's
// marked, so what the leader holds beyond a follower can be compared
// (go tool pprof -diff_base).
func keepHeapProfiles(ctx context.Context, set replicaSet, f phaseFigures) error {
	leader := map[string]bool{}
	for _, r := range f.replicas {
		leader[r.name] = r.leader
	}
	for _, r := range set {
		if !r.alive() {
			continue
		}
		suffix := ""
		if leader[r.name] {
			suffix = "-leader"
		}
		path, err := r.heapProfile(ctx, suffix)
		if err != nil {
			return err
		}
		mem, err := r.memoryParts(ctx)
		if err != nil {
			return err
		}
		benchkit.Step("heap profile of %s: %s; %s", r.name, path, mem)
	}
	return nil
}

// waitWindow waits until until has passed since start, logging progress
// against the whole window; a replica exiting by itself ends it with an
// error.
func waitWindow(ctx context.Context, set replicaSet, start time.Time, until, whole time.Duration) error {
	progress := time.NewTicker(30 * time.Second)
	defer progress.Stop()
	check := time.NewTicker(time.Second)
	defer check.Stop()
	end := time.NewTimer(time.Until(start.Add(until)))
	defer end.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-progress.C:
			benchkit.Step("  %s of %s measured", time.Since(start).Round(time.Second), whole)
		case <-check.C:
			if err := set.exitError(); err != nil {
				return err
			}
		case <-end.C:
			return nil
		}
	}
}

// canaryOwners maps every canary ("namespace/name") to its owner label.
func canaryOwners(ctx context.Context, c client.Client) (map[string]string, error) {
	var list metav1.PartialObjectMetadataList
	list.SetGroupVersionKind(v1alpha1.GroupVersion.WithKind("RevocationCanaryList"))
	if err := c.List(ctx, &list); err != nil {
		return nil, err
	}
	out := make(map[string]string, len(list.Items))
	for _, m := range list.Items {
		out[m.Namespace+"/"+m.Name] = m.Labels[v1alpha1.LabelShardOwner]
	}
	return out, nil
}

// world is the runs and their measurements at one moment.
type world struct {
	at     time.Time
	runs   []runRef
	bounds map[string]boundState // by run "namespace/name"
	// runCanary maps a run to its canary.
	runCanary map[string]string
	// tokenSecrets maps a run to its token Secret "namespace/name".
	tokenSecrets map[string]string
}

func readWorld(ctx context.Context, c client.Client) (world, error) {
	var list v1alpha1.CanaryRunList
	if err := c.List(ctx, &list); err != nil {
		return world{}, err
	}
	w := world{at: time.Now(), bounds: map[string]boundState{}, runCanary: map[string]string{}, tokenSecrets: map[string]string{}}
	for i := range list.Items {
		r := &list.Items[i]
		key := r.Namespace + "/" + r.Name
		canary := r.Namespace + "/" + r.Labels[v1alpha1.LabelCanary]
		slot := "run-now"
		if t := r.Annotations[v1alpha1.AnnotationScheduledTime]; t != "" {
			slot = t
		}
		w.runs = append(w.runs, runRef{canary: canary, name: key, uid: string(r.UID), slot: slot})
		w.bounds[key] = boundOf(r, w.at)
		w.runCanary[key] = canary
		if r.Status.TokenSecretName != "" {
			w.tokenSecrets[key] = r.Namespace + "/" + r.Status.TokenSecretName
		}
	}
	return w, nil
}

// boundOf reads a run's search exclusion measurement.
func boundOf(r *v1alpha1.CanaryRun, now time.Time) boundState {
	b := boundState{run: r.Namespace + "/" + r.Name, phase: string(r.Status.Phase)}
	if req := r.Status.RevokeRequestedTime; req != nil {
		b.knownLag = now.Sub(req.Time)
	}
	for _, m := range r.Status.Surfaces {
		if m.Surface != v1alpha1.SurfaceSearch {
			continue
		}
		if m.LastPositiveStart != nil && r.Status.RevokeAcknowledgedTime != nil {
			b.lower, b.hasLower = m.LastPositiveStart.Sub(r.Status.RevokeAcknowledgedTime.Time), true
		}
		b.hasUpper = m.Excluded || (m.Bounds != nil && m.Bounds.Upper != nil)
	}
	return b
}

// handles maps each canary handle (the search query) to its canary, from
// the runs' token Secrets.
func handles(ctx context.Context, c client.Client, w world) (map[string]string, error) {
	byNamespace := map[string]bool{}
	for _, s := range w.tokenSecrets {
		ns, _, _ := cutKey(s)
		byNamespace[ns] = true
	}
	secrets := map[string][]byte{}
	for ns := range byNamespace {
		var list corev1.SecretList
		if err := c.List(ctx, &list, client.InNamespace(ns)); err != nil {
			return nil, err
		}
		for _, s := range list.Items {
			secrets[s.Namespace+"/"+s.Name] = s.Data["handle"]
		}
	}
	out := map[string]string{}
	for run, s := range w.tokenSecrets {
		if h := secrets[s]; len(h) > 0 {
			out[string(h)] = w.runCanary[run]
		}
	}
	return out, nil
}

func cutKey(key string) (namespace, name string, ok bool) {
	for i := range len(key) {
		if key[i] == '/' {
			return key[:i], key[i+1:], true
		}
	}
	return "", key, false
}

// failoverResult is what the kill showed.
type failoverResult struct {
	victim     string
	wasLeader  bool
	kill       time.Time
	owned      []string
	before     world
	phase      phaseFigures
	searches   int
	unassigned int
	doubles    []doubleProbe
	reprobe    reprobe
	runs       runCheck
	bounds     boundCheck
	// victimLast is the victim's figures up to the kill.
}

// killOne reads the world, then SIGKILLs a follower (or the leader).
func killOne(ctx context.Context, o options, c client.Client, set replicaSet) (*failoverResult, error) {
	leader, err := set.leader(ctx)
	if err != nil {
		return nil, err
	}
	var victim *replica
	for _, r := range set {
		if (r == leader) == o.killLeader {
			victim = r
		}
	}
	if victim == nil {
		return nil, errNoReplica
	}
	owners, err := canaryOwners(ctx, c)
	if err != nil {
		return nil, err
	}
	f := &failoverResult{victim: victim.name, wasLeader: victim == leader}
	for canary, owner := range owners {
		if owner == victim.name {
			f.owned = append(f.owned, canary)
		}
	}
	if len(f.owned) == 0 {
		return nil, fmt.Errorf("replica %s owns no canary to hand over", victim.name)
	}
	if f.before, err = readWorld(ctx, c); err != nil {
		return nil, err
	}
	f.kill = time.Now()
	victim.kill()
	benchkit.Step("  killed replica %s (leader: %t) owning %d canaries", victim.name, f.wasLeader, len(f.owned))
	return f, nil
}

// judge reads the searches and the runs after the window and compares.
func (f *failoverResult) judge(ctx context.Context, c client.Client, targets benchkit.Targets) error {
	after, err := readWorld(ctx, c)
	if err != nil {
		return err
	}
	byHandle, err := handles(ctx, c, after)
	if err != nil {
		return err
	}
	searches, err := readRecords(ctx, targets)
	if err != nil {
		return err
	}
	f.searches = len(searches)
	probes := make([]probe, 0, len(searches))
	for _, s := range searches {
		canary, replica := byHandle[s.query], replicaOf(s.agent)
		if canary == "" || replica == "" {
			f.unassigned++
			continue
		}
		probes = append(probes, probe{canary: canary, replica: replica, start: s.start})
	}
	f.doubles = doubleProbes(probes)
	f.reprobe = reprobes(probes, f.victim, f.owned, f.kill)
	f.runs = checkRuns(f.before.runs, after.runs)
	owned := map[string]bool{}
	for _, c := range f.owned {
		owned[c] = true
	}
	atKill, atEnd := map[string]boundState{}, map[string]boundState{}
	for run, canary := range f.before.runCanary {
		if owned[canary] {
			atKill[run] = f.before.bounds[run]
			if b, ok := after.bounds[run]; ok {
				atEnd[run] = b
			}
		}
	}
	f.bounds = checkBounds(atKill, atEnd)
	return nil
}

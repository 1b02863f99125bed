package probe

import (
	"context"
	"math/rand/v2"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/credential"
	"github.com/ragcanary/ragcanary/internal/driver"
	"github.com/ragcanary/ragcanary/internal/measure"
	"github.com/ragcanary/ragcanary/internal/metrics"
	"github.com/ragcanary/ragcanary/internal/target"
)

// jitterFraction spreads probe rounds by up to ±10% of the interval so
// many runs against one corpus do not probe in lockstep.
const jitterFraction = 0.1

// Plan is everything a probe loop needs. It holds credentials and the
// canary token: never log or print it.
type Plan struct {
	Stage Stage
	// Driver talks to the corpus.
	Driver driver.Driver
	// Release lets go of the driver's connections when the loop ends (or
	// at once when a loop already running is kept); nil holds nothing.
	Release func()
	// Corpus is the rate-limit key ("namespace/name"); Limit is its budget.
	Corpus string
	Limit  target.Limit
	// Interval between probe rounds: the only spacing of a Fixed schedule,
	// the shortest gap and the confirmation spacing of an Adaptive one.
	Interval time.Duration
	// Schedule spaces rounds beyond Interval; the zero value is Fixed.
	Schedule Schedule
	// Confirmations is how many real negatives confirm exclusion.
	Confirmations int32
	// Surfaces to probe, in status order.
	Surfaces []v1alpha1.Surface
	// Persona is the probed persona's credential; Controls are the control
	// personas. PersonaSource, when set, gives the credential each round
	// instead (an OAuth2 token is replaced as it expires, and a probe loop
	// outlives it).
	Persona       driver.Token
	PersonaSource credential.Source
	Controls      []Control
	// Target is the canary document and token.
	Target Target
	// Metrics labels this run's series.
	Metrics metrics.Run
	// RevokeAcknowledged is when the revocation was acknowledged; the live
	// exposure gauge counts from it (exclusion stage).
	RevokeAcknowledged time.Time
	// Resume holds measurements and the violation count read back from
	// status, used when the loop is (re)started, e.g. after a restart.
	Resume           []v1alpha1.SurfaceMeasurement
	ResumeViolations int32
	ResumeControls   []v1alpha1.ControlProbeCounts
	// ResumeSightings and ResumeSightingTotal are a sentinel's sightings
	// read back from status (watch stage).
	ResumeSightings     []v1alpha1.SentinelSighting
	ResumeSightingTotal int32
	// Sentinel keeps control sightings with their carriers at every
	// stage, not only while watching: a sentinel seen by an outsider
	// before its owner needs the same evidence.
	Sentinel bool
	// RefusalExcludes counts the probed persona's credential being refused
	// (the token endpoint refusing it a token, or the surface answering
	// 401/403) as Absent: set for the exclusion stage of a credential
	// revocation, where that refusal is the end of access the run
	// measures. Anywhere else a refusal is an error, never an absence.
	RefusalExcludes bool
}

func (p Plan) release() {
	if p.Release != nil {
		p.Release()
	}
}

// Control is a control persona: a name for counts and messages, and its
// credential (Source, when set, gives it each round, as Plan.PersonaSource).
type Control struct {
	Name   string
	Token  driver.Token
	Source credential.Source
}

// Engine runs one probe loop per active run. It is a manager.Runnable:
// loops stop when the manager stops.
type Engine struct {
	clock    clock.WithTicker
	limiters *target.Limiters

	notifyMu sync.RWMutex
	notify   func(types.NamespacedName)

	base   context.Context
	cancel context.CancelFunc

	mu    sync.Mutex
	loops map[types.NamespacedName]*loop
}

type loop struct {
	stage  Stage
	state  *State
	cancel context.CancelFunc
	done   chan struct{}
}

// NewEngine returns an engine drawing from limiters, with time from c.
func NewEngine(c clock.WithTicker, limiters *target.Limiters) *Engine {
	base, cancel := context.WithCancel(context.Background())
	return &Engine{clock: c, limiters: limiters, base: base, cancel: cancel,
		loops: map[types.NamespacedName]*loop{}}
}

// OnTransition sets the function called (from a probe goroutine) when a
// run reached a state the controller must persist promptly: visible on all
// surfaces, exclusion confirmed or undone, a control persona sighting. It
// may block briefly; the controller wires it to its event channel.
func (e *Engine) OnTransition(fn func(types.NamespacedName)) {
	e.notifyMu.Lock()
	defer e.notifyMu.Unlock()
	e.notify = fn
}

func (e *Engine) transition(key types.NamespacedName) {
	e.notifyMu.RLock()
	fn := e.notify
	e.notifyMu.RUnlock()
	if fn != nil {
		fn(key)
	}
}

// Limiters returns the engine's rate-limit registry.
func (e *Engine) Limiters() *target.Limiters { return e.limiters }

// Start implements manager.Runnable: it blocks until ctx ends, then stops
// every loop. Loops may be started before Start runs.
func (e *Engine) Start(ctx context.Context) error {
	<-ctx.Done()
	e.cancel()
	e.mu.Lock()
	loops := make([]*loop, 0, len(e.loops))
	for key, l := range e.loops {
		loops = append(loops, l)
		delete(e.loops, key)
	}
	e.mu.Unlock()
	for _, l := range loops {
		<-l.done
	}
	return nil
}

// NeedLeaderElection implements manager.LeaderElectionRunnable: only the
// leader probes, as only the leader reconciles runs.
func (e *Engine) NeedLeaderElection() bool { return true }

// Ensure makes sure a loop for key runs at plan's stage and returns its
// state. A loop already running at that stage is kept (its state is ahead
// of status); a loop at another stage is stopped and replaced. The corpus
// limit is refreshed on every call, so spec changes reach running loops.
func (e *Engine) Ensure(key types.NamespacedName, p Plan) *State {
	e.limiters.Set(p.Corpus, p.Limit)
	e.mu.Lock()
	if l, ok := e.loops[key]; ok && l.stage == p.Stage {
		e.mu.Unlock()
		p.release()
		return l.state
	}
	old := e.loops[key]
	delete(e.loops, key)
	e.mu.Unlock()
	if old != nil {
		old.stop()
	}

	ctx, cancel := context.WithCancel(e.base)
	l := &loop{stage: p.Stage, state: newState(p), cancel: cancel, done: make(chan struct{})}
	e.mu.Lock()
	e.loops[key] = l
	e.mu.Unlock()
	go func() {
		defer close(l.done)
		defer p.release()
		e.run(ctx, key, p, l.state)
	}()
	return l.state
}

// State returns the running loop's state for key.
func (e *Engine) State(key types.NamespacedName) (*State, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	l, ok := e.loops[key]
	if !ok {
		return nil, false
	}
	return l.state, true
}

// StateAt returns the state of key's loop if it runs at stage.
func (e *Engine) StateAt(key types.NamespacedName, stage Stage) (*State, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	l, ok := e.loops[key]
	if !ok || l.stage != stage {
		return nil, false
	}
	return l.state, true
}

// Stop ends key's loop, if any, and waits until no probe of it is in
// flight. It returns the loop's final state (nil when none ran), so results
// of rounds no snapshot reported yet are not lost.
func (e *Engine) Stop(key types.NamespacedName) *State {
	e.mu.Lock()
	l := e.loops[key]
	delete(e.loops, key)
	e.mu.Unlock()
	if l == nil {
		return nil
	}
	l.stop()
	return l.state
}

func (l *loop) stop() {
	l.cancel()
	<-l.done
}

// run probes in rounds until ctx ends. The next round is due when the
// plan's schedule says (NextDue), counted from when the previous one was
// due; a round that overran does not cause a burst of catch-up rounds.
func (e *Engine) run(ctx context.Context, key types.NamespacedName, p Plan, st *State) {
	due := e.clock.Now()
	series := metrics.NewProbeSeries(p.Metrics)
	sched := p.Schedule
	if sched.Start.IsZero() {
		sched.Start = due
	}
	for {
		if !e.waitUntil(ctx, due) {
			return
		}
		ch, sum := e.round(ctx, p, series, st, due)
		if ctx.Err() != nil {
			return
		}
		e.record(p, st, ch)
		if ch.transition {
			e.transition(key)
		}
		due = NextDue(ScheduleInput{Schedule: sched, Interval: p.Interval, Due: due,
			Outcome: sum.outcome, Streak: sum.streak, ProbeDuration: sum.slowest, Jitter: rand.Float64()})
		if now := e.clock.Now(); due.Before(now) {
			due = now
		}
	}
}

func (e *Engine) waitUntil(ctx context.Context, due time.Time) bool {
	d := due.Sub(e.clock.Now())
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := e.clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C():
		return true
	}
}

// round probes every surface as the persona and as each control persona,
// concurrently, folds the results into st and summarises them for the
// schedule.
func (e *Engine) round(ctx context.Context, p Plan, series *metrics.ProbeSeries, st *State, due time.Time) (change, roundSummary) {
	type job struct {
		surface v1alpha1.Surface
		token   credentialNow
		control string
	}
	persona := currentCredential(ctx, p.Persona, p.PersonaSource)
	controls := make([]credentialNow, len(p.Controls))
	for i, c := range p.Controls {
		controls[i] = currentCredential(ctx, c.Token, c.Source)
	}
	var jobs []job
	for _, s := range p.Surfaces {
		// A sentinel's owner saw it before watching began; only the
		// personas outside its access list are watching.
		if p.Stage != StageWatch {
			jobs = append(jobs, job{surface: s, token: persona})
		}
		for i, c := range p.Controls {
			jobs = append(jobs, job{surface: s, token: controls[i], control: c.Name})
		}
	}
	results := make([]result, len(jobs))
	var wg sync.WaitGroup
	for i, j := range jobs {
		wg.Go(func() {
			if j.token.err != nil {
				// No credential, no probe: an error, never an absence (but
				// for a revoked credential's refusal), and counted in the
				// probe metrics as status counts it.
				now := e.clock.Now()
				outcome := measure.Error
				if p.RefusalExcludes && j.control == "" && credential.IsRefused(j.token.err) {
					outcome = measure.Absent
				}
				results[i] = result{surface: j.surface, control: j.control, outcome: outcome, start: now, end: now}
				observe(series, results[i])
				return
			}
			results[i] = e.probe(ctx, p, series, j.surface, j.token.token, j.control, due)
		})
	}
	wg.Wait()
	if ctx.Err() != nil {
		// Probes cut short by a stop are not observations.
		return change{}, roundSummary{}
	}
	ch := st.apply(p.Surfaces, results)
	return ch, st.summarize(results)
}

// credentialNow is a persona's credential for one round.
type credentialNow struct {
	token driver.Token
	err   error
}

// currentCredential asks src for the credential to send this round; a
// plan without a source sends its fixed token.
func currentCredential(ctx context.Context, fixed driver.Token, src credential.Source) credentialNow {
	if src == nil {
		return credentialNow{token: fixed}
	}
	tok, err := src.Token(ctx)
	return credentialNow{token: tok, err: err}
}

// probe runs one rate-limited probe. The driver bounds it by the corpus
// timeout; there is no second timeout layer here.
func (e *Engine) probe(ctx context.Context, p Plan, series *metrics.ProbeSeries, surface v1alpha1.Surface, token driver.Token, control string, due time.Time) result {
	r := result{surface: surface, control: control, outcome: measure.Error}
	if err := e.limiters.Wait(ctx, p.Corpus); err != nil {
		return r
	}
	r.start = e.clock.Now()
	series.ObserveLag(r.start.Sub(due))
	if p.Stage == StageExclusion && p.Target.UpdatedPayload != "" && control == "" {
		r.content = true
		r.outcome, r.fresh = ProbeContent(ctx, p.Driver, surface, token, p.Target)
	} else {
		ev := ProbeEvidence(ctx, p.Driver, surface, token, p.Target)
		r.outcome, r.carriers = ev.Outcome, ev.Carriers
		if ev.Refused && p.RefusalExcludes && control == "" {
			r.outcome = measure.Absent
		}
	}
	r.end = e.clock.Now()
	observe(series, r)
	return r
}

// observe records a finished probe in the run's probe metrics.
func observe(series *metrics.ProbeSeries, r result) {
	role := metrics.RolePersona
	if r.control != "" {
		role = metrics.RoleControl
	}
	series.ObserveProbe(string(r.surface), role, r.outcome.String(), r.end.Sub(r.start))
}

// record updates the live metrics after a round.
func (e *Engine) record(p Plan, st *State, ch change) {
	metrics.AddIsolationViolations(p.Metrics, ch.violations)
	for _, s := range ch.sightings {
		metrics.AddSentinelSighting(p.Metrics, s.Persona, string(s.Surface))
	}
	for _, s := range ch.reappearances {
		metrics.AddReappearance(p.Metrics, string(s))
	}
	if p.Stage != StageExclusion {
		return
	}
	now := e.clock.Now()
	for _, m := range st.Snapshot().Surfaces {
		metrics.SetLiveExposure(p.Metrics, string(m.Surface), measure.LiveExposure(&m, p.RevokeAcknowledged, now))
	}
}

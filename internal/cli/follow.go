package cli

import (
	"context"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
)

// Progress is one look at a requested run.
type Progress struct {
	Run string `json:"run"`
	// Kind is CanaryRun or SuiteRun.
	Kind string `json:"kind"`
	// Created is false until the controller has created the run; Waiting
	// then says what the parent reports.
	Created bool   `json:"created"`
	Waiting string `json:"waiting,omitempty"`
	Phase   string `json:"phase,omitempty"`
	// Done is true once the run reached its terminal phase.
	Done bool `json:"done"`
	// Verdict is the canary verdict, or Passed/Failed for a suite run.
	Verdict string `json:"verdict,omitempty"`
	// OK is true for SLOMet, for an Isolated sentinel and for a suite run whose gates all passed.
	OK        bool       `json:"ok"`
	Message   string     `json:"message,omitempty"`
	StartTime *time.Time `json:"startTime,omitempty"`

	// Canary runs.
	TimeToVisibilitySeconds *float64      `json:"timeToVisibilitySeconds,omitempty"`
	Surfaces                []RunSurface  `json:"surfaces,omitempty"`
	Exposure                []Exposure    `json:"liveExposure,omitempty"`
	IsolationViolations     int32         `json:"isolationViolations,omitempty"`
	Sentinel                *SentinelView `json:"sentinel,omitempty"`

	// Suite runs.
	Executions  *int32                `json:"executions,omitempty"`
	Disclosures *int32                `json:"disclosures,omitempty"`
	ProbeErrors *int32                `json:"probeErrors,omitempty"`
	Gates       []v1alpha1.GateResult `json:"gates,omitempty"`
}

// View shows a run being followed. Update is called after every look,
// Done once with the terminal look.
type View interface {
	Update(p Progress)
	Done(p Progress)
}

// Observe looks at the requested run once.
func Observe(ctx context.Context, c client.Reader, req RunRequest, now time.Time) (Progress, error) {
	kind := "CanaryRun"
	if req.Target.Kind == KindSuite {
		kind = "SuiteRun"
	}
	p := Progress{Run: req.Run, Kind: kind}
	run := newRun(req.Target.Kind)
	err := c.Get(ctx, types.NamespacedName{Namespace: req.Target.Namespace, Name: req.Run}, run)
	if apierrors.IsNotFound(err) {
		p.Waiting, err = waitingReason(ctx, c, req)
		return p, err
	}
	if err != nil {
		return p, fmt.Errorf("reading %s %s: %w", kind, req.Run, err)
	}
	p.Created = true
	switch r := run.(type) {
	case *v1alpha1.CanaryRun:
		corpus, err := corpusOf(ctx, c, r)
		if err != nil {
			return p, err
		}
		observeCanaryRun(&p, r, corpus, now)
	case *v1alpha1.SuiteRun:
		observeSuiteRun(&p, r)
	}
	return p, nil
}

// corpusOf reads the run's Corpus for its SLOs; nil when it is gone.
func corpusOf(ctx context.Context, c client.Reader, run *v1alpha1.CanaryRun) (*v1alpha1.Corpus, error) {
	var corpus v1alpha1.Corpus
	err := c.Get(ctx, types.NamespacedName{Namespace: run.Namespace, Name: run.Spec.CorpusRef.Name}, &corpus)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading corpus %s: %w", run.Spec.CorpusRef.Name, err)
	}
	return &corpus, nil
}

func observeCanaryRun(p *Progress, run *v1alpha1.CanaryRun, corpus *v1alpha1.Corpus, now time.Time) {
	flight := runInFlight(run, corpus, now)
	p.Phase, p.StartTime = flight.Phase, flight.StartTime
	p.Message = run.Status.Message
	p.IsolationViolations = run.Status.IsolationViolations
	p.Sentinel = flight.Sentinel
	p.Done = finished(run)
	hr := historyRun(run, corpus)
	p.TimeToVisibilitySeconds, p.Surfaces = hr.TimeToVisibilitySeconds, hr.Surfaces
	if p.Done {
		p.Verdict = string(run.Status.Verdict)
		p.OK = goodVerdict(run.Status.Verdict)
		return
	}
	p.Exposure = flight.Exposure
}

func observeSuiteRun(p *Progress, run *v1alpha1.SuiteRun) {
	p.Phase = string(run.Status.Phase)
	if p.Phase == "" {
		p.Phase = string(v1alpha1.SuiteRunPending)
	}
	p.StartTime = timeOf(run.Status.StartTime)
	p.Executions, p.Disclosures, p.ProbeErrors = run.Status.Executions, run.Status.Disclosures, run.Status.ProbeErrors
	p.Gates = run.Status.Gates
	p.Done = run.Status.Phase == v1alpha1.SuiteRunSucceeded || run.Status.Phase == v1alpha1.SuiteRunFailed
	if !p.Done {
		return
	}
	c := meta.FindStatusCondition(run.Status.Conditions, v1alpha1.ConditionPassed)
	switch {
	case c == nil:
		p.Verdict = "Unknown"
	case c.Status == "True":
		p.Verdict, p.OK = "Passed", true
	default:
		p.Verdict = "Failed"
	}
	if c != nil {
		p.Message = c.Message
	}
}

// waitingReason says why the run does not exist yet, from the parent's
// status: runs still active (no overlapping runs), suspension, or Ready.
func waitingReason(ctx context.Context, c client.Reader, req RunRequest) (string, error) {
	parent := newParent(req.Target.Kind)
	if err := c.Get(ctx, types.NamespacedName{Namespace: req.Target.Namespace, Name: req.Target.Name}, parent); err != nil {
		return "", fmt.Errorf("reading %s: %w", req.Target, err)
	}
	var active []v1alpha1.LocalObjectReference
	var conds []metav1.Condition
	switch o := parent.(type) {
	case *v1alpha1.RevocationCanary:
		active, conds = o.Status.Active, o.Status.Conditions
	case *v1alpha1.EvalSuite:
		active, conds = o.Status.Active, o.Status.Conditions
	}
	if len(active) > 0 {
		names := make([]string, 0, len(active))
		for _, a := range active {
			names = append(names, a.Name)
		}
		return "waiting for the controller; active: " + strings.Join(names, ", "), nil
	}
	if r := meta.FindStatusCondition(conds, v1alpha1.ConditionReady); r != nil && r.Status != "True" {
		return fmt.Sprintf("waiting for the controller; %s is not Ready (%s)", req.Target, r.Reason), nil
	}
	return "waiting for the controller to create it", nil
}

// Follow looks at the run every interval until it is done or ctx ends,
// showing each look in view.
func Follow(ctx context.Context, c client.Reader, req RunRequest, interval time.Duration, now func() time.Time, view View) (Progress, error) {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		p, err := Observe(ctx, c, req, now())
		if err != nil {
			return p, err
		}
		view.Update(p)
		if p.Done {
			view.Done(p)
			return p, nil
		}
		select {
		case <-ctx.Done():
			return p, fmt.Errorf("%s %s not finished: %w", p.Kind, p.Run, ctx.Err())
		case <-tick.C:
		}
	}
}

package canaryrun

import (
	"context"
	"fmt"
	"slices"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/driver"
	"github.com/ragcanary/ragcanary/internal/probe"
	"github.com/ragcanary/ragcanary/internal/target"
)

// startConversation (Revoking, before the revocation is requested) opens
// the conversation whose follow-ups the Conversation surface probes after
// the revocation. Its first turn must show the canary: only a conversation
// holding the canary can show whether follow-ups keep it. The ID is
// persisted before the revocation step acts, so after a restart the probes
// follow up in the same conversation. stop is true when the caller must
// return res and err.
func (r *CanaryRunReconciler) startConversation(ctx context.Context, rc *runCtx, deps *runDeps) (ctrl.Result, bool, error) {
	run := rc.run
	if !needsConversation(run) {
		return ctrl.Result{}, false, nil
	}
	conv, ok := deps.corpus.Driver.(driver.Conversations)
	if !ok {
		res, err := r.conclude(rc, v1alpha1.VerdictSetupFailed, fmt.Sprintf(
			"Corpus %q: its driver has no conversation API; remove Conversation from probing.surfaces", deps.corpus.Object.Name))
		return res, true, err
	}
	deadline := conversationDeadline(run)
	token, problem, err := r.readToken(ctx, run)
	if err != nil {
		return ctrl.Result{}, true, err
	}
	if problem != "" {
		res, err := r.onProblem(rc, target.Wait("TokenUnavailable", "%s", problem), deadline)
		return res, true, err
	}
	t := token.target(run.Status.DocumentID)
	id, first, err := conv.StartConversation(ctx, deps.persona.Token, t.Handle)
	if res, stop, err := r.sourceResult(rc, "starting the conversation", err, deadline); stop {
		return res, true, err
	}
	if !probe.AnswerShows(first, t) {
		res, err := r.onProblem(rc, target.Wait(v1alpha1.ReasonConversationNotShowingCanary,
			"the first turn of a conversation did not show the canary yet; retrying with a new conversation"), deadline)
		if res.RequeueAfter > SourceRetry {
			res.RequeueAfter = SourceRetry // a replica may just be behind
		}
		return res, true, err
	}
	run.Status.ConversationID = id
	if err := r.persist(ctx, rc); err != nil {
		return ctrl.Result{}, true, err
	}
	// The ID names no secret, but payloads and handles are never logged.
	log.FromContext(ctx).V(1).Info("conversation started before the revocation")
	return ctrl.Result{}, false, nil
}

// needsConversation: the run probes the Conversation surface and has not
// started its conversation. Once the revocation was requested no
// conversation is started: it could not hold the canary from before it.
func needsConversation(run *v1alpha1.CanaryRun) bool {
	return slices.Contains(probingSurfaces(run), v1alpha1.SurfaceConversation) &&
		run.Status.ConversationID == "" && run.Status.RevokeRequestedTime == nil
}

// conversationDeadline gives the conversation as long after visibility as
// the canary had to become visible.
func conversationDeadline(run *v1alpha1.CanaryRun) time.Time {
	if v := run.Status.VisibleTime; v != nil {
		return v.Add(visibilityTimeout(run))
	}
	return run.CreationTimestamp.Add(visibilityTimeout(run))
}

// conversationOf is the persona's conversation for the probe plan; zero
// before it started (visibility probes then start conversations).
func conversationOf(run *v1alpha1.CanaryRun, persona driver.Token) probe.Conversation {
	if run.Status.ConversationID == "" {
		return probe.Conversation{}
	}
	return probe.Conversation{ID: run.Status.ConversationID, Owner: persona}
}

// conversationProblem reports a corpus whose capabilities promise
// conversations its resolved driver cannot hold, or one that cannot hold as
// many turns as the run may ask, or "" (target.SurfaceProblem has already
// checked the capabilities).
func conversationProblem(run *v1alpha1.CanaryRun, deps *runDeps) string {
	if !slices.Contains(probingSurfaces(run), v1alpha1.SurfaceConversation) {
		return ""
	}
	if _, ok := deps.corpus.Driver.(driver.Conversations); !ok {
		return fmt.Sprintf("Corpus %q has no conversation surface (driver contract v1.1 conversations or spec.surfaces.chat); remove Conversation from probing.surfaces", deps.corpus.Object.Name)
	}
	return turnsProblem(run, deps.corpus.Object.Name, deps.corpus.Driver)
}

// turnLimited is a conversation API holding at most MaxTurns turns a
// conversation (a chat surface); 0 is no limit the operator knows of.
type turnLimited interface{ MaxTurns() int }

// turnsProblem refuses a run whose conversation could run out of turns
// before the exclusion timeout: its follow-ups would then fail, and the
// surface could conclude nothing after the last one.
func turnsProblem(run *v1alpha1.CanaryRun, corpus string, d driver.Driver) string {
	t, ok := d.(turnLimited)
	if !ok || t.MaxTurns() <= 0 {
		return ""
	}
	need := turnsNeeded(run)
	if need <= t.MaxTurns() {
		return ""
	}
	return fmt.Sprintf("the Conversation surface may ask up to %d turns in one conversation (exclusionTimeout %s at probing.interval %s), more than the %d a conversation on Corpus %q's chat surface holds; lengthen probing.interval or shorten exclusionTimeout",
		need, exclusionTimeout(run), run.Spec.Probing.Interval.Duration, t.MaxTurns(), corpus)
}

// probeJitter is how much earlier than its interval a round may come (the
// probe engine's jitter, ±10 %).
const probeJitter = 0.1

// turnsNeeded is the most turns the run's conversation may take: the
// first, asked before the revocation, and one follow-up a round from the
// revocation to the exclusion timeout, rounds as close as the jitter lets
// them, plus a round ending just before each surface's SLO deadline and
// the timeout (Adaptive) and one a restart may add.
func turnsNeeded(run *v1alpha1.CanaryRun) int {
	interval := run.Spec.Probing.Interval.Duration
	if interval <= 0 {
		interval = 5 * time.Second // the CRD default
	}
	gap := time.Duration(float64(interval) * (1 - probeJitter))
	rounds := int((exclusionTimeout(run) + gap - 1) / gap)
	return 1 + rounds + len(probingSurfaces(run)) + 1 + 1
}

// endConversation frees the run's conversation once the run is over: the
// operator keeps a chat surface's conversations (to resend them with every
// follow-up), and nothing follows up in this one again.
func (r *CanaryRunReconciler) endConversation(run *v1alpha1.CanaryRun) {
	if id := run.Status.ConversationID; id != "" {
		c := corpusName(run)
		r.Door.EndConversation(c.Namespace, c.Name, id)
	}
}

package cli

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/schedule"
)

// Target kinds `run` accepts.
const (
	KindCanary = "RevocationCanary"
	KindSuite  = "EvalSuite"
)

// Target is the canary or suite a run is asked of.
type Target struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
}

func (t Target) String() string { return strings.ToLower(t.Kind) + "/" + t.Name }

// ErrAmbiguous: a canary and a suite share the name.
var ErrAmbiguous = errors.New("ambiguous name")

// ResolveTarget finds what arg names: "canary/NAME" or "suite/NAME" say it;
// a bare NAME is the RevocationCanary or EvalSuite of that name, and an
// error when both exist.
func ResolveTarget(ctx context.Context, c client.Reader, ns, arg string) (Target, error) {
	kind, name, explicit := strings.Cut(arg, "/")
	if !explicit {
		name = kind
	}
	kinds := []string{KindCanary, KindSuite}
	if explicit {
		switch strings.ToLower(kind) {
		case "canary", "revocationcanary", "revocationcanaries", "rcan":
			kinds = []string{KindCanary}
		case "suite", "evalsuite", "evalsuites", "rcs":
			kinds = []string{KindSuite}
		default:
			return Target{}, fmt.Errorf("%q: the kind must be canary or suite", arg)
		}
	}
	var found []Target
	for _, k := range kinds {
		obj := newParent(k)
		err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, obj)
		switch {
		case err == nil:
			found = append(found, Target{Kind: k, Namespace: ns, Name: name})
		case !apierrors.IsNotFound(err):
			return Target{}, fmt.Errorf("reading %s %s/%s: %w", strings.ToLower(k), ns, name, err)
		}
	}
	switch len(found) {
	case 0:
		return Target{}, fmt.Errorf("no RevocationCanary or EvalSuite %q in namespace %q", name, ns)
	case 1:
		return found[0], nil
	}
	return Target{}, fmt.Errorf("%w: both a RevocationCanary and an EvalSuite are named %q; say canary/%s or suite/%s",
		ErrAmbiguous, name, name, name)
}

func newParent(kind string) client.Object {
	if kind == KindSuite {
		return &v1alpha1.EvalSuite{}
	}
	return &v1alpha1.RevocationCanary{}
}

func newRun(kind string) client.Object {
	if kind == KindSuite {
		return &v1alpha1.SuiteRun{}
	}
	return &v1alpha1.CanaryRun{}
}

// NewRunNowToken is a fresh run-now annotation value: the time, for a
// person reading the annotation, and random bits, so two requests in the
// same instant (or with a fake clock) still differ.
func NewRunNowToken(now time.Time, random io.Reader) (string, error) {
	b := make([]byte, 4)
	if _, err := io.ReadFull(random, b); err != nil {
		return "", fmt.Errorf("reading random bytes: %w", err)
	}
	return "kubectl-" + now.UTC().Format("20060102T150405.000Z") + "-" + hex.EncodeToString(b), nil
}

// RunRequest is a run-now request that was recorded.
type RunRequest struct {
	Target Target `json:"target"`
	Token  string `json:"token"`
	// Run is the name the controller gives the run it creates for the token.
	Run string `json:"run"`
}

// RequestRun sets the run-now annotation on the target with a fresh token.
// The controller creates exactly one run per new token, with a name derived
// from it, so the request names the run to follow.
func RequestRun(ctx context.Context, c client.Client, t Target, now time.Time) (RunRequest, error) {
	token, err := NewRunNowToken(now, rand.Reader)
	if err != nil {
		return RunRequest{}, err
	}
	patch, err := json.Marshal(map[string]any{
		"metadata": map[string]any{"annotations": map[string]string{v1alpha1.AnnotationRunNow: token}},
	})
	if err != nil {
		return RunRequest{}, err
	}
	obj := newParent(t.Kind)
	obj.SetNamespace(t.Namespace)
	obj.SetName(t.Name)
	if err := c.Patch(ctx, obj, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return RunRequest{}, fmt.Errorf("setting %s on %s: %w", v1alpha1.AnnotationRunNow, t, err)
	}
	return RunRequest{Target: t, Token: token, Run: schedule.RunNowName(t.Name, schedule.NormalizeToken(token))}, nil
}

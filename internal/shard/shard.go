// Package shard splits the operator's canaries and suites between manager
// replicas.
//
// Every replica holds a shard Lease (Keeper). One replica, the leader,
// runs the Sharder: it maps each RevocationCanary and EvalSuite, by
// rendezvous hashing of its namespace/name over the replicas whose Lease is
// live, to one replica, and records the choice as the v1alpha1.LabelShardOwner label on
// the object and on its runs. Each replica caches only objects carrying
// its own name in that label (CacheOptions), so its memory follows its
// share.
//
// A move drains first: the Sharder labels the object v1alpha1.LabelShardDrain, the old
// owner stops working on it, persists what it must keep and removes both
// labels (Release); only an object without a live owner gets a new one. A
// replica whose Lease expired cannot answer a drain, so its objects go to
// their new owner at once, in one patch each; a replica stops itself
// before its own Lease could be seen expired (Keeper), so it is not still
// probing then. A replica told to stop (SIGTERM) leaves the same way but
// at once: its work ends with its manager's context, then it deletes its
// Lease and waits, bounded, until its objects have new owners.
package shard

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"strings"

	"github.com/ragcanary/ragcanary/api/v1alpha1"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

const (
	// LeasePrefix starts every shard Lease name; the replica name follows.
	LeasePrefix = "ragcanary-shard-"
)

// Replica is this process's place among the replicas. The zero value is
// an unsharded operator, for which every method is a no-op.
type Replica struct {
	// Name is the replica's name in v1alpha1.LabelShardOwner and its Lease name.
	Name string
	// Sharded is true when objects are split between replicas.
	Sharded bool
}

// LeaseName is the name of the replica's shard Lease.
func LeaseName(replica string) string { return LeasePrefix + replica }

// DefaultName is the replica name when none is given: the Pod name from
// the downward API ($POD_NAME), else the host name (a Pod's host name is
// its name too, truncated to 63 characters).
func DefaultName() string {
	if n := os.Getenv("POD_NAME"); n != "" {
		return n
	}
	if h, err := os.Hostname(); err == nil && h != "" {
		return h
	}
	return "ragcanary"
}

// CheckName refuses a replica name that cannot be a label value.
func CheckName(name string) error {
	if name == "" {
		return errors.New("the shard name is empty")
	}
	if errs := validation.IsValidLabelValue(name); len(errs) > 0 {
		return fmt.Errorf("shard name %q is not a label value: %s", name, strings.Join(errs, "; "))
	}
	return nil
}

// Draining reports whether obj is asked to leave this replica.
func (r Replica) Draining(obj metav1.Object) bool {
	return r.Sharded && obj.GetLabels()[v1alpha1.LabelShardDrain] == "true"
}

// Adopt copies the parent's owner label onto a child about to be created,
// so the child lands in the same replica's cache as its parent.
func (r Replica) Adopt(child, parent metav1.Object) {
	owner, ok := parent.GetLabels()[v1alpha1.LabelShardOwner]
	if !r.Sharded || !ok {
		return
	}
	l := maps.Clone(child.GetLabels())
	if l == nil {
		l = map[string]string{}
	}
	l[v1alpha1.LabelShardOwner] = owner
	child.SetLabels(l)
}

// CacheOptions limits the cache of each of objs to the objects this
// replica owns. Only objects that carry the owner label exist for it.
func (r Replica) CacheOptions(opts cache.Options, objs ...client.Object) cache.Options {
	if !r.Sharded {
		return opts
	}
	sel := labels.SelectorFromSet(labels.Set{v1alpha1.LabelShardOwner: r.Name})
	byObject := make(map[client.Object]cache.ByObject, len(opts.ByObject)+len(objs))
	maps.Copy(byObject, opts.ByObject)
	for _, obj := range objs {
		byObject[obj] = cache.ByObject{Label: sel}
	}
	opts.ByObject = byObject
	return opts
}

// Release gives obj up: it removes the owner and drain labels, with an
// optimistic lock so a release computed from a stale copy fails instead of
// dropping another replica's claim. The caller has stopped working on obj
// and persisted what it must keep.
func Release(ctx context.Context, c client.Client, obj client.Object) error {
	return patchLabels(ctx, c, obj, map[string]*string{v1alpha1.LabelShardOwner: nil, v1alpha1.LabelShardDrain: nil})
}

// patchLabels sets (non-nil) or removes (nil) labels on obj.
func patchLabels(ctx context.Context, c client.Client, obj client.Object, change map[string]*string) error {
	before := obj.DeepCopyObject().(client.Object)
	l := maps.Clone(obj.GetLabels())
	if l == nil {
		l = map[string]string{}
	}
	for k, v := range change {
		if v == nil {
			delete(l, k)
		} else {
			l[k] = *v
		}
	}
	obj.SetLabels(l)
	return c.Patch(ctx, obj, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}))
}

// serviceAccountNamespace is where a Pod finds its own namespace.
const serviceAccountNamespace = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// Namespace is the operator's namespace, where the shard Leases live:
// explicit when set, else $POD_NAMESPACE, else the Pod's service account
// namespace.
func Namespace(explicit string) (string, error) {
	if explicit != "" {
		return explicit, nil
	}
	if ns := os.Getenv("POD_NAMESPACE"); ns != "" {
		return ns, nil
	}
	b, err := os.ReadFile(serviceAccountNamespace)
	if err != nil {
		return "", fmt.Errorf("the operator's namespace is unknown (set --leader-election-namespace or $POD_NAMESPACE): %w", err)
	}
	return strings.TrimSpace(string(b)), nil
}

// Package secretcache keeps the values of the Secrets the operator reads
// often (corpus and persona credentials, a run's token Secret) in a bounded
// memory cache, so a run does not GET the same unchanged Secret from the API
// server at every reconcile.
//
// A cached value is served only while the manager's metadata-only Secret
// informer (the one the Corpus and Persona controllers already watch with)
// shows the Secret with the same UID and resourceVersion it had when it was
// read: a changed, recreated or deleted Secret is read again. The cache is
// therefore exactly as fresh as the informer that wakes the reconcilers on
// a Secret change. Where the informer cannot answer (a namespace outside
// --secret-namespaces, an informer error), the read goes to the API server
// as before.
//
// The trade-off, documented for operators: the values of referenced
// credential Secrets stay in the manager's memory, up to the cache's
// bounds, instead of only for the length of a reconcile.
package secretcache

import (
	"container/list"
	"context"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Defaults bound the cache when the manager's flags leave it so.
const (
	DefaultMaxEntries = 16384
	DefaultMaxBytes   = 32 << 20
)

// DefaultLimits are the defaults as Limits.
var DefaultLimits = Limits{MaxEntries: DefaultMaxEntries, MaxBytes: DefaultMaxBytes}

// entryOverhead is what an entry costs beyond its names and data: the
// map slot, list element, object header and label maps (an estimate, so
// the byte bound holds for Secrets with tiny values too).
const entryOverhead = 512

// Limits bound the cache. MaxEntries ≤ 0 turns the cache off: every read
// goes to the API server.
type Limits struct {
	MaxEntries int
	MaxBytes   int64
}

// Stats count the reader's Secret reads since it was made.
type Stats struct {
	// Hits were served from memory.
	Hits int64
	// Misses were read from the API server: first reads, changed Secrets
	// and evicted entries.
	Misses int64
	// Fallbacks were read from the API server because the metadata cache
	// could not answer (a namespace it does not watch, an error).
	Fallbacks int64
	// Entries and Bytes are what the cache holds now.
	Entries int
	Bytes   int64
}

// Reader is a client.Reader whose Secret Gets are served from the cache
// when the metadata cache shows them unchanged. Every other read, and
// every List, goes to API.
type Reader struct {
	api    client.Reader
	meta   client.Reader
	limits Limits

	mu      sync.Mutex
	order   *list.List // of *entry, most recently used first
	entries map[types.NamespacedName]*list.Element
	stats   Stats
}

type entry struct {
	key    types.NamespacedName
	secret *corev1.Secret
	size   int64
}

// New returns a Reader that reads from api (uncached) and checks cached
// values against meta, a reader of the manager's cache that answers Gets
// of metav1.PartialObjectMetadata of kind Secret.
func New(api, meta client.Reader, limits Limits) *Reader {
	return &Reader{api: api, meta: meta, limits: limits, order: list.New(),
		entries: map[types.NamespacedName]*list.Element{}}
}

// Get reads obj. A Secret is copied from the cache when its metadata is
// unchanged, otherwise read from the API server and cached. The copy
// carries the Secret's name, namespace, UID, resourceVersion, labels, owner
// references, type and data; annotations (where kubectl apply keeps a
// second copy of the data) and managed fields are not kept.
func (r *Reader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	secret, ok := obj.(*corev1.Secret)
	if !ok || r.limits.MaxEntries <= 0 {
		return r.api.Get(ctx, key, obj, opts...)
	}
	current, known := r.currentVersion(ctx, key)
	if known && r.copyCached(key, current, secret) {
		return nil
	}
	err := r.api.Get(ctx, key, secret, opts...)
	r.mu.Lock()
	defer r.mu.Unlock()
	if known {
		r.stats.Misses++
	} else {
		r.stats.Fallbacks++
	}
	switch {
	case apierrors.IsNotFound(err):
		r.removeLocked(key)
	case err == nil:
		r.storeLocked(key, secret)
	}
	return err
}

// Forget drops key's cached value. A writer of a Secret calls it after the
// write: until the metadata informer shows the new version, the cached
// one would still match it.
func (r *Reader) Forget(key types.NamespacedName) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.removeLocked(key)
}

// Remember stores a Secret the caller has just written, as the API server
// returned it (UID and resourceVersion set), so that the next read is
// served from memory once the metadata informer shows that version; until
// it does, reads go to the API server as for any other Secret. A writer
// that saves the read after its own create calls it instead of Forget.
func (r *Reader) Remember(s *corev1.Secret) {
	if r.limits.MaxEntries <= 0 || s.UID == "" || s.ResourceVersion == "" {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.storeLocked(client.ObjectKeyFromObject(s), s)
}

// List is never cached.
func (r *Reader) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	return r.api.List(ctx, list, opts...)
}

// Stats returns the counts so far.
func (r *Reader) Stats() Stats {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.stats
	s.Entries = r.order.Len()
	return s
}

type version struct {
	uid             types.UID
	resourceVersion string
}

// currentVersion is the Secret's identity as the metadata cache shows it.
// known is false when the cache cannot say: the Secret is not there (yet,
// or any more), its namespace is not watched, or the read failed.
func (r *Reader) currentVersion(ctx context.Context, key client.ObjectKey) (version, bool) {
	var m metav1.PartialObjectMetadata
	m.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
	if err := r.meta.Get(ctx, key, &m); err != nil {
		return version{}, false
	}
	return version{uid: m.UID, resourceVersion: m.ResourceVersion}, true
}

func (r *Reader) copyCached(key types.NamespacedName, v version, into *corev1.Secret) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	el, ok := r.entries[key]
	if !ok {
		return false
	}
	e := el.Value.(*entry)
	if e.secret.UID != v.uid || e.secret.ResourceVersion != v.resourceVersion {
		return false
	}
	r.order.MoveToFront(el)
	r.stats.Hits++
	e.secret.DeepCopyInto(into)
	return true
}

func (r *Reader) storeLocked(key types.NamespacedName, s *corev1.Secret) {
	r.removeLocked(key)
	kept := trimmed(s)
	e := &entry{key: key, secret: kept, size: sizeOf(kept)}
	if e.size > r.limits.MaxBytes {
		return
	}
	r.entries[key] = r.order.PushFront(e)
	r.stats.Bytes += e.size
	for r.order.Len() > r.limits.MaxEntries || r.stats.Bytes > r.limits.MaxBytes {
		r.removeLocked(r.order.Back().Value.(*entry).key)
	}
}

func (r *Reader) removeLocked(key types.NamespacedName) {
	el, ok := r.entries[key]
	if !ok {
		return
	}
	r.stats.Bytes -= el.Value.(*entry).size
	r.order.Remove(el)
	delete(r.entries, key)
}

// trimmed keeps what the operator's Secret readers use.
func trimmed(s *corev1.Secret) *corev1.Secret {
	out := &corev1.Secret{Type: s.Type}
	s.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	out.Annotations, out.ManagedFields = nil, nil
	if s.Data != nil {
		out.Data = make(map[string][]byte, len(s.Data))
		for k, v := range s.Data {
			out.Data[k] = append([]byte(nil), v...)
		}
	}
	return out
}

func sizeOf(s *corev1.Secret) int64 {
	n := int64(entryOverhead + len(s.Namespace) + len(s.Name) + len(s.UID) + len(s.ResourceVersion))
	for k, v := range s.Labels {
		n += int64(len(k) + len(v))
	}
	for k, v := range s.Data {
		n += int64(len(k) + len(v))
	}
	return n
}

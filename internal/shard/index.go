package shard

import (
	"context"
	"fmt"
	"hash/fnv"
	"sync"
	"unique"

	"github.com/ragcanary/ragcanary/api/v1alpha1"

	"github.com/google/uuid"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/metadata"
	toolscache "k8s.io/client-go/tools/cache"
)

// entry is what a pass reads of one sharded object. The sharder keeps an
// entry instead of the object's metadata: it watches every sharded object
// and run, which no other replica holds, and the decoded metadata (labels
// map, owner references) cost the leader about 1 KB more per object than
// these fields.
type entry struct {
	uid id
	// rv is the version a patch is conditional on.
	rv    string
	owner string
	drain bool
	// deleting: the object has a deletion timestamp.
	deleting bool
	// controller is the UID of the object's controller when that is of
	// the kind's parent kind: the unit it moves with.
	controller id
}

// id is a UID in 16 bytes. A pass only compares UIDs (patches are
// conditional on the version, not the UID), so the index keeps them as
// numbers instead of two decoded strings per run: about 70 bytes an
// object (BenchmarkShardIndex10000). The zero id is no UID.
type id [16]byte

// idOf reads a UID. The API server writes UUIDs; any other text (a UID
// is opaque by contract) is kept as its 128-bit FNV hash, which no two
// UIDs of one fleet share in practice.
func idOf(u types.UID) id {
	if u == "" {
		return id{}
	}
	// Only the canonical text is read as a number, so two UIDs that
	// differ in any character never share an id.
	if parsed, err := uuid.Parse(string(u)); err == nil && parsed != (uuid.UUID{}) && parsed.String() == string(u) {
		return id(parsed)
	}
	h := fnv.New128a()
	_, _ = h.Write([]byte(u))
	var out id
	h.Sum(out[:0])
	return out
}

// index holds the entries of one kind, fed by a reflector (a list, then a
// watch of metadata only). It is the reflector's store: nothing else
// writes it.
type index struct {
	// parentKind is the controller kind that makes an object a child.
	parentKind string
	// changed is called when an entry appears, goes, or its shard labels
	// change: what can make a pass do something.
	changed func()

	mu      sync.RWMutex
	entries map[types.NamespacedName]entry
	synced  chan struct{}
	once    sync.Once
}

func newIndex(parentKind string, changed func()) *index {
	return &index{parentKind: parentKind, changed: changed,
		entries: map[types.NamespacedName]entry{}, synced: make(chan struct{})}
}

// entryOf reads an object's entry; ok is false for anything that is not
// object metadata.
func (x *index) entryOf(obj any) (types.NamespacedName, entry, bool) {
	m, ok := obj.(*metav1.PartialObjectMetadata)
	if !ok {
		return types.NamespacedName{}, entry{}, false
	}
	e := entry{uid: idOf(m.UID), rv: m.ResourceVersion, owner: intern(m.Labels[v1alpha1.LabelShardOwner]),
		drain: m.Labels[v1alpha1.LabelShardDrain] == "true", deleting: m.DeletionTimestamp != nil}
	if ref := metav1.GetControllerOfNoCopy(m); ref != nil && ref.Kind == x.parentKind {
		e.controller = idOf(ref.UID)
	}
	return types.NamespacedName{Namespace: intern(m.Namespace), Name: m.Name}, e, true
}

// intern shares the text of strings that repeat over thousands of entries
// (namespaces, replica names) instead of keeping a decoded copy in each.
func intern(s string) string { return unique.Make(s).Value() }

func (x *index) Add(obj any) error    { return x.put(obj) }
func (x *index) Update(obj any) error { return x.put(obj) }

func (x *index) put(obj any) error {
	key, e, ok := x.entryOf(obj)
	if !ok {
		return fmt.Errorf("shard: unexpected %T in a metadata watch", obj)
	}
	x.mu.Lock()
	old, had := x.entries[key]
	x.entries[key] = e
	x.mu.Unlock()
	if !had || old.owner != e.owner || old.drain != e.drain || old.uid != e.uid {
		x.changed()
	}
	return nil
}

func (x *index) Delete(obj any) error {
	key, _, ok := x.entryOf(obj)
	if !ok {
		return fmt.Errorf("shard: unexpected %T in a metadata watch", obj)
	}
	x.mu.Lock()
	delete(x.entries, key)
	x.mu.Unlock()
	x.changed()
	return nil
}

// Replace takes a whole list: the first one, and a relist after the watch
// could not resume.
func (x *index) Replace(list []any, _ string) error {
	entries := make(map[types.NamespacedName]entry, len(list))
	for _, obj := range list {
		key, e, ok := x.entryOf(obj)
		if !ok {
			return fmt.Errorf("shard: unexpected %T in a metadata list", obj)
		}
		entries[key] = e
	}
	x.mu.Lock()
	x.entries = entries
	x.mu.Unlock()
	x.once.Do(func() { close(x.synced) })
	x.changed()
	return nil
}

func (x *index) Resync() error { return nil }

// keyed is an entry with its name.
type keyed struct {
	key types.NamespacedName
	entry
}

// reflector lists and watches the metadata of resource gvr (in namespace,
// or everywhere when empty) into x.
func (x *index) reflector(mc metadata.Interface, gvr schema.GroupVersionResource, namespace string) *toolscache.Reflector {
	res := mc.Resource(gvr).Namespace(namespace)
	lw := &toolscache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			return res.List(ctx, opts)
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			return res.Watch(ctx, opts)
		},
	}
	return toolscache.NewReflectorWithOptions(lw, &metav1.PartialObjectMetadata{}, x,
		toolscache.ReflectorOptions{Name: "shard " + gvr.Resource})
}

package shard

import (
	"maps"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/ragcanary/ragcanary/api/v1alpha1"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// TestIndexEntryKeepsWhatAPassReads: an entry holds the identity, version,
// deletion, shard labels and a controller of the parent kind, and nothing
// else of the object.
func TestIndexEntryKeepsWhatAPassReads(t *testing.T) {
	now := metav1.Now()
	x := newIndex("RevocationCanary", func() {})
	key, e, ok := x.entryOf(&metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{
		Namespace: "ns", Name: "run", UID: "u-1", ResourceVersion: "42",
		DeletionTimestamp: &now,
		Labels:            map[string]string{v1alpha1.LabelShardOwner: "r-a", v1alpha1.LabelShardDrain: "true", "app": "x"},
		Annotations:       map[string]string{"kubectl.kubernetes.io/last-applied-configuration": "{...}"},
		OwnerReferences: []metav1.OwnerReference{
			{Kind: "ConfigMap", Name: "other", UID: "u-2"},
			{Kind: "RevocationCanary", Name: "c", UID: "u-3", Controller: ptr.To(true)},
		},
	}})
	want := entry{uid: idOf("u-1"), rv: "42", owner: "r-a", drain: true, deleting: true, controller: idOf("u-3")}
	if !ok || key != (types.NamespacedName{Namespace: "ns", Name: "run"}) || e != want {
		t.Errorf("entry %v %+v (ok %v), want ns/run %+v", key, e, ok, want)
	}
	// A controller of another kind does not make the object a child.
	_, e, _ = x.entryOf(&metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "hand-made",
		OwnerReferences: []metav1.OwnerReference{{Kind: "EvalSuite", UID: "u-4", Controller: ptr.To(true)}}}})
	if e.controller != (id{}) || e.owner != "" || e.drain {
		t.Errorf("an unlabelled run controlled by a suite got %+v", e)
	}
	if _, _, ok := x.entryOf("tombstone"); ok {
		t.Error("a value that is not object metadata gave an entry")
	}
	// Two objects decoded separately share the text of their namespace and
	// owner once kept.
	ka, ea, _ := x.entryOf(labelled(strings.Clone("tenant-a"), strings.Clone("r-1")))
	kb, eb, _ := x.entryOf(labelled(strings.Clone("tenant-a"), strings.Clone("r-1")))
	if unsafe.StringData(ka.Namespace) != unsafe.StringData(kb.Namespace) || unsafe.StringData(ea.owner) != unsafe.StringData(eb.owner) {
		t.Error("the namespace or the owner is kept as a copy per object, not interned")
	}
}

// TestIDsTellUIDsApart: the index compares UIDs as 16-byte ids. Equal
// UIDs give equal ids; UIDs that differ in any character, UUID or not,
// give different ones; and only the empty UID is no UID.
func TestIDsTellUIDsApart(t *testing.T) {
	const u = "6ba7b810-9dad-11d1-80b4-00c04fd430c8"
	uids := []types.UID{u, "6BA7B810-9DAD-11D1-80B4-00C04FD430C8", "6ba7b810-9dad-11d1-80b4-00c04fd430c9",
		"{" + u + "}", "u-1", "u-2", "00000000-0000-0000-0000-000000000000", "0"}
	seen := map[id]types.UID{}
	for _, uid := range uids {
		got := idOf(uid)
		if got == (id{}) {
			t.Errorf("UID %q has no id", uid)
		}
		if got != idOf(types.UID(strings.Clone(string(uid)))) {
			t.Errorf("UID %q read twice gave two ids", uid)
		}
		if other, dup := seen[got]; dup {
			t.Errorf("UIDs %q and %q share an id", uid, other)
		}
		seen[got] = uid
	}
	if idOf("") != (id{}) {
		t.Error("the empty UID has an id")
	}
}

// TestIndexSignalsOnlyWhatCanMoveSomething: a pass is asked for when an
// object appears, goes or changes its shard labels, and for a new list;
// not for a status write.
func TestIndexSignalsOnlyWhatCanMoveSomething(t *testing.T) {
	calls := 0
	x := newIndex("RevocationCanary", func() { calls++ })
	step := func(what string, err error, want int) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if calls != want {
			t.Errorf("%s: %d passes asked for, want %d", what, calls, want)
		}
	}
	obj := labelled("ns", "r-1")
	obj.Name, obj.UID, obj.ResourceVersion = "c", "u-1", "1"
	step("add", x.Add(obj), 1)
	obj = obj.DeepCopy()
	obj.ResourceVersion = "2"
	step("a status write", x.Update(obj), 1)
	if got := entries(x); len(got) != 1 || got[0].rv != "2" {
		t.Errorf("after an update the index holds %+v, want version 2", got)
	}
	obj = obj.DeepCopy()
	obj.Labels[v1alpha1.LabelShardDrain] = "true"
	step("a drain request", x.Update(obj), 2)
	select {
	case <-x.synced:
		t.Fatal("synced before the first list")
	default:
	}
	other := labelled("ns", "r-2")
	other.Name = "d"
	step("a list", x.Replace([]any{other}, "9"), 3)
	<-x.synced
	if got := entries(x); len(got) != 1 || got[0].key.Name != "d" {
		t.Errorf("after a list the index holds %+v, want only d", got)
	}
	step("delete", x.Delete(other), 4)
	if len(entries(x)) != 0 {
		t.Error("a deleted object is still listed")
	}
	if err := x.Add("tombstone"); err == nil {
		t.Error("a value that is not object metadata was accepted")
	}
}

func labelled(namespace, owner string) *metav1.PartialObjectMetadata {
	return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{
		Namespace: namespace, Name: "c", Labels: map[string]string{v1alpha1.LabelShardOwner: owner},
	}}
}

// TestUnsettledSkipsSettledUnits: a pass builds units only where something
// is not with the ring's choice; a child out of place brings its parent
// and all its siblings, and a run without a sharded controller is a unit
// of its own.
func TestUnsettledSkipsSettledUnits(t *testing.T) {
	k := Kind{Parent: testKinds[0].Parent, Child: testKinds[0].Child}
	s := &Sharder{indexes: map[schema.GroupVersionKind]*index{
		k.Parent: newIndex(k.Parent.Kind, func() {}),
		k.Child:  newIndex(k.Parent.Kind, func() {}),
	}}
	replicas := []string{"r-a", "r-b"}
	add := func(gvk schema.GroupVersionKind, name, owner string, controller types.UID) {
		t.Helper()
		o := labelled("ns", owner)
		o.Name, o.UID = name, types.UID("u-"+name)
		if controller != "" {
			o.OwnerReferences = []metav1.OwnerReference{{Kind: k.Parent.Kind, UID: controller, Controller: ptr.To(true)}}
		}
		if err := s.indexes[gvk].Add(o); err != nil {
			t.Fatal(err)
		}
	}
	at := func(name string) string { return Assign("ns/"+name, replicas) }
	other := func(name string) string {
		if at(name) == "r-a" {
			return "r-b"
		}
		return "r-a"
	}
	add(k.Parent, "settled", at("settled"), "")
	add(k.Child, "settled-run", at("settled"), "u-settled")
	add(k.Parent, "moved", at("moved"), "")
	add(k.Child, "moved-run-1", at("moved"), "u-moved")
	add(k.Child, "moved-run-2", other("moved"), "u-moved")
	add(k.Parent, "new", "", "")
	add(k.Child, "hand-made", other("hand-made"), "")
	units, err := s.unsettled(&k, replicas)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, u := range units {
		names := []string{}
		for _, c := range u.children {
			names = append(names, c.key.Name)
		}
		slices.Sort(names)
		got[u.key.Name] = u.want + " " + strings.Join(names, ",")
	}
	want := map[string]string{
		"moved":     at("moved") + " moved-run-1,moved-run-2",
		"new":       at("new") + " ",
		"hand-made": at("hand-made") + " ",
	}
	if !maps.Equal(got, want) {
		t.Errorf("unsettled units %v, want %v", got, want)
	}
}

// entries is a snapshot of an index's entries.
func entries(x *index) []keyed {
	x.mu.RLock()
	defer x.mu.RUnlock()
	out := make([]keyed, 0, len(x.entries))
	for k, e := range x.entries {
		out = append(out, keyed{k, e})
	}
	return out
}

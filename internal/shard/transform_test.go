package shard

import (
	"strings"
	"testing"
	"unsafe"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// TestKeepShardFields: the sharder's cache keeps what a pass reads and
// drops the rest, the last-applied annotation above all.
func TestKeepShardFields(t *testing.T) {
	now := metav1.Now()
	in := &metav1.PartialObjectMetadata{
		TypeMeta: metav1.TypeMeta{APIVersion: "ragcanary.dev/v1alpha1", Kind: "CanaryRun"},
		ObjectMeta: metav1.ObjectMeta{
			Namespace: "ns", Name: "run", UID: "u-1", ResourceVersion: "42", Generation: 3,
			DeletionTimestamp: &now,
			Labels:            map[string]string{LabelOwner: "r-a", LabelDrain: "true", "app": "x"},
			Annotations:       map[string]string{"kubectl.kubernetes.io/last-applied-configuration": "{...}"},
			Finalizers:        []string{"ragcanary.dev/cleanup"},
			OwnerReferences: []metav1.OwnerReference{
				{Kind: "ConfigMap", Name: "other", UID: "u-2"},
				{Kind: "RevocationCanary", Name: "c", UID: "u-3", Controller: ptr.To(true)},
			},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "m"}},
		},
	}
	got, err := keepShardFields(in)
	if err != nil {
		t.Fatal(err)
	}
	out := got.(*metav1.PartialObjectMetadata)
	if out.Kind != "CanaryRun" || out.Namespace != "ns" || out.Name != "run" || out.UID != "u-1" ||
		out.ResourceVersion != "42" || out.DeletionTimestamp == nil {
		t.Errorf("identity, version or deletion lost: %+v", out)
	}
	if len(out.Labels) != 2 || out.Labels[LabelOwner] != "r-a" || out.Labels[LabelDrain] != "true" {
		t.Errorf("labels %v, want the two shard labels only", out.Labels)
	}
	if ref := metav1.GetControllerOf(out); ref == nil || ref.UID != "u-3" || len(out.OwnerReferences) != 1 {
		t.Errorf("owner references %v, want the controller only", out.OwnerReferences)
	}
	if out.Annotations != nil || out.Finalizers != nil || out.ManagedFields != nil || out.Generation != 0 {
		t.Errorf("kept what a pass never reads: %+v", out.ObjectMeta)
	}
	if in.Labels["app"] != "x" || len(in.Annotations) != 1 {
		t.Error("the input was changed")
	}
	bare, err := keepShardFields(&metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "plain"}})
	if err != nil {
		t.Fatal(err)
	}
	if b := bare.(*metav1.PartialObjectMetadata); b.Labels != nil || b.OwnerReferences != nil {
		t.Errorf("an unlabelled object without a controller got %v / %v", b.Labels, b.OwnerReferences)
	}
	// Two objects decoded separately share the text of their namespace
	// and owner once kept.
	a, _ := keepShardFields(metaIn(strings.Clone("tenant-a"), strings.Clone("r-1")))
	b, _ := keepShardFields(metaIn(strings.Clone("tenant-a"), strings.Clone("r-1")))
	ka, kb := a.(*metav1.PartialObjectMetadata), b.(*metav1.PartialObjectMetadata)
	if unsafe.StringData(ka.Namespace) != unsafe.StringData(kb.Namespace) ||
		unsafe.StringData(ka.Labels[LabelOwner]) != unsafe.StringData(kb.Labels[LabelOwner]) {
		t.Error("the namespace or the owner is kept as a copy per object, not interned")
	}
	if other, _ := keepShardFields("tombstone"); other != "tombstone" {
		t.Errorf("a value that is not object metadata was changed to %v", other)
	}
}

func metaIn(namespace, owner string) *metav1.PartialObjectMetadata {
	return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{
		Namespace: namespace, Name: "c", Labels: map[string]string{LabelOwner: owner},
	}}
}

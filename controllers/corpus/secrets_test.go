package corpus

import (
	"slices"
	"testing"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"k8s.io/utils/ptr"
)

// TestSecretIndexNamesEverySecretTheCorpusReads: a change to any Secret a
// Corpus reads (the reader's DSN and the permissions engines' keys among
// them) must re-check the Corpus, so the index lists them all.
func TestSecretIndexNamesEverySecretTheCorpusReads(t *testing.T) {
	ref := func(name string) v1alpha1.SecretKeyReference {
		return v1alpha1.SecretKeyReference{Name: name, Key: "k"}
	}
	c := &v1alpha1.Corpus{Spec: v1alpha1.CorpusSpec{
		Driver:      v1alpha1.Driver{Type: v1alpha1.DriverPostgres, Postgres: &v1alpha1.PostgresDriver{DSNSecretRef: ref("writer"), ReadDSNSecretRef: ptr.To(ref("reader"))}},
		Permissions: &v1alpha1.Permissions{Type: v1alpha1.PermissionsOpenFGA, OpenFGA: &v1alpha1.OpenFGAPermissions{APITokenSecretRef: ref("fga")}},
	}}
	got := secretIndexValues(c)
	for _, want := range []string{"writer", "reader", "fga"} {
		if !slices.Contains(got, want) {
			t.Errorf("index %v lacks Secret %q", got, want)
		}
	}
}

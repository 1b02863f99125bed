package report

import (
	"slices"
	"testing"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
)

// TestCorpusSecretsNameEverySecretTheCorpusReads: an evidence bundle
// names the reader's connection string and the permissions backend's key
// beside the driver's credential.
func TestCorpusSecretsNameEverySecretTheCorpusReads(t *testing.T) {
	ref := func(name string) v1alpha1.SecretKeyReference {
		return v1alpha1.SecretKeyReference{Name: name, Key: "k"}
	}
	reader := ref("pg-reader")
	spec := &v1alpha1.CorpusSpec{
		Driver: v1alpha1.Driver{Type: v1alpha1.DriverPostgres,
			Postgres: &v1alpha1.PostgresDriver{DSNSecretRef: ref("pg-writer"), ReadDSNSecretRef: &reader}},
		Permissions: &v1alpha1.Permissions{Type: v1alpha1.PermissionsOpenFGA,
			OpenFGA: &v1alpha1.OpenFGAPermissions{APIURL: "http://fga:8080", APITokenSecretRef: ref("fga-key")}},
	}
	var got []string
	for _, s := range corpusSecrets(spec) {
		got = append(got, s.Use+": "+s.Name)
	}
	want := []string{"corpus connection string: pg-writer", "corpus reader connection string: pg-reader",
		"corpus OpenFGA API token: fga-key"}
	if !slices.Equal(got, want) {
		t.Errorf("corpusSecrets = %q, want %q", got, want)
	}
}

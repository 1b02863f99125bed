package manifests

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
)

// TestOverlayEnvSuppliesEverySecretOfACorpus: each Secret key a Corpus
// reads can come from the environment, whatever backend names it.
func TestOverlayEnvSuppliesEverySecretOfACorpus(t *testing.T) {
	tests := []struct {
		name string
		// spec is the Corpus's spec block.
		spec string
		// refs are the Secret keys it reads (name/key).
		refs [][2]string
	}{
		{"HTTP driver", `
  driver: {type: HTTP, http: {url: "http://rag", credentialSecretRef: {name: source, key: token}}}`,
			[][2]string{{"source", "token"}}},
		{"Postgres writer and reader", `
  driver: {type: Postgres, postgres: {dsnSecretRef: {name: pg-writer, key: dsn}, readDSNSecretRef: {name: pg-reader, key: dsn}}}`,
			[][2]string{{"pg-writer", "dsn"}, {"pg-reader", "dsn"}}},
		{"REST source", `
  driver: {type: REST, rest: {url: "http://rest", auth: {type: Bearer, secretRef: {name: rest-cred, key: token}}, operations: {}}}`,
			[][2]string{{"rest-cred", "token"}}},
		{"SpiceDB key", `
  driver: {type: HTTP, http: {url: "http://rag", credentialSecretRef: {name: source, key: token}}}
  permissions: {type: SpiceDB, spicedb: {endpoint: "spicedb:50051", presharedKeySecretRef: {name: spicedb-key, key: key}}}`,
			[][2]string{{"source", "token"}, {"spicedb-key", "key"}}},
		{"OpenFGA token", `
  driver: {type: HTTP, http: {url: "http://rag", credentialSecretRef: {name: source, key: token}}}
  permissions: {type: OpenFGA, openfga: {apiURL: "http://openfga:8080", storeID: 01ARZ3NDEKTSV4RRFFQ69G5FAV, apiTokenSecretRef: {name: openfga-key, key: token}}}`,
			[][2]string{{"source", "token"}, {"openfga-key", "token"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "corpus.yaml")
			manifest := "apiVersion: ragcanary.dev/v1alpha1\nkind: Corpus\nmetadata: {name: c, namespace: ns}\nspec:" + tt.spec + "\n"
			if err := os.WriteFile(path, []byte(manifest), 0o600); err != nil {
				t.Fatal(err)
			}
			m, err := Load([]string{path}, os.Stderr)
			if err != nil {
				t.Fatal(err)
			}
			env := map[string]string{}
			for _, r := range tt.refs {
				env[SecretEnvName(r[0], r[1])] = "value-of-" + r[0]
			}
			m.OverlayEnv(func(name string) (string, bool) { v, ok := env[name]; return v, ok })
			for _, r := range tt.refs {
				got, err := m.Credential("ns", v1alpha1.SecretKeyReference{Name: r[0], Key: r[1]})
				if err != nil || string(got) != "value-of-"+r[0] {
					t.Errorf("Secret %s key %s = %q, %v; want the value of $%s", r[0], r[1], got, err, SecretEnvName(r[0], r[1]))
				}
			}
		})
	}
}

package target

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/dev/testutil/objects"
)

const (
	pinStoreA = "01J000000000000000000000A1"
	pinStoreB = "01J000000000000000000000B2"
)

// renamingOpenFGA is an httptest OpenFGA whose store named "canary" can be
// pointed at another store: it lists that one store, counts the lookups,
// and records the store every write went to.
type renamingOpenFGA struct {
	*httptest.Server
	named   atomic.Value // the ID "canary" names
	lookups atomic.Int64
	mu      sync.Mutex
	writes  []string
}

func newRenamingOpenFGA(t *testing.T) *renamingOpenFGA {
	t.Helper()
	f := &renamingOpenFGA{}
	f.named.Store(pinStoreA)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /stores", func(w http.ResponseWriter, _ *http.Request) {
		f.lookups.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"continuation_token": "",
			"stores": []map[string]string{{"id": f.named.Load().(string), "name": "canary"}}})
	})
	mux.HandleFunc("POST /stores/{store}/write", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.writes = append(f.writes, r.PathValue("store"))
		f.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{}`))
	})
	f.Server = httptest.NewServer(mux)
	t.Cleanup(f.Close)
	return f
}

// lastWrite is the store the last write went to.
func (f *renamingOpenFGA) lastWrite(t *testing.T) string {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.writes) == 0 {
		t.Fatal("nothing was written to OpenFGA")
	}
	return f.writes[len(f.writes)-1]
}

func openfgaByName(url, name string) *v1alpha1.Corpus {
	return objects.Corpus("ns", "fga", "http://127.0.0.1:1/", objects.SourceSecret("src", "token"),
		objects.Permissions(v1alpha1.Permissions{Type: v1alpha1.PermissionsOpenFGA, OpenFGA: &v1alpha1.OpenFGAPermissions{
			APIURL: url, StoreName: name, APITokenSecretRef: v1alpha1.SecretKeyReference{Name: "fga", Key: "key"}}}))
}

func openfgaKey() *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "fga",
		Labels: map[string]string{v1alpha1.LabelCredential: v1alpha1.LabelCredentialValue}}, Data: map[string][]byte{"key": []byte("fga-key")}}
}

// TestRunKeepsItsPinnedOpenFGAStore: a run resolves its corpus's store
// name once, when it keeps its recipe; after the name is pointed at
// another store, the run's later steps — through the live Corpus (same
// target) or through the kept copy — still write to the store it pinned,
// without another lookup, while a fresh resolution follows the name.
func TestRunKeepsItsPinnedOpenFGAStore(t *testing.T) {
	ctx := t.Context()
	f := newRenamingOpenFGA(t)
	d := &Door{Reader: secretsReader(t, sourceSecret(true), openfgaKey()), Allow: AllowAny()}
	spec := openfgaByName(f.URL, "canary")

	// Planting: the recipe is kept with the store the name names now.
	planting, err := d.Corpus(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	defer planting.Release()
	recipe, err := planting.PinnedRecipe(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if recipe.OpenFGAStoreID != pinStoreA {
		t.Fatalf("the kept recipe pins store %q, want %s", recipe.OpenFGAStoreID, pinStoreA)
	}
	raw, err := json.Marshal(recipe) // as the run's cleanup Secret holds it
	if err != nil {
		t.Fatal(err)
	}
	var kept Recipe
	if err := json.Unmarshal(raw, &kept); err != nil {
		t.Fatal(err)
	}
	if err := planting.Driver.Grant(ctx, "rc-1", "alice"); err != nil {
		t.Fatal(err)
	}
	if got := f.lastWrite(t); got != pinStoreA {
		t.Fatalf("the grant went to %s, want %s", got, pinStoreA)
	}

	// The name is pointed at another store mid-run.
	f.named.Store(pinStoreB)

	// A later step through the live Corpus, which names the same target.
	live, err := d.Corpus(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	defer live.Release()
	if !live.PinTo(kept) {
		t.Fatal("the live Corpus, unchanged, does not reach the kept copy's target")
	}
	if err := live.Driver.Revoke(ctx, "rc-1", "alice"); err != nil {
		t.Fatal(err)
	}
	if got := f.lastWrite(t); got != pinStoreA {
		t.Errorf("the revocation through the live Corpus went to %s, want the pinned %s", got, pinStoreA)
	}

	// A later step through the kept copy.
	fromKept, err := d.FromRecipe("ns", "fga", kept)
	if err != nil {
		t.Fatal(err)
	}
	defer fromKept.Release()
	if err := fromKept.Driver.Revoke(ctx, "rc-1", "alice"); err != nil {
		t.Fatal(err)
	}
	if got := f.lastWrite(t); got != pinStoreA {
		t.Errorf("the revocation through the kept copy went to %s, want the pinned %s", got, pinStoreA)
	}
	if n := f.lookups.Load(); n != 1 {
		t.Errorf("%d store lookups, want 1: the run resolves its store name once", n)
	}

	// The name really was re-pointed: a new resolution follows it.
	fresh, err := d.Corpus(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Release()
	if err := fresh.Driver.Grant(ctx, "rc-2", "bob"); err != nil {
		t.Fatal(err)
	}
	if got := f.lastWrite(t); got != pinStoreB {
		t.Fatalf("an unpinned resolution wrote to %s, want %s: the test does not re-point the name", got, pinStoreB)
	}

	// A Corpus naming another store name is another target: no pin.
	other, err := d.Corpus(ctx, openfgaByName(f.URL, "elsewhere"))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Release()
	if other.PinTo(kept) {
		t.Error("a Corpus naming another store takes the kept copy's pin")
	}

	// A kept copy whose pin is not an OpenFGA ID is refused, not looked up by name.
	bad := kept
	bad.OpenFGAStoreID = "not-a-store/../x"
	if c, err := d.FromRecipe("ns", "fga", bad); err == nil || !strings.Contains(err.Error(), "not an OpenFGA ID") {
		if c != nil {
			c.Release()
		}
		t.Errorf("a kept copy with a malformed pin: %v, want it refused", err)
	}
}

package target

import (
	"errors"
	"testing"

	authzed "github.com/authzed/authzed-go/v1"
	"google.golang.org/grpc"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/dev/testutil/objects"
)

// closed reports whether cl was already closed: grpc refuses a second Close.
// It closes cl if it was not, so call it once per client, last.
func closed(cl *authzed.Client) bool { return errors.Is(cl.Close(), grpc.ErrClientConnClosing) }

func spicedbCorpus() *v1alpha1.Corpus {
	return objects.Corpus("ns", "authz", "http://127.0.0.1:1/", objects.SourceSecret("src", "token"),
		objects.Permissions(v1alpha1.Permissions{Type: v1alpha1.PermissionsSpiceDB, SpiceDB: &v1alpha1.SpiceDBPermissions{
			// Dialling is lazy: nothing listens on the endpoint, nothing is sent.
			Endpoint: "127.0.0.1:1", Insecure: true,
			PresharedKeySecretRef: v1alpha1.SecretKeyReference{Name: "spicedb", Key: "key"}}}))
}

func spicedbKey(value string) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "spicedb",
		Labels: map[string]string{v1alpha1.LabelCredential: v1alpha1.LabelCredentialValue}}, Data: map[string][]byte{"key": []byte(value)}}
}

// spicedbClientOf is the client a resolved corpus's backend uses.
func spicedbClientOf(t *testing.T, d *Door, c *Corpus) *authzed.Client {
	t.Helper()
	w, ok := c.Driver.(*withPermissions)
	if !ok {
		t.Fatalf("the corpus's driver is %T, not wrapped with its permissions backend", c.Driver)
	}
	if _, ok := w.perms.(spicedbBackend); !ok {
		t.Fatalf("the backend is %T, want SpiceDB", w.perms)
	}
	return d.conns().spicedb.entries[idOf([]byte("127.0.0.1:1"), c.recipe.PermissionsKey, []byte{1})].v
}

// TestSpiceDBClientsAreHeldAndClosedWithTheirLastHolder: a rotated key's
// client stays open while a run holds it, however long, and closes when
// that run lets go; the current key's client stays open with no holder;
// a deleted corpus's client closes once unheld.
func TestSpiceDBClientsAreHeldAndClosedWithTheirLastHolder(t *testing.T) {
	reader := secretsReader(t, sourceSecret(true), spicedbKey("old-key"))
	d := &Door{Reader: reader, Allow: AllowAny()}
	old, err := d.Corpus(t.Context(), spicedbCorpus())
	if err != nil {
		t.Fatal(err)
	}
	oldClient := spicedbClientOf(t, d, old)
	run := old.Hold() // a probe loop
	old.Release()

	// The key is rotated; the Corpus controller resolves the new one.
	rotated := spicedbKey("new-key")
	if err := reader.(client.Client).Update(t.Context(), rotated); err != nil {
		t.Fatal(err)
	}
	cur, err := d.Corpus(t.Context(), spicedbCorpus())
	if err != nil {
		t.Fatal(err)
	}
	newClient := spicedbClientOf(t, d, cur)
	cur.Release()
	if newClient == oldClient {
		t.Fatal("a rotated key got the old key's client")
	}
	if open, _ := d.conns().spicedb.counts(); open != 2 {
		t.Fatalf("%d clients open while a run holds the old one, want 2", open)
	}
	run()
	run() // a second call does nothing
	if open, _ := d.conns().spicedb.counts(); open != 1 {
		t.Fatalf("%d clients open after the run let go, want 1 (the current key's)", open)
	}
	again, err := d.Corpus(t.Context(), spicedbCorpus())
	if err != nil {
		t.Fatal(err)
	}
	if spicedbClientOf(t, d, again) != newClient {
		t.Error("the current key's client was not reused")
	}
	again.Release()
	d.Forget("ns", "authz")
	if open, _ := d.conns().spicedb.counts(); open != 0 {
		t.Errorf("%d clients open after the corpus was forgotten and nobody holds one", open)
	}
	if !closed(oldClient) || !closed(newClient) {
		t.Error("a client nobody holds any more was not closed")
	}
}

// TestTwoDoorsShareNothing: connections belong to the door that opened
// them, not to the process.
func TestTwoDoorsShareNothing(t *testing.T) {
	a := &Door{Reader: secretsReader(t, sourceSecret(true), spicedbKey("k")), Allow: AllowAny()}
	b := &Door{Reader: secretsReader(t, sourceSecret(true), spicedbKey("k")), Allow: AllowAny()}
	ca, err := a.Corpus(t.Context(), spicedbCorpus())
	if err != nil {
		t.Fatal(err)
	}
	defer ca.Release()
	if open, _ := b.conns().spicedb.counts(); open != 0 {
		t.Fatalf("a second door sees %d clients it never opened", open)
	}
}

// TestUnknownPermissionsTypeNamesTheKnownOnes: the backend table is the
// one place types are known.
func TestUnknownPermissionsTypeNamesTheKnownOnes(t *testing.T) {
	d := &Door{Reader: secretsReader(t, sourceSecret(true), spicedbKey("k")), Allow: AllowAny()}
	c := spicedbCorpus()
	c.Spec.Permissions.Type = "Zanzibar"
	_, err := d.Corpus(t.Context(), c)
	var p *Problem
	if !errors.As(err, &p) || p.Reason != v1alpha1.ReasonDriverUnsupported {
		t.Fatalf("an unknown permissions type gave %v, want %s", err, v1alpha1.ReasonDriverUnsupported)
	}
	if open, _ := d.conns().spicedb.counts(); open != 0 {
		t.Errorf("a refused corpus left %d clients open", open)
	}
}

package secretcache_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/ragcanary/ragcanary/internal/dev/testutil"
	"github.com/ragcanary/ragcanary/internal/secretcache"
)

// watched is the namespace whose Secrets the metadata cache holds;
// unwatched is one it does not.
const (
	watched   = "watched"
	unwatched = "unwatched"
)

var (
	admin client.Client
	// meta is a metadata cache scoped to watched, as ScopeSecrets scopes
	// the manager's.
	meta cache.Cache
)

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	env := &envtest.Environment{}
	cfg, err := env.Start()
	if err != nil {
		fmt.Fprintf(os.Stderr, "starting envtest: %v\n", err)
		return 1
	}
	defer func() { _ = env.Stop() }()
	if admin, err = client.New(cfg, client.Options{}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for _, ns := range []string{watched, unwatched} {
		if err := admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	meta, err = cache.New(cfg, cache.Options{Scheme: scheme.Scheme, DefaultNamespaces: map[string]cache.Config{watched: {}}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	go func() { _ = meta.Start(ctx) }()
	if !meta.WaitForCacheSync(ctx) {
		fmt.Fprintln(os.Stderr, "cache did not sync")
		return 1
	}
	return m.Run()
}

// counting counts the Gets that reach the API server.
type counting struct {
	client.Reader
	gets atomic.Int64
}

func (c *counting) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	c.gets.Add(1)
	return c.Reader.Get(ctx, key, obj, opts...)
}

func newReader(t *testing.T, limits secretcache.Limits) (*secretcache.Reader, *counting) {
	t.Helper()
	api := &counting{Reader: admin}
	return secretcache.New(api, meta, limits), api
}

func createSecret(t *testing.T, ns, name, value string) *corev1.Secret {
	t.Helper()
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"ragcanary.dev/credential": "true"},
			Annotations: map[string]string{"kubectl.kubernetes.io/last-applied-configuration": "{\"data\":\"" + value + "\"}"}},
		Data: map[string][]byte{"token": []byte(value)},
	}
	if err := admin.Create(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = admin.Delete(context.Background(), s) })
	return s
}

// inMetaCache waits until the metadata cache shows s at its version.
func inMetaCache(t *testing.T, s *corev1.Secret) {
	t.Helper()
	testutil.EventuallyTrue(t, waitTimeout, "the metadata cache to show Secret "+s.Name+" at "+s.ResourceVersion, func() bool {
		var m metav1.PartialObjectMetadata
		m.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
		return meta.Get(context.Background(), client.ObjectKeyFromObject(s), &m) == nil && m.ResourceVersion == s.ResourceVersion
	})
}

// rotate gives s a new token value, as another writer would, and waits
// until the metadata cache shows the new version.
func rotate(t *testing.T, s *corev1.Secret, value string) {
	t.Helper()
	s.Data["token"] = []byte(value)
	if err := admin.Update(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	inMetaCache(t, s)
}

// wantToken reads key through r and fails unless its token is want.
func wantToken(t *testing.T, r client.Reader, key types.NamespacedName, want, when string) {
	t.Helper()
	if got := get(t, r, key); string(got.Data["token"]) != want {
		t.Fatalf("%s: the reader returned token %q, want %q", when, got.Data["token"], want)
	}
}

// waitTimeout bounds each wait for the API server's watch to reach a cache.
const waitTimeout = 20 * time.Second

func get(t *testing.T, r client.Reader, key types.NamespacedName) *corev1.Secret {
	t.Helper()
	var s corev1.Secret
	if err := r.Get(context.Background(), key, &s); err != nil {
		t.Fatalf("get %s: %v", key, err)
	}
	return &s
}

func TestUnchangedSecretIsReadOnce(t *testing.T) {
	r, api := newReader(t, secretcache.DefaultLimits)
	s := createSecret(t, watched, "unchanged", "v1")
	inMetaCache(t, s)
	key := client.ObjectKeyFromObject(s)
	for range 5 {
		got := get(t, r, key)
		if string(got.Data["token"]) != "v1" || got.Labels["ragcanary.dev/credential"] != "true" || got.UID != s.UID {
			t.Fatalf("read %+v, want the Secret's data, labels and UID", got)
		}
	}
	if n := api.gets.Load(); n != 1 {
		t.Fatalf("%d API GETs for 5 reads of an unchanged Secret, want 1", n)
	}
	st := r.Stats()
	if st.Hits != 4 || st.Misses != 1 || st.Fallbacks != 0 || st.Entries != 1 || st.Bytes <= 0 {
		t.Fatalf("stats %+v, want 4 hits, 1 miss, 1 entry", st)
	}
	// What a hit returns holds no annotation: kubectl apply keeps a second
	// copy of the data there, and no reader needs it.
	if got := get(t, r, key); len(got.Annotations) != 0 {
		t.Fatalf("cached copy keeps annotations %v", got.Annotations)
	}
}

func TestChangedSecretIsReadAgain(t *testing.T) {
	r, api := newReader(t, secretcache.DefaultLimits)
	s := createSecret(t, watched, "rotated", "old")
	inMetaCache(t, s)
	key := client.ObjectKeyFromObject(s)
	get(t, r, key)
	rotate(t, s, "new")
	wantToken(t, r, key, "new", "after the update")
	if n := api.gets.Load(); n != 2 {
		t.Fatalf("%d API GETs, want 2 (one per version)", n)
	}
}

func TestRecreatedSecretIsNotServedFromTheOldOne(t *testing.T) {
	r, _ := newReader(t, secretcache.DefaultLimits)
	s := createSecret(t, watched, "recreated", "first")
	inMetaCache(t, s)
	key := client.ObjectKeyFromObject(s)
	get(t, r, key)
	if err := admin.Delete(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	testutil.EventuallyTrue(t, waitTimeout, "the deleted Secret to read as NotFound", func() bool {
		var got corev1.Secret
		return apierrors.IsNotFound(r.Get(context.Background(), key, &got))
	})
	again := createSecret(t, watched, "recreated", "second")
	inMetaCache(t, again)
	if got := get(t, r, key); string(got.Data["token"]) != "second" || got.UID != again.UID {
		t.Fatalf("read %q (UID %s), want the new Secret's value", got.Data["token"], got.UID)
	}
}

func TestUnwatchedNamespaceReadsTheAPIServer(t *testing.T) {
	r, api := newReader(t, secretcache.DefaultLimits)
	s := createSecret(t, unwatched, "elsewhere", "v")
	key := client.ObjectKeyFromObject(s)
	for range 3 {
		if got := get(t, r, key); string(got.Data["token"]) != "v" {
			t.Fatalf("read %q", got.Data["token"])
		}
	}
	if n := api.gets.Load(); n != 3 {
		t.Fatalf("%d API GETs for 3 reads outside the watched namespaces, want 3", n)
	}
	if st := r.Stats(); st.Fallbacks != 3 || st.Hits != 0 {
		t.Fatalf("stats %+v, want 3 fallbacks", st)
	}
}

func TestForgetReadsAgain(t *testing.T) {
	r, api := newReader(t, secretcache.DefaultLimits)
	s := createSecret(t, watched, "forgotten", "v")
	inMetaCache(t, s)
	key := client.ObjectKeyFromObject(s)
	get(t, r, key)
	r.Forget(key)
	get(t, r, key)
	if n := api.gets.Load(); n != 2 {
		t.Fatalf("%d API GETs, want 2: a forgotten value is read again", n)
	}
}

// TestRememberedWriteIsNotReadAgain: a Secret the caller created and
// remembered is served from memory once the metadata cache shows it; a
// Secret changed by someone else after that is read again.
func TestRememberedWriteIsNotReadAgain(t *testing.T) {
	r, api := newReader(t, secretcache.DefaultLimits)
	s := createSecret(t, watched, "written", "v")
	r.Remember(s)
	inMetaCache(t, s)
	key := client.ObjectKeyFromObject(s)
	wantToken(t, r, key, "v", "remembered")
	if n := api.gets.Load(); n != 0 {
		t.Fatalf("%d API GETs after a remembered write, want 0", n)
	}
	rotate(t, s, "w")
	wantToken(t, r, key, "w", "after a change by another writer")
	if n := api.gets.Load(); n != 1 {
		t.Fatalf("%d API GETs, want 1: a changed Secret is read again", n)
	}
}

func TestBounds(t *testing.T) {
	var keys []types.NamespacedName
	for i := range 3 {
		s := createSecret(t, watched, fmt.Sprintf("bounded-%d", i), "v")
		inMetaCache(t, s)
		keys = append(keys, client.ObjectKeyFromObject(s))
	}
	t.Run("entries", func(t *testing.T) {
		r, api := newReader(t, secretcache.Limits{MaxEntries: 2, MaxBytes: 1 << 20})
		for _, k := range keys {
			get(t, r, k)
		}
		if st := r.Stats(); st.Entries != 2 {
			t.Fatalf("%d entries, want the bound 2", st.Entries)
		}
		// The least recently used, the first, was evicted; the last two
		// are still served from memory.
		get(t, r, keys[2])
		get(t, r, keys[1])
		if n := api.gets.Load(); n != 3 {
			t.Fatalf("%d API GETs, want 3", n)
		}
		get(t, r, keys[0])
		if n := api.gets.Load(); n != 4 {
			t.Fatalf("%d API GETs, want 4: the evicted Secret is read again", n)
		}
	})
	t.Run("bytes", func(t *testing.T) {
		big := createSecret(t, watched, "big", strings.Repeat("x", 4096))
		inMetaCache(t, big)
		r, api := newReader(t, secretcache.Limits{MaxEntries: 100, MaxBytes: 2048})
		get(t, r, client.ObjectKeyFromObject(big))
		get(t, r, client.ObjectKeyFromObject(big))
		if n := api.gets.Load(); n != 2 {
			t.Fatalf("%d API GETs, want 2: a Secret larger than the byte bound is not kept", n)
		}
		for _, k := range keys {
			get(t, r, k)
		}
		if st := r.Stats(); st.Bytes > 2048 || st.Entries == 0 {
			t.Fatalf("stats %+v, want some entries within 2048 bytes", st)
		}
	})
	t.Run("off", func(t *testing.T) {
		r, api := newReader(t, secretcache.Limits{})
		get(t, r, keys[0])
		get(t, r, keys[0])
		if n := api.gets.Load(); n != 2 {
			t.Fatalf("%d API GETs with the cache off, want 2", n)
		}
	})
}

func TestOtherKindsAreNotCached(t *testing.T) {
	r, api := newReader(t, secretcache.DefaultLimits)
	var ns corev1.Namespace
	for range 2 {
		if err := r.Get(context.Background(), types.NamespacedName{Name: watched}, &ns); err != nil {
			t.Fatal(err)
		}
	}
	if n := api.gets.Load(); n != 2 {
		t.Fatalf("%d API GETs for 2 Namespace reads, want 2", n)
	}
}

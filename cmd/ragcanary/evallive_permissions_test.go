package main

import (
	"context"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/dev/openfgatest"
	"github.com/ragcanary/ragcanary/internal/manifests"
	"github.com/ragcanary/ragcanary/internal/openfga"
	"github.com/ragcanary/ragcanary/internal/ragtarget"
	"github.com/ragcanary/ragcanary/internal/target"
)

// openfgaTokenEnv supplies the OpenFGA key of the corpus below.
const openfgaTokenEnv = "RAGCANARY_SECRET_OPENFGA_KEY_TOKEN"

// TestEvalLiveTakesTheOpenFGATokenFromTheEnvironment: a corpus whose
// permissions live in OpenFGA gets its API token from the environment, as
// every other Secret key of live mode does, and that token is the one the
// corpus's backend sends to OpenFGA.
func TestEvalLiveTakesTheOpenFGATokenFromTheEnvironment(t *testing.T) {
	srv := openfgatest.Start(t, openfgatest.Options{})
	store := srv.NewStore(t, "live")
	ensureOpenFGAModel(t, srv, store)
	setLiveEnv(t)
	url := startLiveTarget(t, ragtarget.Config{FilterMode: ragtarget.FilterPrefilter})
	files := liveFiles(t, url, map[string][][2]string{
		"corpus.yaml": {{"  rateLimit:", "  permissions:\n    type: OpenFGA\n    openfga:\n      apiURL: " + srv.URL +
			"\n      storeID: " + store + "\n      apiTokenSecretRef: {name: openfga-key, key: token}\n  rateLimit:"}},
	})
	files[len(files)-1] += "," + srv.URL
	t.Setenv(openfgaTokenEnv, srv.Token)

	code, stdout, stderr := runEvalCmd(files...)
	if code != exitOK {
		t.Fatalf("with the OpenFGA token in $%s: exit %d, want 0\n%s%s", openfgaTokenEnv, code, stdout, stderr)
	}
	noCredentials(t, stdout, stderr)
	if strings.Contains(stdout+stderr, srv.Token) {
		t.Errorf("output reveals the OpenFGA token:\n%s%s", stdout, stderr)
	}
	if err := checkLivePermissions(t, files); err != nil {
		t.Errorf("the corpus's OpenFGA backend with the token from the environment: %v", err)
	}
	t.Setenv(openfgaTokenEnv, "not-the-key")
	if err := checkLivePermissions(t, files); err == nil {
		t.Errorf("with a wrong token in $%s OpenFGA accepted the corpus's backend; the environment's token is not the one sent", openfgaTokenEnv)
	}
}

// checkLivePermissions resolves the corpus of files as live mode does
// (manifests, the environment, the door) and checks its permissions
// backend against the server.
func checkLivePermissions(t *testing.T, files []string) error {
	t.Helper()
	var paths []string
	for i := 0; i+1 < len(files); i += 2 {
		if files[i] != "--allowed-target-urls" {
			paths = append(paths, files[i+1])
		}
	}
	m, err := manifests.Load(paths, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	m.NormalizeNamespaces("")
	m.OverlayEnv(os.LookupEnv)
	var corpus v1alpha1.Corpus
	if err := m.Get(context.Background(), client.ObjectKey{Namespace: metav1.NamespaceDefault, Name: "ragtarget"}, &corpus); err != nil {
		t.Fatal(err)
	}
	c, err := (&target.Door{Reader: m, Allow: target.AllowAny()}).Corpus(context.Background(), &corpus)
	if err != nil {
		return err
	}
	defer c.Release()
	return c.CheckPermissions(context.Background())
}

// ensureOpenFGAModel writes the reference model into the empty store.
func ensureOpenFGAModel(t *testing.T, srv *openfgatest.Server, store string) {
	t.Helper()
	c, err := openfga.Dial(openfga.Config{APIURL: srv.URL, StoreID: store, Token: srv.Token, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.EnsureModel(context.Background()); err != nil {
		t.Fatal(err)
	}
}

package target

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/driver/postgres"
)

const pgPassword = "pg-password-value"

func pgSecret(name, dsn string) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name,
		Labels: map[string]string{v1alpha1.LabelCredential: v1alpha1.LabelCredentialValue}},
		Data: map[string][]byte{"dsn": []byte(dsn)}}
}

func pgCorpus(withReader bool) *v1alpha1.Corpus {
	c := &v1alpha1.Corpus{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "pg"}}
	c.Spec.Driver = v1alpha1.Driver{Type: v1alpha1.DriverPostgres, Postgres: &v1alpha1.PostgresDriver{
		DSNSecretRef: v1alpha1.SecretKeyReference{Name: "writer", Key: "dsn"}, Schema: "rag"}}
	if withReader {
		c.Spec.Driver.Postgres.ReadDSNSecretRef = &v1alpha1.SecretKeyReference{Name: "reader", Key: "dsn"}
	}
	return c
}

func pgDoor(t *testing.T, allow []string, writerDSN, readerDSN string) *Door {
	t.Helper()
	a, err := ParseAllowlist(allow)
	if err != nil {
		t.Fatal(err)
	}
	return &Door{Reader: secretsReader(t, pgSecret("writer", writerDSN), pgSecret("reader", readerDSN)), Allow: a}
}

// TestPostgresDSNsObeyTheAllowlist: every host a connection string may
// reach is checked as postgres://host:port, Unix sockets are refused, and
// no message carries the connection string or its password.
func TestPostgresDSNsObeyTheAllowlist(t *testing.T) {
	allowed := "postgres://u:" + pgPassword + "@db.internal:5432/app"
	for _, c := range []struct {
		name           string
		writer, reader string
		withReader     bool
		reason, field  string
	}{
		{"writer on another host", "postgres://u:" + pgPassword + "@evil.example:5432/app", "", false, v1alpha1.ReasonURLNotAllowed, fieldDSN},
		{"writer on another port", "postgres://u:" + pgPassword + "@db.internal:6543/app", "", false, v1alpha1.ReasonURLNotAllowed, fieldDSN},
		{"key=value form, another host", "host=evil.example port=5432 user=u password=" + pgPassword, "", false, v1alpha1.ReasonURLNotAllowed, fieldDSN},
		{"a fallback host not allowed", "postgres://u:" + pgPassword + "@db.internal:5432,evil.example:5432/app", "", false, v1alpha1.ReasonURLNotAllowed, fieldDSN},
		{"a Unix socket", "host=/var/run/postgresql user=u password=" + pgPassword, "", false, v1alpha1.ReasonURLNotAllowed, fieldDSN},
		{"reader on another host", allowed, "postgres://r:" + pgPassword + "@replica.example:5432/app", true, v1alpha1.ReasonURLNotAllowed, fieldReadDSN},
		{"not a connection string", "postgres://u:" + pgPassword + "@db.internal:notaport/app", "", false, v1alpha1.ReasonInvalidURL, fieldDSN},
		// Options that make the operator read its own files are refused.
		{"a client key file", allowed + "?sslmode=require&sslkey=/var/run/secrets/kubernetes.io/serviceaccount/token", "", false, v1alpha1.ReasonInvalidURL, fieldDSN},
		{"a passfile, keyword form", "host=db.internal port=5432 user=u passfile=/etc/shadow", "", false, v1alpha1.ReasonInvalidURL, fieldDSN},
		{"a service file on the reader", allowed, "postgres://r@db.internal:5432/app?service=prod", true, v1alpha1.ReasonInvalidURL, fieldReadDSN},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := pgDoor(t, []string{"postgres://db.internal:5432", "https://rag.internal/"}, c.writer, c.reader)
			_, err := d.Corpus(context.Background(), pgCorpus(c.withReader))
			p := AsProblem(err)
			if p == nil || p.Reason != c.reason || p.Intent != Stalled {
				t.Fatalf("got %v, want Stalled %s", err, c.reason)
			}
			if !strings.Contains(p.Message, c.field) {
				t.Fatalf("message %q does not name %s", p.Message, c.field)
			}
			if strings.Contains(p.Message, pgPassword) || strings.Contains(p.Message, "u:") {
				t.Fatalf("message %q leaks the connection string", p.Message)
			}
		})
	}
}

// TestPostgresCorpusResolves: an allowed pair resolves without connecting,
// with the driver check the Corpus controller runs, and a recipe that
// rebuilds it only while the allowlist still admits both hosts.
func TestPostgresCorpusResolves(t *testing.T) {
	w := "postgres://u:" + pgPassword + "@db.internal:5432/app"
	r := "postgres://r:" + pgPassword + "@replica.internal:5432/app"
	d := pgDoor(t, []string{"postgres://db.internal:5432", "postgres://replica.internal:5432"}, w, r)
	c, err := d.Corpus(context.Background(), pgCorpus(true))
	if err != nil {
		t.Fatal(err)
	}
	if c.CheckDriver == nil {
		t.Fatal("a Postgres corpus has no driver check")
	}
	again, err := d.Corpus(context.Background(), pgCorpus(true))
	if err != nil || again.Driver != c.Driver {
		t.Fatalf("resolving the same corpus again built another driver (%v)", err)
	}
	if _, err := d.FromRecipe("ns", "pg", c.Recipe()); err != nil {
		t.Fatalf("rebuilding from the recipe: %v", err)
	}
	narrowed, _ := ParseAllowlist([]string{"postgres://db.internal:5432"})
	d.Allow = narrowed
	_, err = d.FromRecipe("ns", "pg", c.Recipe())
	if p := AsProblem(err); p == nil || p.Reason != v1alpha1.ReasonURLNotAllowed || !strings.Contains(p.Message, fieldReadDSN) {
		t.Fatalf("recipe after narrowing the allowlist: %v, want the reader refused", err)
	}
}

// TestPersonaForPostgresIsTheSubject: for a Postgres corpus the persona's
// token is its subject and its Secret is not read (here it does not even
// exist); for an HTTP corpus the Secret is required.
func TestPersonaForPostgresIsTheSubject(t *testing.T) {
	d := pgDoor(t, []string{"postgres://db.internal:5432", "https://rag.internal/"}, "postgres://u:p@db.internal:5432/app", "")
	pg, err := d.Corpus(context.Background(), pgCorpus(false))
	if err != nil {
		t.Fatal(err)
	}
	persona := &v1alpha1.Persona{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "alice"},
		Spec: v1alpha1.PersonaSpec{Subject: "alice@example.com", CredentialSecretRef: &v1alpha1.SecretKeyReference{Name: "missing", Key: "token"}}}
	got, err := d.PersonaFor(context.Background(), pg, persona)
	if err != nil || got.Token.Reveal() != "alice@example.com" {
		t.Fatalf("Postgres persona: %v, token %q", err, got.Token.Reveal())
	}
	httpCorpus := &Corpus{Object: corpusFor("https://rag.internal/")}
	if _, err := d.PersonaFor(context.Background(), httpCorpus, persona); AsProblem(err) == nil || AsProblem(err).Reason != v1alpha1.ReasonSecretNotFound {
		t.Fatalf("HTTP persona without its Secret: %v, want SecretNotFound", err)
	}
}

// TestDSNFileOptionsAreNamed: the refusal names the option, so the user
// knows what to move into the Secret; plain options pass.
func TestDSNFileOptionsAreNamed(t *testing.T) {
	d := pgDoor(t, []string{"postgres://db.internal:5432"}, "postgres://u@db.internal:5432/app?sslrootcert=/etc/ssl/ca.pem", "")
	_, err := d.Corpus(context.Background(), pgCorpus(false))
	if p := AsProblem(err); p == nil || !strings.Contains(p.Message, "sslrootcert") {
		t.Fatalf("got %v, want a refusal naming sslrootcert", err)
	}
	plain, err := postgres.DSNSettings("host=db.internal port=5432 user=u sslmode=require")
	if err != nil {
		t.Fatal(err)
	}
	if err := refuseOptions(fieldDSN, plain); err != nil {
		t.Fatalf("plain options refused: %v", err)
	}
}

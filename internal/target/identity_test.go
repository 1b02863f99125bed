package target

import (
	"context"
	"strings"
	"testing"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
)

func httpRecipe(url string) Recipe {
	return Recipe{Driver: v1alpha1.Driver{Type: v1alpha1.DriverHTTP, HTTP: &v1alpha1.HTTPDriver{URL: url}},
		Credential: []byte("source-secret-value")}
}

func pgRecipe(writer, reader string) Recipe {
	r := Recipe{Driver: v1alpha1.Driver{Type: v1alpha1.DriverPostgres, Postgres: &v1alpha1.PostgresDriver{Schema: "rag"}},
		Credential: []byte(writer)}
	if reader != "" {
		r.ReadCredential = []byte(reader)
	}
	return r
}

func withSchema(r Recipe, schema string) Recipe {
	r.Driver.Postgres.Schema = schema
	return r
}

func withStatements(r Recipe, s *v1alpha1.PostgresStatements) Recipe {
	r.Driver.Postgres.Statements = s
	return r
}

func withSpiceDB(r Recipe, endpoint, documentType string) Recipe {
	r.Permissions = &v1alpha1.Permissions{Type: v1alpha1.PermissionsSpiceDB, SpiceDB: &v1alpha1.SpiceDBPermissions{
		Endpoint: endpoint, PermissionsMapping: v1alpha1.PermissionsMapping{DocumentType: documentType, GrantRelation: "viewer",
			GroupType: "group", MemberRelation: "member", SubjectType: "user"}}}
	r.PermissionsKey = []byte("spicedb-key-secret")
	return r
}

func withCredential(r Recipe, cred string) Recipe {
	r.Credential = []byte(cred)
	return r
}

const (
	pgWriter = "postgres://writer:pw-one@db.example:5432/app?sslmode=disable"
	pgReader = "postgres://reader:pw-two@replica.example:5433/app?sslmode=disable"
)

func TestRecipeIdentity(t *testing.T) {
	for _, tc := range []struct {
		name string
		// a and b are the two configurations compared.
		a, b Recipe
		// same is whether they reach one target.
		same bool
	}{
		{name: "http: case, default port and trailing slash are one target",
			a: httpRecipe("HTTP://Rag.Example:80/tenant-a/"), b: httpRecipe("http://rag.example/tenant-a"), same: true},
		{name: "http: a rotated credential is the same target",
			a: httpRecipe("http://rag.example/"), b: withCredential(httpRecipe("http://rag.example/"), "rotated"), same: true},
		{name: "http: another host", a: httpRecipe("http://rag-a.example/"), b: httpRecipe("http://rag-b.example/")},
		{name: "http: another port", a: httpRecipe("http://127.0.0.1:8081/"), b: httpRecipe("http://127.0.0.1:8082/")},
		{name: "http: another scheme", a: httpRecipe("http://rag.example/"), b: httpRecipe("https://rag.example/")},
		{name: "http: another path", a: httpRecipe("http://rag.example/tenant-a/"), b: httpRecipe("http://rag.example/tenant-b/")},
		{name: "postgres: another password and user, same servers and database",
			a: pgRecipe(pgWriter, pgReader),
			b: pgRecipe("postgres://other:pw-three@DB.example:5432/app?sslmode=disable", pgReader), same: true},
		{name: "postgres: key=value and URL forms of one DSN",
			a: pgRecipe(pgWriter, ""), b: pgRecipe("host=db.example port=5432 dbname=app user=writer password=pw-one sslmode=disable", ""), same: true},
		{name: "postgres: hosts listed in another order",
			a: pgRecipe("postgres://w:pw@a.example:5432,b.example:5432/app?sslmode=disable", ""),
			b: pgRecipe("postgres://w:pw@b.example:5432,a.example:5432/app?sslmode=disable", ""), same: true},
		{name: "postgres: no reader DSN reads where the writer is",
			a: pgRecipe(pgWriter, ""), b: pgRecipe(pgWriter, "postgres://reader:pw-two@db.example:5432/app?sslmode=disable"), same: true},
		{name: "postgres: another database in the Secret",
			a: pgRecipe(pgWriter, ""), b: pgRecipe("postgres://writer:pw-one@db.example:5432/other?sslmode=disable", "")},
		{name: "postgres: another port",
			a: pgRecipe(pgWriter, ""), b: pgRecipe("postgres://writer:pw-one@db.example:5433/app?sslmode=disable", "")},
		{name: "postgres: another fallback host",
			a: pgRecipe("postgres://w:pw@a.example:5432,b.example:5432/app?sslmode=disable", ""),
			b: pgRecipe("postgres://w:pw@a.example:5432,c.example:5432/app?sslmode=disable", "")},
		{name: "postgres: the reader moved to another database",
			a: pgRecipe(pgWriter, pgReader), b: pgRecipe(pgWriter, "postgres://reader:pw-two@replica.example:5433/other?sslmode=disable")},
		{name: "postgres: another schema", a: pgRecipe(pgWriter, ""), b: withSchema(pgRecipe(pgWriter, ""), "rag2")},
		{name: "postgres: the user's statements name other tables",
			a: withStatements(pgRecipe(pgWriter, ""), &v1alpha1.PostgresStatements{DeleteDocument: "delete from a.docs where id = $1"}),
			b: withStatements(pgRecipe(pgWriter, ""), &v1alpha1.PostgresStatements{DeleteDocument: "delete from b.docs where id = $1"})},
		{name: "http and postgres", a: httpRecipe("http://db.example:5432/"), b: pgRecipe(pgWriter, "")},
		{name: "permissions: endpoint case is one backend",
			a: withSpiceDB(httpRecipe("http://rag.example/"), "SpiceDB.example:50051", "document"),
			b: withSpiceDB(httpRecipe("http://rag.example/"), "spicedb.example:50051", "document"), same: true},
		{name: "permissions: another endpoint",
			a: withSpiceDB(httpRecipe("http://rag.example/"), "spicedb-a.example:50051", "document"),
			b: withSpiceDB(httpRecipe("http://rag.example/"), "spicedb-b.example:50051", "document")},
		{name: "permissions: another document type",
			a: withSpiceDB(httpRecipe("http://rag.example/"), "spicedb.example:50051", "document"),
			b: withSpiceDB(httpRecipe("http://rag.example/"), "spicedb.example:50051", "tenant_b/document")},
		{name: "permissions: a backend added",
			a: httpRecipe("http://rag.example/"), b: withSpiceDB(httpRecipe("http://rag.example/"), "spicedb.example:50051", "document")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, err := tc.a.Identity()
			if err != nil {
				t.Fatalf("a: %v", err)
			}
			b, err := tc.b.Identity()
			if err != nil {
				t.Fatalf("b: %v", err)
			}
			if (a == b) != tc.same {
				t.Errorf("identities %q and %q: equal %v, want %v", a, b, a == b, tc.same)
			}
			for _, id := range []TargetIdentity{a, b} {
				for _, secret := range []string{"pw-one", "pw-two", "pw-three", "source-secret-value", "rotated", "spicedb-key-secret"} {
					if strings.Contains(id.String(), secret) || strings.Contains(id.Source+id.Reader+id.Permissions, secret) {
						t.Errorf("identity %q holds a credential", id)
					}
				}
			}
		})
	}
}

// TestRecipeIdentityRefusesWhatTheDoorRefuses: a kept connection string is
// a tenant's; naming its target must not read a file the door refuses.
func TestRecipeIdentityRefusesWhatTheDoorRefuses(t *testing.T) {
	for _, r := range []Recipe{
		pgRecipe("postgres://w@db.example:5432/app?passfile=/etc/passwd", ""),
		pgRecipe(pgWriter, "host=db.example dbname=app sslrootcert=/var/run/secrets/ca.crt"),
		pgRecipe("postgres://w:pw@%2Fvar%2Frun%2Fpostgresql/app", ""),
		{Driver: v1alpha1.Driver{Type: v1alpha1.DriverHTTP}},
		httpRecipe("http://user:pw@rag.example/"),
	} {
		if id, err := r.Identity(); err == nil {
			t.Errorf("%s: identity %q, want a refusal", r.Driver.Type, id)
		} else if _, user := IsUserProblem(err); !user {
			t.Errorf("%s: %v is not a user problem", r.Driver.Type, err)
		}
	}
}

// TestCorpusIdentityIsItsRecipes: a corpus resolved through the door and
// one rebuilt from its recipe name the same target.
func TestCorpusIdentityIsItsRecipes(t *testing.T) {
	d := &Door{Reader: secretsReader(t, sourceSecret(true)), Allow: AllowAny()}
	live, err := d.Corpus(context.Background(), corpusFor("http://Rag.Example/tenant/"))
	if err != nil {
		t.Fatal(err)
	}
	defer live.Release()
	kept, err := d.FromRecipe("ns", "c", live.Recipe())
	if err != nil {
		t.Fatal(err)
	}
	defer kept.Release()
	a, errA := live.Identity()
	b, errB := kept.Identity()
	if errA != nil || errB != nil || a != b || a.Source != "http://rag.example/tenant" {
		t.Errorf("live %q (%v), kept %q (%v), want both http://rag.example/tenant", a, errA, b, errB)
	}
}

package target

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiextensionsinternal "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/driver"
)

const plantDoc = "../../docs/plant-where-content-lives.md"

// docCorpus is one Corpus of docs/plant-where-content-lives.md: the
// heading it stands under, its YAML, the object decoded strictly, and the
// revocation methods its "**Methods:**" line names.
type docCorpus struct {
	heading string
	yaml    string
	corpus  *v1alpha1.Corpus
	methods []string
}

var (
	yamlBlock   = regexp.MustCompile("(?s)```yaml\n(.*?)```")
	methodsLine = regexp.MustCompile(`(?s)\*\*Methods:\*\*(.*?)\n- `)
	backticked  = regexp.MustCompile("`([A-Za-z]+)`")
)

// plantDocCorpora reads every Corpus the page shows, each under its "## "
// heading. A block that does not decode strictly into v1alpha1.Corpus (a
// field the API does not have, a wrong type) fails naming its heading.
func plantDocCorpora(t *testing.T, doc string) []docCorpus {
	t.Helper()
	var out []docCorpus
	for _, section := range strings.Split(doc, "\n## ")[1:] {
		heading, _, _ := strings.Cut(section, "\n")
		for _, m := range yamlBlock.FindAllStringSubmatch(section, -1) {
			var kind struct{ Kind string }
			if err := yaml.Unmarshal([]byte(m[1]), &kind); err != nil {
				t.Fatalf("%q: a YAML example does not parse: %v", heading, err)
			}
			if kind.Kind != "Corpus" {
				continue
			}
			c, err := decodeCorpusStrict(m[1])
			if err != nil {
				t.Fatalf("%q: the Corpus does not decode strictly into v1alpha1.Corpus: %v", heading, err)
			}
			c.Namespace = "docs"
			dc := docCorpus{heading: heading, yaml: m[1], corpus: c}
			if ml := methodsLine.FindStringSubmatch(section); ml != nil {
				for _, b := range backticked.FindAllStringSubmatch(ml[1], -1) {
					dc.methods = append(dc.methods, b[1])
				}
			}
			out = append(out, dc)
		}
	}
	return out
}

// decodeCorpusStrict decodes as the API server does with strict field
// validation: field names match case-sensitively (clientId is not
// clientID), and an unknown or duplicate field is an error.
func decodeCorpusStrict(doc string) (*v1alpha1.Corpus, error) {
	j, err := yaml.YAMLToJSON([]byte(doc))
	if err != nil {
		return nil, err
	}
	c := &v1alpha1.Corpus{}
	strict, err := sigsjson.UnmarshalStrict(j, c)
	if err != nil {
		return nil, err
	}
	if len(strict) > 0 {
		return nil, errors.Join(strict...)
	}
	return c, nil
}

// corpusSchema is the Corpus CRD's schema as the API server applies it:
// OpenAPI validation, defaults, and the CEL rules.
type corpusSchema struct {
	openapi    apiservervalidation.SchemaValidator
	structural *structuralschema.Structural
	cel        *cel.Validator
}

func loadCorpusSchema(t *testing.T) corpusSchema {
	t.Helper()
	raw, err := os.ReadFile("../../config/crd/bases/ragcanary.dev_corpora.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.Unmarshal(raw, &crd); err != nil {
		t.Fatal(err)
	}
	var internal apiextensionsinternal.JSONSchemaProps
	if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(crd.Spec.Versions[0].Schema.OpenAPIV3Schema, &internal, nil); err != nil {
		t.Fatal(err)
	}
	openapi, _, err := apiservervalidation.NewSchemaValidator(&internal)
	if err != nil {
		t.Fatal(err)
	}
	structural, err := structuralschema.NewStructural(&internal)
	if err != nil {
		t.Fatal(err)
	}
	return corpusSchema{openapi: openapi, structural: structural,
		cel: cel.NewValidator(structural, true, celconfig.PerCallLimit)}
}

// validate checks the example's YAML as the API server would on create:
// defaults applied, then the OpenAPI schema and every CEL rule.
func (s corpusSchema) validate(ctx context.Context, doc string) field.ErrorList {
	j, err := yaml.YAMLToJSON([]byte(doc))
	if err != nil {
		return field.ErrorList{field.Invalid(field.NewPath(""), "", err.Error())}
	}
	var obj map[string]any
	if err := utiljson.Unmarshal(j, &obj); err != nil {
		return field.ErrorList{field.Invalid(field.NewPath(""), "", err.Error())}
	}
	structuraldefaulting.Default(obj, s.structural)
	errs := apiservervalidation.ValidateCustomResource(nil, obj, s.openapi)
	celErrs, _ := s.cel.Validate(ctx, nil, s.structural, obj, nil, celconfig.RuntimeCELCostBudget)
	return append(errs, celErrs...)
}

// docSecrets are labelled Secrets for every secretRef the corpus names.
func docSecrets(c *v1alpha1.Corpus) []*corev1.Secret {
	var out []*corev1.Secret
	if a := c.Spec.Driver.REST.Auth; a != nil {
		out = append(out, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: c.Namespace, Name: a.SecretRef.Name,
				Labels: map[string]string{v1alpha1.LabelCredential: v1alpha1.LabelCredentialValue}},
			Data: map[string][]byte{a.SecretRef.Key: []byte("docs-example-credential")}})
	}
	return out
}

// TestDocsPlantExamplesBuild: every Corpus of "Plant where your content
// lives" passes the CRD's schema and CEL rules, builds through the door as
// the operator builds it (REST source and surfaces), offers exactly the
// revocation methods its "Methods:" line names, and runs each declared
// operation against a loopback stand-in answering with the reply shapes
// the vendor documents: every capture pointer finds its value, every
// status is one the request expects, and every request reaches a route
// the vendor documents. A failure names the example's heading.
func TestDocsPlantExamplesBuild(t *testing.T) {
	doc, err := os.ReadFile(plantDoc)
	if err != nil {
		t.Fatal(err)
	}
	examples := plantDocCorpora(t, string(doc))
	var headings []string
	for _, e := range examples {
		headings = append(headings, e.heading)
	}
	for _, want := range []string{"GitHub", "Microsoft Graph", "Google Drive", "Confluence Cloud"} {
		if !slices.ContainsFunc(headings, func(h string) bool { return strings.HasPrefix(h, want) }) {
			t.Errorf("no Corpus under a heading starting %q in %s (found %q)", want, plantDoc, headings)
		}
	}
	sent := 0
	for _, e := range examples {
		if vendorRoutes[strings.Fields(e.heading)[0]] != nil {
			sent++
		}
	}
	if sent != len(vendorRoutes) {
		t.Errorf("%d examples have vendor routes, want all %d route tables used", sent, len(vendorRoutes))
	}
	schema := loadCorpusSchema(t)
	for _, e := range examples {
		if errs := schema.validate(t.Context(), e.yaml); len(errs) > 0 {
			t.Errorf("%q: the CRD refuses the Corpus: %v", e.heading, errs.ToAggregate())
			continue
		}
		if err := checkPlantExample(t, e); err != nil {
			t.Errorf("%q: %v", e.heading, err)
		}
	}
}

// checkPlantExample builds the example through the door, compares its
// methods with the page's, and runs its operations against the stand-in.
func checkPlantExample(t *testing.T, e docCorpus) error {
	// A heading without routes (the Gitea Corpus, run end to end against a
	// real Gitea elsewhere) is built and checked, not sent.
	routes := vendorRoutes[strings.Fields(e.heading)[0]]
	stand := &vendorStandIn{routes: routes}
	srv := httptest.NewServer(http.HandlerFunc(stand.serve))
	defer srv.Close()
	door := &Door{Reader: secretsReader(t, docSecrets(e.corpus)...), Allow: AllowAny(),
		HTTPClient: &http.Client{Transport: toLoopback{srv.URL}}}
	c, err := door.Corpus(t.Context(), e.corpus)
	if err != nil {
		return fmt.Errorf("does not build: %v", err)
	}
	defer c.Release()
	caps, err := c.Source().Capabilities(t.Context())
	if err != nil {
		return err
	}
	var got []string
	for _, m := range caps.RevocationMethods {
		got = append(got, string(m))
	}
	slices.Sort(got)
	if !slices.Equal(got, slices.Sorted(slices.Values(e.methods))) {
		return fmt.Errorf("the corpus offers %v, the page's Methods line names %v", got, e.methods)
	}
	if routes == nil {
		return nil
	}
	if err := runDeclared(t.Context(), c, e.corpus.Spec.Driver.REST.Operations); err != nil {
		return err
	}
	if missed := stand.unused(); len(missed) > 0 {
		return fmt.Errorf("no request reached %v", missed)
	}
	return stand.failure()
}

// runDeclared sends every declared operation once, in a run's order.
func runDeclared(ctx context.Context, c *Corpus, ops v1alpha1.RESTOperations) error {
	const docID, subject, group = "rc-doc-1", "user-1", "grp-1"
	d := c.Source()
	doc := driver.Document{ID: docID, Title: "ragcanary revocation canary", Body: "canary body"}
	steps := []struct {
		declared bool
		name     string
		run      func() error
	}{
		{true, "createDocument", func() error { return d.CreateDocument(ctx, doc) }},
		{len(ops.LookupDocument) > 0, "lookupDocument", func() error {
			found, err := d.(driver.DocumentFinder).Lookup(ctx, docID)
			if err == nil && !found {
				err = fmt.Errorf("not found")
			}
			return err
		}},
		{len(ops.Grant) > 0, "grant", func() error { return d.Grant(ctx, docID, subject) }},
		{len(ops.AddToGroup) > 0, "addToGroup", func() error { return d.AddMember(ctx, group, subject) }},
		{len(ops.GrantGroup) > 0, "grantGroup", func() error { return d.(driver.GroupGranter).GrantGroup(ctx, docID, group) }},
		{len(ops.UpdateContent) > 0, "updateContent", func() error { return d.CreateDocument(ctx, doc) }},
		{len(ops.Revoke) > 0, "revoke", func() error { return d.Revoke(ctx, docID, subject) }},
		{len(ops.RemoveFromGroup) > 0, "removeFromGroup", func() error { return d.RemoveMember(ctx, group, subject) }},
		{len(ops.RevokeGroup) > 0, "revokeGroup", func() error { return d.(driver.GroupGranter).RevokeGroup(ctx, docID, group) }},
		{true, "deleteDocument", func() error { return d.DeleteDocument(ctx, docID) }},
	}
	for _, s := range steps {
		if !s.declared {
			continue
		}
		if err := s.run(); err != nil {
			return fmt.Errorf("%s against the vendor's documented replies: %v", s.name, err)
		}
	}
	return nil
}

// toLoopback sends every request to the stand-in, keeping the host it was
// meant for in Host, so the example's URLs stay as the page writes them.
type toLoopback struct{ base string }

func (l toLoopback) RoundTrip(req *http.Request) (*http.Response, error) {
	u, _ := url.Parse(l.base)
	out := req.Clone(req.Context())
	out.Host = req.URL.Host
	out.URL.Scheme, out.URL.Host = u.Scheme, u.Host
	return http.DefaultTransport.RoundTrip(out)
}

// vendorRoute is one endpoint as the vendor's reference documents it: the
// request (method, host and decoded path, a query or body it must carry)
// and its documented success status and reply shape.
type vendorRoute struct {
	method, path, query, body string
	status                    int
	reply                     string
}

// vendorRoutes are the stand-in's endpoints, keyed by the first word of
// the example's heading; the IDs are the test's (docs/… explains where a
// real one comes from).
var vendorRoutes = map[string][]vendorRoute{
	"GitHub:": {
		{method: "POST", path: "api.github.com/orgs/example-org/repos", body: `"private": true`, status: 201, reply: `{"id": 1, "name": "rc-doc-1", "full_name": "example-org/rc-doc-1", "private": true}`},
		{method: "POST", path: "api.github.com/repos/example-org/rc-doc-1/issues", status: 201, reply: `{"id": 11, "number": 1, "title": "ragcanary revocation canary"}`},
		{method: "GET", path: "api.github.com/repos/example-org/rc-doc-1", status: 200, reply: `{"id": 1, "name": "rc-doc-1"}`},
		{method: "GET", path: "api.github.com/repos/example-org/rc-doc-1/issues/1", status: 200, reply: `{"id": 11, "number": 1}`},
		{method: "PUT", path: "api.github.com/repos/example-org/rc-doc-1/collaborators/user-1", body: `"pull"`, status: 201, reply: `{"id": 21, "permissions": "read"}`},
		{method: "DELETE", path: "api.github.com/repos/example-org/rc-doc-1/collaborators/user-1", status: 204},
		{method: "PUT", path: "api.github.com/orgs/example-org/teams/grp-1/memberships/user-1", status: 200, reply: `{"role": "member", "state": "active"}`},
		{method: "DELETE", path: "api.github.com/orgs/example-org/teams/grp-1/memberships/user-1", status: 204},
		{method: "PUT", path: "api.github.com/orgs/example-org/teams/grp-1/repos/example-org/rc-doc-1", body: `"pull"`, status: 204},
		{method: "DELETE", path: "api.github.com/orgs/example-org/teams/grp-1/repos/example-org/rc-doc-1", status: 204},
		{method: "DELETE", path: "api.github.com/repos/example-org/rc-doc-1", status: 204},
	},
	"Microsoft": {
		{method: "POST", path: "login.microsoftonline.com/00000000-0000-0000-0000-000000000000/oauth2/v2.0/token", body: "grant_type=client_credentials", status: 200, reply: `{"token_type": "Bearer", "expires_in": 3599, "access_token": "graph-token"}`},
		{method: "PUT", path: "graph.microsoft.com/v1.0/drives/b!exampleDriveId/items/01EXAMPLEFOLDERID:/rc-doc-1.txt:/content", status: 201, reply: `{"id": "01ITEM", "name": "rc-doc-1.txt", "file": {}}`},
		{method: "GET", path: "graph.microsoft.com/v1.0/drives/b!exampleDriveId/items/01EXAMPLEFOLDERID:/rc-doc-1.txt", status: 200, reply: `{"id": "01ITEM", "name": "rc-doc-1.txt"}`},
		{method: "PUT", path: "graph.microsoft.com/v1.0/drives/b!exampleDriveId/items/01ITEM/content", status: 200, reply: `{"id": "01ITEM"}`},
		{method: "POST", path: "graph.microsoft.com/v1.0/drives/b!exampleDriveId/items/01ITEM/invite", body: `"objectId":"user-1"`, status: 200, reply: `{"value": [{"id": "perm-user", "roles": ["read"]}]}`},
		{method: "POST", path: "graph.microsoft.com/v1.0/drives/b!exampleDriveId/items/01ITEM/invite", body: `"objectId":"grp-1"`, status: 200, reply: `{"value": [{"id": "perm-group", "roles": ["read"]}]}`},
		{method: "DELETE", path: "graph.microsoft.com/v1.0/drives/b!exampleDriveId/items/01ITEM/permissions/perm-user", status: 204},
		{method: "DELETE", path: "graph.microsoft.com/v1.0/drives/b!exampleDriveId/items/01ITEM/permissions/perm-group", status: 204},
		{method: "POST", path: "graph.microsoft.com/v1.0/groups/grp-1/members/$ref", body: `directoryObjects/user-1`, status: 204},
		{method: "DELETE", path: "graph.microsoft.com/v1.0/groups/grp-1/members/user-1/$ref", status: 204},
		{method: "DELETE", path: "graph.microsoft.com/v1.0/drives/b!exampleDriveId/items/01ITEM", status: 204},
	},
	"Google": {
		{method: "POST", path: "www.googleapis.com/drive/v3/files", body: `"text/plain"`, status: 200, reply: `{"kind": "drive#file", "id": "file-1", "name": "rc-doc-1", "mimeType": "text/plain"}`},
		{method: "PATCH", path: "www.googleapis.com/upload/drive/v3/files/file-1", query: "uploadType=media", status: 200, reply: `{"kind": "drive#file", "id": "file-1"}`},
		{method: "POST", path: "www.googleapis.com/drive/v3/files/file-1/permissions", query: "sendNotificationEmail=false", body: `"reader"`, status: 200, reply: `{"kind": "drive#permission", "id": "perm-1", "type": "user", "role": "reader"}`},
		{method: "DELETE", path: "www.googleapis.com/drive/v3/files/file-1/permissions/perm-1", status: 204},
		{method: "DELETE", path: "www.googleapis.com/drive/v3/files/file-1", status: 204},
	},
	"Confluence": {
		{method: "POST", path: "example.atlassian.net/wiki/api/v2/pages", body: `"storage"`, status: 200, reply: `{"id": "65537", "status": "current", "title": "rc-doc-1", "spaceId": "98306"}`},
		{method: "PUT", path: "example.atlassian.net/wiki/rest/api/content/65537/restriction/byOperation/read/user", query: "accountId=5b10ac8d82e05b22cc7d4ef5", status: 200, reply: `{}`},
		{method: "PUT", path: "example.atlassian.net/wiki/rest/api/content/65537/restriction/byOperation/read/user", query: "accountId=user-1", status: 200, reply: `{}`},
		{method: "DELETE", path: "example.atlassian.net/wiki/rest/api/content/65537/restriction/byOperation/read/user", query: "accountId=user-1", status: 200, reply: `{}`},
		{method: "PUT", path: "example.atlassian.net/wiki/rest/api/content/65537/restriction/byOperation/read/byGroupId/grp-1", status: 200, reply: `{}`},
		{method: "DELETE", path: "example.atlassian.net/wiki/rest/api/content/65537/restriction/byOperation/read/byGroupId/grp-1", status: 200, reply: `{}`},
		{method: "POST", path: "example.atlassian.net/wiki/rest/api/group/userByGroupId", query: "groupId=grp-1", body: `"user-1"`, status: 201},
		{method: "DELETE", path: "example.atlassian.net/wiki/rest/api/group/userByGroupId", query: "accountId=user-1", status: 200},
		{method: "DELETE", path: "example.atlassian.net/wiki/api/v2/pages/65537", status: 204},
	},
}

// vendorStandIn answers requests from its routes; a request no route
// documents is a 400 and a recorded failure.
type vendorStandIn struct {
	routes []vendorRoute
	mu     sync.Mutex
	used   map[int]bool
	bad    []string
}

func (s *vendorStandIn) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<16))
	compact := strings.ReplaceAll(string(body), " ", "")
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, rt := range s.routes {
		if rt.method != r.Method || rt.path != r.Host+r.URL.Path || !strings.Contains(r.URL.RawQuery, rt.query) ||
			!strings.Contains(compact, strings.ReplaceAll(rt.body, " ", "")) {
			continue
		}
		if s.used == nil {
			s.used = map[int]bool{}
		}
		s.used[i] = true
		if rt.reply != "" {
			w.Header().Set("Content-Type", "application/json")
		}
		w.WriteHeader(rt.status)
		_, _ = io.WriteString(w, rt.reply)
		return
	}
	s.bad = append(s.bad, fmt.Sprintf("%s %s%s?%s %s", r.Method, r.Host, r.URL.Path, r.URL.RawQuery, body))
	http.Error(w, "no documented route", http.StatusBadRequest)
}

func (s *vendorStandIn) unused() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for i, rt := range s.routes {
		if !s.used[i] {
			out = append(out, rt.method+" "+rt.path+"?"+rt.query)
		}
	}
	return out
}

func (s *vendorStandIn) failure() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.bad) > 0 {
		return fmt.Errorf("requests no documented route answers: %q", s.bad)
	}
	return nil
}

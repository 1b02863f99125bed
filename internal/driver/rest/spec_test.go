package rest

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/driver"
)

// TestNewRefusesBadSpecs: each refusal names the field to fix.
func TestNewRefusesBadSpecs(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*v1alpha1.RESTDriver)
		want string
	}{
		{"no deleteDocument", func(s *v1alpha1.RESTDriver) { s.Operations.DeleteDocument = nil }, "operations.deleteDocument is required"},
		{"no createDocument", func(s *v1alpha1.RESTDriver) { s.Operations.CreateDocument = nil }, "operations.createDocument is required"},
		{"body not JSON for a quote", func(s *v1alpha1.RESTDriver) {
			s.Operations.CreateDocument[0].Body = `{"title": "{{.Title}}"}`
		}, "operations.createDocument[0]: with sample values: body: does not render JSON"},
		{"Authorization header", func(s *v1alpha1.RESTDriver) {
			s.Operations.CreateDocument[0].Headers = map[string]v1alpha1.RESTValue{"authorization": "x"}
		}, `operations.createDocument[0].headers["authorization"]: may not be set`},
		{"hop-by-hop header", func(s *v1alpha1.RESTDriver) {
			s.Operations.CreateDocument[0].Headers = map[string]v1alpha1.RESTValue{"Connection": "close"}
		}, "may not be set"},
		{"undeclared value", func(s *v1alpha1.RESTDriver) { s.Operations.CreateDocument[0].Path = "/{{.Values.nope}}" }, ".Values.nope"},
		{"never captured", func(s *v1alpha1.RESTDriver) { s.Operations.CreateDocument[0].Path = "/{{.Captured.nope}}" }, ".Captured.nope, which no request captures"},
		{"lookup misses a capture", func(s *v1alpha1.RESTDriver) {
			s.Operations.LookupDocument[1].Capture = nil
		}, `lookupDocument must capture "issue"`},
		{"query in path", func(s *v1alpha1.RESTDriver) { s.Operations.CreateDocument[0].Path = "/x?y=1" }, `no "?"`},
		{"dot dot in path", func(s *v1alpha1.RESTDriver) { s.Operations.CreateDocument[0].Path = "/a/../b" }, `".."`},
		{"redirect expected", func(s *v1alpha1.RESTDriver) { s.Operations.CreateDocument[0].Expect = []int32{302} }, "expect: 302"},
		{"variable", func(s *v1alpha1.RESTDriver) { s.Operations.CreateDocument[0].Path = "{{$x := .Title}}" }, "variables"},
		{"range", func(s *v1alpha1.RESTDriver) { s.Operations.CreateDocument[0].Path = "{{range .Values}}x{{end}}" }, "range"},
		{"GET with body", func(s *v1alpha1.RESTDriver) { s.Operations.LookupDocument[0].Body = `{}` }, "a GET sends no body"},
		{"bad pointer", func(s *v1alpha1.RESTDriver) {
			s.Operations.CreateDocument[0].Capture = map[string]v1alpha1.RESTValue{"repo": "name"}
		}, `capture["repo"]`},
		{"half the group grants", func(s *v1alpha1.RESTDriver) {
			s.Operations.GrantGroup = []v1alpha1.RESTRequest{req("PUT", "/g")}
		}, "grantGroup and revokeGroup together"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := giteaLike()
			spec.URL = "http://127.0.0.1:1/api/v1"
			tc.edit(spec)
			_, err := New(Config{Spec: spec, BaseURL: spec.URL, HTTPClient: newTarget(t, nil).Client()})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New = %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// TestCapabilitiesFollowDeclaredOperations: the revocation methods, and
// the GroupGranter interface, exist only when their operations do; an
// undeclared operation is an error naming it, never an absence.
func TestCapabilitiesFollowDeclaredOperations(t *testing.T) {
	for _, tc := range []struct {
		name  string
		edit  func(*v1alpha1.RESTOperations)
		want  []driver.RevocationMethod
		group bool
	}{
		{"all", func(*v1alpha1.RESTOperations) {}, []driver.RevocationMethod{"RemoveGrant", "RemoveFromGroup", "DeleteDocument", "UpdateContent"}, false},
		{"required only", func(o *v1alpha1.RESTOperations) {
			*o = v1alpha1.RESTOperations{CreateDocument: o.CreateDocument, DeleteDocument: o.DeleteDocument}
		}, nil, false},
		{"grant without revoke", func(o *v1alpha1.RESTOperations) { o.Revoke, o.UpdateContent = nil, nil }, []driver.RevocationMethod{"RemoveFromGroup", "DeleteDocument"}, false},
		{"group grants without grant", func(o *v1alpha1.RESTOperations) {
			o.Grant, o.Revoke, o.UpdateContent = nil, nil, nil
			o.GrantGroup = []v1alpha1.RESTRequest{req("PUT", "/g/{{.Group}}")}
			o.RevokeGroup = []v1alpha1.RESTRequest{req("DELETE", "/g/{{.Group}}")}
		}, []driver.RevocationMethod{"RemoveFromGroup"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := giteaLike()
			tc.edit(&spec.Operations)
			spec.URL = "http://127.0.0.1:1/api"
			d, err := New(Config{Spec: spec, BaseURL: spec.URL, HTTPClient: newTarget(t, nil).Client()})
			if err != nil {
				t.Fatal(err)
			}
			caps, err := d.Capabilities(context.Background())
			if err != nil || caps.ContractVersion != driver.ContractVersion || caps.Answer || !slices.Equal(caps.RevocationMethods, tc.want) {
				t.Errorf("Capabilities = %+v, %v; want methods %v", caps, err, tc.want)
			}
			if _, ok := d.(driver.GroupGranter); ok != tc.group {
				t.Errorf("GroupGranter = %v, want %v", ok, tc.group)
			}
		})
	}
	spec := minimal()
	spec.URL = "http://127.0.0.1:1/api"
	d, _ := New(Config{Spec: spec, BaseURL: spec.URL, HTTPClient: newTarget(t, nil).Client()})
	err := d.Grant(context.Background(), "c", "alice")
	if !errors.Is(err, ErrNotDeclared) || !strings.Contains(err.Error(), "grant") || driver.IsPermanent(err) {
		t.Errorf("undeclared Grant = %v, want ErrNotDeclared naming grant", err)
	}
	if _, err := d.Search(context.Background(), "", "q", 5); err == nil || !strings.Contains(err.Error(), "spec.surfaces.search") {
		t.Errorf("Search = %v, want the plants-only configuration error", err)
	}
}

// TestRestoreValidatesValues: persisted values are the target's text too:
// an invalid one is dropped, so the request needing it fails naming it.
func TestRestoreValidatesValues(t *testing.T) {
	tg := newTarget(t, nil)
	d := build(t, tg, "/api/v1", giteaLike(), nil)
	d.Restore("c", map[string]string{"repo": "a\nb", "issue": "7"})
	if got := d.Captured("c"); got["issue"] != "7" || len(got) != 1 {
		t.Fatalf("restored = %v, want only issue", got)
	}
	var missing *MissingCapture
	if err := d.DeleteDocument(context.Background(), "c"); !errors.As(err, &missing) || missing.Name != "repo" {
		t.Fatalf("delete = %v, want MissingCapture repo", err)
	}
}

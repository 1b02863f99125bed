package v1alpha1

import (
	"reflect"
	"slices"
	"strings"
	"testing"
)

// fillRefs allocates every optional block under v and names each
// SecretKeyReference after its field path, returning the paths.
func fillRefs(v reflect.Value, path string) []string {
	switch v.Kind() {
	case reflect.Pointer:
		if v.Type().Elem().Kind() != reflect.Struct {
			return nil
		}
		v.Set(reflect.New(v.Type().Elem()))
		return fillRefs(v.Elem(), path)
	case reflect.Slice:
		if v.Type().Elem().Kind() != reflect.Struct {
			return nil
		}
		v.Set(reflect.MakeSlice(v.Type(), 1, 1))
		return fillRefs(v.Index(0), path+"[0]")
	case reflect.Struct:
		if v.Type() == reflect.TypeFor[SecretKeyReference]() {
			v.Set(reflect.ValueOf(SecretKeyReference{Name: path, Key: "key"}))
			return []string{path}
		}
		var out []string
		for i := range v.NumField() {
			f := v.Type().Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if !f.IsExported() || name == "-" {
				continue
			}
			sub := path
			if name != "" {
				sub = path + "." + name
			}
			out = append(out, fillRefs(v.Field(i), sub)...)
		}
		return out
	}
	return nil
}

// TestSecretRefsListEverySecretReference: every SecretKeyReference a
// CorpusSpec can hold is listed by SecretRefs for the types that select
// its block, and only for those, so a reference added to the API and not
// to SecretRefs fails here rather than in one of its readers.
func TestSecretRefsListEverySecretReference(t *testing.T) {
	var all []string
	listed := map[string]bool{}
	for _, driver := range []DriverType{DriverHTTP, DriverPostgres, DriverREST} {
		for _, perms := range []PermissionsType{"", PermissionsSpiceDB, PermissionsOpenFGA} {
			for _, dir := range []DirectoryType{"", DirectoryLDAP} {
				spec := &CorpusSpec{}
				all = fillRefs(reflect.ValueOf(spec).Elem(), "spec")
				spec.Driver.Type = driver
				spec.Permissions.Type = perms
				if perms == "" {
					spec.Permissions = nil
				}
				spec.Directory.Type = dir
				if dir == "" {
					spec.Directory = nil
				}
				for _, r := range spec.SecretRefs() {
					if r.Ref.Name != r.Field {
						t.Errorf("%s/%s: ref %s holds the Secret of %s", driver, perms, r.Field, r.Ref.Name)
					}
					if r.Use == "" {
						t.Errorf("%s/%s: ref %s says nothing of its use", driver, perms, r.Field)
					}
					if !selected(r.Field, driver, perms, dir) {
						t.Errorf("%s/%s: ref %s belongs to a block the types do not select", driver, perms, r.Field)
					}
					listed[r.Field] = true
				}
			}
		}
	}
	for _, path := range all {
		if !listed[path] {
			t.Errorf("SecretRefs never lists %s", path)
		}
	}
}

// selected reports whether field lies in the driver, permissions or directory block
// the types select.
func selected(field string, driver DriverType, perms PermissionsType, dir DirectoryType) bool {
	if rest, ok := strings.CutPrefix(field, "spec.driver."); ok {
		return strings.HasPrefix(rest, strings.ToLower(string(driver))+".")
	}
	if rest, ok := strings.CutPrefix(field, "spec.permissions."); ok {
		return perms != "" && strings.HasPrefix(rest, strings.ToLower(string(perms))+".")
	}
	if rest, ok := strings.CutPrefix(field, "spec.directory."); ok {
		return dir != "" && strings.HasPrefix(rest, strings.ToLower(string(dir))+".")
	}
	return false
}

func TestSecretNamesAreEachSecretOnce(t *testing.T) {
	ref := func(name string) SecretKeyReference { return SecretKeyReference{Name: name, Key: "k"} }
	spec := CorpusSpec{
		Driver: Driver{Type: DriverPostgres, Postgres: &PostgresDriver{DSNSecretRef: ref("pg"), ReadDSNSecretRef: ptr(ref("pg"))}},
		Permissions: &Permissions{Type: PermissionsOpenFGA,
			OpenFGA: &OpenFGAPermissions{APIURL: "http://fga", APITokenSecretRef: ref("fga")}},
	}
	if got, want := spec.SecretNames(), []string{"pg", "fga"}; !slices.Equal(got, want) {
		t.Errorf("SecretNames() = %q, want %q", got, want)
	}
}

func ptr[T any](v T) *T { return &v }

func TestPermissionsBackend(t *testing.T) {
	key := SecretKeyReference{Name: "key", Key: "k"}
	mapping := PermissionsMapping{DocumentType: "doc"}
	tests := []struct {
		name string
		p    *Permissions
		// ok is whether a backend is selected; want is it then.
		ok   bool
		want PermissionsBackend
	}{
		{"none", nil, false, PermissionsBackend{}},
		{"SpiceDB", &Permissions{Type: PermissionsSpiceDB, SpiceDB: &SpiceDBPermissions{Endpoint: "db:50051",
			PresharedKeySecretRef: key, PermissionsMapping: mapping}}, true,
			PermissionsBackend{Type: PermissionsSpiceDB, Field: "spec.permissions.spicedb", Endpoint: "grpc://db:50051",
				EndpointField: "spec.permissions.spicedb.endpoint",
				KeyField:      "spec.permissions.spicedb.presharedKeySecretRef", KeyUse: "corpus SpiceDB preshared key",
				KeyRef: key, Mapping: mapping}},
		{"OpenFGA", &Permissions{Type: PermissionsOpenFGA, OpenFGA: &OpenFGAPermissions{APIURL: "http://fga:8080",
			StoreName: "s", APITokenSecretRef: key, PermissionsMapping: mapping}}, true,
			PermissionsBackend{Type: PermissionsOpenFGA, Field: "spec.permissions.openfga", Endpoint: "http://fga:8080",
				EndpointField: "spec.permissions.openfga.apiURL",
				KeyField:      "spec.permissions.openfga.apiTokenSecretRef", KeyUse: "corpus OpenFGA API token",
				KeyRef: key, Mapping: mapping, Store: "store= name=s model="}},
		{"type without its block", &Permissions{Type: PermissionsOpenFGA,
			SpiceDB: &SpiceDBPermissions{Endpoint: "db:50051"}}, false, PermissionsBackend{}},
		{"unknown type", &Permissions{Type: "Zanzibar"}, false, PermissionsBackend{}},
	}
	for _, tt := range tests {
		got, ok := tt.p.Backend()
		if ok != tt.ok || got != tt.want {
			t.Errorf("%s: Backend() = %+v, %v; want %+v, %v", tt.name, got, ok, tt.want, tt.ok)
		}
	}
}

func TestSurfacesServe(t *testing.T) {
	tests := []struct {
		name     string
		surfaces *CorpusSurfaces
		want     []Surface
		urls     []string
	}{
		{"none", nil, nil, nil},
		{"search", &CorpusSurfaces{Search: &SearchSurface{URL: "http://s"}}, []Surface{SurfaceSearch}, []string{"http://s"}},
		{"chat", &CorpusSurfaces{Chat: &ChatSurface{URL: "http://c"}},
			[]Surface{SurfaceAnswer, SurfaceConversation}, []string{"http://c"}},
		{"streaming chat and search", &CorpusSurfaces{Chat: &ChatSurface{URL: "http://c", Stream: true}, Search: &SearchSurface{URL: "http://s"}},
			[]Surface{SurfaceSearch, SurfaceAnswer, SurfaceConversation, SurfaceStream, SurfaceInFlight}, []string{"http://c", "http://s"}},
	}
	for _, tt := range tests {
		if got := tt.surfaces.Serves(); !slices.Equal(got, tt.want) {
			t.Errorf("%s: Serves() = %q, want %q", tt.name, got, tt.want)
		}
		if got := tt.surfaces.URLs(); !slices.Equal(got, tt.urls) {
			t.Errorf("%s: URLs() = %q, want %q", tt.name, got, tt.urls)
		}
	}
}

// TestRevokedIn: where each method's change is made, for a corpus with no
// backend of its own, with a permissions backend, with a directory, and
// with both; every method of the vocabulary is in the table.
func TestRevokedIn(t *testing.T) {
	plain := CorpusSpec{}
	engine := CorpusSpec{Permissions: &Permissions{Type: PermissionsSpiceDB}}
	dir := CorpusSpec{Directory: &Directory{Type: DirectoryLDAP}}
	both := CorpusSpec{Permissions: &Permissions{Type: PermissionsOpenFGA}, Directory: &Directory{Type: DirectoryLDAP}}
	want := map[RevocationMethod][4]RevokedIn{ // plain, engine, dir, both
		"":                    {RevokedInTarget, RevokedInPermissions, RevokedInTarget, RevokedInPermissions},
		RevokeRemoveGrant:     {RevokedInTarget, RevokedInPermissions, RevokedInTarget, RevokedInPermissions},
		RevokeRemoveFromGroup: {RevokedInTarget, RevokedInPermissions, RevokedInDirectory, RevokedInDirectory},
		RevokeDeleteDocument:  {RevokedInTarget, RevokedInTarget, RevokedInTarget, RevokedInTarget},
		RevokeUpdateContent:   {RevokedInTarget, RevokedInTarget, RevokedInTarget, RevokedInTarget},
		RevokeCredential:      {RevokedInIssuer, RevokedInIssuer, RevokedInIssuer, RevokedInIssuer},
	}
	for _, m := range append(slices.Clone(RevocationMethods), OperatorRevocationMethods...) {
		if _, ok := want[m]; !ok {
			t.Errorf("method %s is not in the table", m)
		}
	}
	for m, w := range want {
		for i, s := range []CorpusSpec{plain, engine, dir, both} {
			if got := s.RevokedIn(m); got != w[i] {
				t.Errorf("method %q, corpus %d: %s, want %s", m, i, got, w[i])
			}
		}
	}
}

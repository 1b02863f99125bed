package openfga

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	fga "github.com/openfga/go-sdk"
)

// Models as OpenFGA returns them (ReadAuthorizationModel's JSON), with
// the one thing each lacks.
const (
	userType  = `{"type":"user"}`
	groupType = `{"type":"group","relations":{"member":{"this":{}}},"metadata":{"relations":{"member":{"directly_related_user_types":[{"type":"user"}]}}}}`
)

func docType(refs string) string {
	return `{"type":"document","relations":{"viewer":{"this":{}}},"metadata":{"relations":{"viewer":{"directly_related_user_types":[` + refs + `]}}}}`
}

func modelJSON(types ...string) string {
	return `{"id":"01J0000000000000000000000B","schema_version":"1.1","type_definitions":[` + strings.Join(types, ",") + `]}`
}

func TestCheckModelNamesWhatIsMissing(t *testing.T) {
	reference, err := json.Marshal(ReferenceModel(DefaultMapping))
	if err != nil {
		t.Fatal(err)
	}
	renamed := Mapping{DocumentType: "file", GrantRelation: "reader", GroupType: "team", MemberRelation: "in", SubjectType: "person"}
	renamedRef, err := json.Marshal(ReferenceModel(renamed))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		model   string
		mapping Mapping
		want    string // "" for no problem, else a part of the message
	}{
		{"the reference model", string(reference), Mapping{}, ""},
		{"the reference model, renamed", string(renamedRef), renamed, ""},
		{"a hand-written equivalent", modelJSON(userType, groupType, docType(`{"type":"user"},{"type":"group","relation":"member"}`)), Mapping{}, ""},
		{"no types at all", modelJSON(), Mapping{}, `no type "user"`},
		{"no group type", modelJSON(userType, docType(`{"type":"user"}`)), Mapping{}, `the model has no type "group"`},
		{"no document type", modelJSON(userType, groupType), Mapping{}, `no type "document"`},
		{"no grant relation", modelJSON(userType, groupType, docType(`{"type":"user"}`)), Mapping{GrantRelation: "reader"}, `type "document" has no relation "reader"`},
		{"grant without group members", modelJSON(userType, groupType, docType(`{"type":"user"}`)), Mapping{}, "does not allow subjects of type group#member"},
		{"grant without users", modelJSON(userType, groupType, docType(`{"type":"group","relation":"member"}`)), Mapping{}, "relation document#viewer does not allow subjects of type user"},
		{"users only as a wildcard", modelJSON(userType, groupType, docType(`{"type":"user","wildcard":{}},{"type":"group","relation":"member"}`)), Mapping{}, "does not allow subjects of type user"},
		{"users only under a condition", modelJSON(userType, groupType, docType(`{"type":"user","condition":"in_office"},{"type":"group","relation":"member"}`)), Mapping{}, "does not allow subjects of type user"},
		{"the group itself, not its members", modelJSON(userType, groupType, docType(`{"type":"user"},{"type":"group"}`)), Mapping{}, "group#member"},
		{"no member relation", modelJSON(userType, `{"type":"group"}`, docType(`{"type":"user"},{"type":"group","relation":"member"}`)), Mapping{}, `type "group" has no relation "member"`},
		{"a computed grant relation", modelJSON(userType, groupType, `{"type":"document","relations":{"viewer":{"computedUserset":{"relation":"owner"}},"owner":{"this":{}}},"metadata":{"relations":{"owner":{"directly_related_user_types":[{"type":"user"}]}}}}`), Mapping{}, "relation document#viewer does not allow subjects of type user"},
		{"a 1.0 model without type restrictions", `{"schema_version":"1.0","type_definitions":[{"type":"user"},{"type":"group","relations":{"member":{"this":{}}}},{"type":"document","relations":{"viewer":{"this":{}}}}]}`, Mapping{}, "does not allow subjects"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var model fga.AuthorizationModel
			if err := json.Unmarshal([]byte(tc.model), &model); err != nil {
				t.Fatal(err)
			}
			err := checkModel(&model, tc.mapping)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("got %v, want no problem", err)
				}
				return
			}
			var sp *SchemaProblem
			if !errors.As(err, &sp) || !strings.Contains(sp.Message, tc.want) {
				t.Fatalf("got %v, want a problem naming %q", err, tc.want)
			}
		})
	}
}

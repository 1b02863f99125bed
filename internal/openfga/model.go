package openfga

import (
	"context"
	"fmt"
	"net/http"

	fga "github.com/openfga/go-sdk"

	"github.com/ragcanary/ragcanary/internal/driver"
)

// SchemaProblem is a store or model that lacks what the mapping names;
// Message says which store, type or relation, and is safe for a condition.
type SchemaProblem struct{ Message string }

func (e *SchemaProblem) Error() string { return e.Message }

// ReferenceModel is the model ragcanary expects under m: a document
// readable by users granted directly or through a group's members.
//
//	type user
//	type group
//	  relations
//	    define member: [user]
//	type document
//	  relations
//	    define viewer: [user, group#member]
func ReferenceModel(m Mapping) fga.WriteAuthorizationModelRequest {
	m = m.WithDefaults()
	return fga.WriteAuthorizationModelRequest{
		SchemaVersion: "1.1",
		TypeDefinitions: []fga.TypeDefinition{
			{Type: m.SubjectType},
			directType(m.GroupType, m.MemberRelation, fga.RelationReference{Type: m.SubjectType}),
			directType(m.DocumentType, m.GrantRelation, fga.RelationReference{Type: m.SubjectType},
				fga.RelationReference{Type: m.GroupType, Relation: &m.MemberRelation}),
		},
	}
}

// directType is a type with one relation assigned directly to subjects of
// the given types.
func directType(typ, relation string, subjects ...fga.RelationReference) fga.TypeDefinition {
	return fga.TypeDefinition{
		Type:      typ,
		Relations: &map[string]fga.Userset{relation: {This: &map[string]interface{}{}}},
		Metadata: &fga.Metadata{Relations: &map[string]fga.RelationMetadata{
			relation: {DirectlyRelatedUserTypes: &subjects},
		}},
	}
}

// CheckModel reports whether the store exists and its model (the pinned
// one, or the latest) has every type and relation of the client's mapping,
// with the subject types ragcanary writes: a *SchemaProblem naming what is
// missing when not, a classified error when OpenFGA cannot be asked.
func (c *Client) CheckModel(ctx context.Context) error {
	ctx, cancel := c.bounded(ctx)
	defer cancel()
	model, err := c.model(ctx)
	if err != nil {
		return err
	}
	if model == nil {
		return &SchemaProblem{Message: "the OpenFGA store has no authorization model; write one with the types the permissions mapping names"}
	}
	if err := checkModel(model, c.mapping); err != nil {
		return err
	}
	c.mu.Lock()
	c.checked = model.Id
	c.mu.Unlock()
	return nil
}

// EnsureModel writes the mapping's ReferenceModel into a store that has no
// model; a store with one is left alone (it is the user's) and its model
// must pass CheckModel. A pinned model ID is never written, only checked.
func (c *Client) EnsureModel(ctx context.Context) error {
	ctx, cancel := c.bounded(ctx)
	defer cancel()
	if c.modelID == "" {
		model, err := c.model(ctx)
		if err != nil {
			return err
		}
		if model == nil {
			// The model written is the mapping's own; reading it back
			// could reach a read replica that has not seen it yet.
			return c.writeModel(ctx)
		}
	}
	return c.CheckModel(ctx)
}

func (c *Client) writeModel(ctx context.Context) error {
	store, err := c.ResolveStore(ctx)
	if err != nil {
		return err
	}
	reply, resp, err := c.api.OpenFgaApi.WriteAuthorizationModel(ctx, store).Body(ReferenceModel(c.mapping)).Execute()
	if err != nil {
		return classify("WriteAuthorizationModel", resp, err)
	}
	c.mu.Lock()
	c.checked = reply.AuthorizationModelId
	c.mu.Unlock()
	return nil
}

// model reads the store's pinned or latest model; nil when the store has
// none. A store or pinned model that does not exist is a *SchemaProblem.
func (c *Client) model(ctx context.Context) (*fga.AuthorizationModel, error) {
	store, err := c.ResolveStore(ctx)
	if err != nil {
		return nil, err
	}
	// ReadAuthorizationModels answers for a store that does not exist
	// too, so the store is asked for first.
	if _, resp, err := c.api.OpenFgaApi.GetStore(ctx, store).Execute(); err != nil {
		if resp != nil && resp.StatusCode == http.StatusNotFound {
			return nil, &SchemaProblem{Message: fmt.Sprintf("OpenFGA has no store %s", store)}
		}
		return nil, classify("GetStore", resp, err)
	}
	if c.modelID != "" {
		reply, resp, err := c.api.OpenFgaApi.ReadAuthorizationModel(ctx, store, c.modelID).Execute()
		if hasCode(resp, err, http.StatusBadRequest, fga.ERRORCODE_AUTHORIZATION_MODEL_NOT_FOUND) ||
			(resp != nil && resp.StatusCode == http.StatusNotFound) {
			return nil, &SchemaProblem{Message: fmt.Sprintf("the OpenFGA store has no authorization model %s", c.modelID)}
		}
		if err != nil {
			return nil, classify("ReadAuthorizationModel", resp, err)
		}
		if reply.AuthorizationModel == nil {
			return nil, driver.NewError(driver.Transient, "ReadAuthorizationModel", resp.StatusCode, reasonMalformed, nil)
		}
		return reply.AuthorizationModel, nil
	}
	// Models are listed newest first.
	reply, resp, err := c.api.OpenFgaApi.ReadAuthorizationModels(ctx, store).PageSize(1).Execute()
	if err != nil {
		return nil, classify("ReadAuthorizationModels", resp, err)
	}
	if len(reply.AuthorizationModels) == 0 {
		return nil, nil
	}
	return &reply.AuthorizationModels[0], nil
}

// checkModel is CheckModel's verdict on a model that was read.
func checkModel(model *fga.AuthorizationModel, m Mapping) error {
	m = m.WithDefaults()
	types := map[string]*fga.TypeDefinition{}
	for i := range model.TypeDefinitions {
		types[model.TypeDefinitions[i].Type] = &model.TypeDefinitions[i]
	}
	for _, typ := range []string{m.SubjectType, m.GroupType, m.DocumentType} {
		if _, ok := types[typ]; !ok {
			return &SchemaProblem{Message: fmt.Sprintf("the model has no type %q", typ)}
		}
	}
	for _, want := range []struct{ typ, rel, subject, subjectRel string }{
		{m.DocumentType, m.GrantRelation, m.SubjectType, ""},
		{m.DocumentType, m.GrantRelation, m.GroupType, m.MemberRelation},
		{m.GroupType, m.MemberRelation, m.SubjectType, ""},
	} {
		if msg := missing(types, want.typ, want.rel, want.subject, want.subjectRel); msg != "" {
			return &SchemaProblem{Message: msg}
		}
	}
	return nil
}

// missing says what keeps typ#rel from taking subjects of type
// subject(#subjectRel) as written by ragcanary: without a condition and
// not as a wildcard. "" when nothing does. types holds typ (checkModel
// made sure).
func missing(types map[string]*fga.TypeDefinition, typ, rel, subject, subjectRel string) string {
	t := types[typ]
	if _, ok := t.GetRelations()[rel]; !ok {
		return fmt.Sprintf("type %q has no relation %q", typ, rel)
	}
	meta := t.GetMetadata()
	relMeta := meta.GetRelations()[rel]
	for _, ref := range relMeta.GetDirectlyRelatedUserTypes() {
		if ref.Type == subject && ref.GetRelation() == subjectRel && ref.Wildcard == nil && ref.GetCondition() == "" {
			return ""
		}
	}
	want := subject
	if subjectRel != "" {
		want += "#" + subjectRel
	}
	return fmt.Sprintf("relation %s#%s does not allow subjects of type %s", typ, rel, want)
}

package spicedb

import (
	"context"
	"fmt"
	"slices"
	"time"

	v1 "github.com/authzed/authzed-go/proto/authzed/api/v1"
	authzed "github.com/authzed/authzed-go/v1"
	"google.golang.org/grpc/codes"
)

// SchemaProblem is a schema that lacks what the mapping names; Message says
// which definition or relation, and is safe for a condition.
type SchemaProblem struct{ Message string }

func (e *SchemaProblem) Error() string { return e.Message }

// CheckSchema reports whether the stored schema has every definition and
// relation of m, with the subject types ragcanary writes: a *SchemaProblem
// when not, a classified error when SpiceDB cannot be asked.
func CheckSchema(ctx context.Context, c *authzed.Client, m Mapping, timeout time.Duration) error {
	m = m.WithDefaults()
	ctx, cancel := bounded(ctx, timeout)
	defer cancel()
	// Fully consistent: a schema just written must be what is checked.
	resp, err := c.ReflectSchema(ctx, &v1.ReflectSchemaRequest{
		Consistency: &v1.Consistency{Requirement: &v1.Consistency_FullyConsistent{FullyConsistent: true}}})
	if errorCode(err) == codes.NotFound {
		return &SchemaProblem{Message: "SpiceDB has no schema; write one with the definitions the permissions mapping names"}
	}
	if err != nil {
		return classify("ReadSchema", err)
	}
	defs := map[string]*v1.ReflectionDefinition{}
	for _, d := range resp.GetDefinitions() {
		defs[d.GetName()] = d
	}
	for _, want := range []struct{ def, rel, subject, subjectRel string }{
		{m.DocumentType, m.GrantRelation, m.SubjectType, ""},
		{m.DocumentType, m.GrantRelation, m.GroupType, m.MemberRelation},
		{m.GroupType, m.MemberRelation, m.SubjectType, ""},
	} {
		if msg := missing(defs, want.def, want.rel, want.subject, want.subjectRel); msg != "" {
			return &SchemaProblem{Message: msg}
		}
	}
	if _, ok := defs[m.SubjectType]; !ok {
		return &SchemaProblem{Message: fmt.Sprintf("the schema has no definition %q (permissions.spicedb.subjectType)", m.SubjectType)}
	}
	return nil
}

func missing(defs map[string]*v1.ReflectionDefinition, def, rel, subject, subjectRel string) string {
	d, ok := defs[def]
	if !ok {
		return fmt.Sprintf("the schema has no definition %q", def)
	}
	i := slices.IndexFunc(d.GetRelations(), func(r *v1.ReflectionRelation) bool { return r.GetName() == rel })
	if i < 0 {
		return fmt.Sprintf("definition %q has no relation %q", def, rel)
	}
	for _, t := range d.GetRelations()[i].GetSubjectTypes() {
		if t.GetSubjectDefinitionName() == subject && t.GetOptionalRelationName() == subjectRel {
			return ""
		}
	}
	want := subject
	if subjectRel != "" {
		want += "#" + subjectRel
	}
	return fmt.Sprintf("relation %s#%s does not allow subjects of type %s", def, rel, want)
}

// EnsureSchema writes m's reference schema when SpiceDB has none. An
// existing schema is left alone (it is the user's) and must pass CheckSchema.
func EnsureSchema(ctx context.Context, c *authzed.Client, m Mapping, timeout time.Duration) error {
	m = m.WithDefaults()
	err := CheckSchema(ctx, c, m, timeout)
	if _, noSchema := err.(*SchemaProblem); !noSchema || !isEmpty(ctx, c, timeout) {
		return err
	}
	wctx, cancel := bounded(ctx, timeout)
	defer cancel()
	_, werr := c.WriteSchema(wctx, &v1.WriteSchemaRequest{Schema: m.Schema()})
	return classify("WriteSchema", werr)
}

func isEmpty(ctx context.Context, c *authzed.Client, timeout time.Duration) bool {
	ctx, cancel := bounded(ctx, timeout)
	defer cancel()
	_, err := c.ReadSchema(ctx, &v1.ReadSchemaRequest{})
	return errorCode(err) == codes.NotFound
}

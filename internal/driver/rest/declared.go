package rest

import (
	"slices"
)

// The operations' names as spec.driver.rest.operations spells them, for
// callers that check a source operation by operation (conformance).
const (
	OpCreateDocument  = opCreate
	OpLookupDocument  = opLookup
	OpGrant           = opGrant
	OpRevoke          = opRevoke
	OpGrantGroup      = opGrantGroup
	OpRevokeGroup     = opRevokeGroup
	OpAddToGroup      = opAddToGroup
	OpRemoveFromGroup = opRemoveFromGroup
	OpUpdateContent   = opUpdate
	OpDeleteDocument  = opDelete
)

// Operations lists every operation a REST source may declare, in the order
// a canary's lifecycle uses them.
func Operations() []string {
	return []string{opCreate, opLookup, opGrant, opRevoke, opGrantGroup, opRevokeGroup,
		opAddToGroup, opRemoveFromGroup, opUpdate, opDelete}
}

// Declared reports whether the spec declares the operation.
func (d *Driver) Declared(op string) bool { return d.ops[op] != nil }

// CaptureNames are the names the operation's requests capture, sorted;
// nil when it captures none or is not declared.
func (d *Driver) CaptureNames(op string) []string {
	o := d.ops[op]
	if o == nil {
		return nil
	}
	var out []string
	for _, r := range o.requests {
		for _, c := range r.captures {
			if !slices.Contains(out, c.name) {
				out = append(out, c.name)
			}
		}
	}
	slices.Sort(out)
	return out
}

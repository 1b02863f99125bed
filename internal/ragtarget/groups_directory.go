package ragtarget

import (
	"context"
	"fmt"

	"github.com/ragcanary/ragcanary/internal/directory"
)

// DirectoryGroups is the GroupSource for an LDAP directory: a group's
// members are the subjects internal/directory maps its member values to,
// which ragtarget compares with persona principals as they are. The caller
// owns d and closes it after the service.
func DirectoryGroups(d *directory.Directory) GroupSource {
	return directoryGroups{d: d}
}

type directoryGroups struct{ d *directory.Directory }

// Members asks the directory; a missing group entry is ErrNoSuchGroup,
// which is how a grantee that is a user, not a group, is answered.
func (g directoryGroups) Members(ctx context.Context, group string) ([]string, error) {
	members, err := g.d.Members(ctx, group)
	if directory.IsNotFound(err) {
		return nil, fmt.Errorf("%w: %w", ErrNoSuchGroup, err)
	}
	return members, err
}

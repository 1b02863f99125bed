package target

import (
	"context"
	"errors"
	"sync"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/directory"
	"github.com/ragcanary/ragcanary/internal/driver"
)

// The directory field messages name.
const directoryURLField = "spec.directory.ldap.url"

// directoryRecipe checks a corpus's directory against the door's rules (a
// type this build opens, at an allowed URL) and reads its bind password
// and CA (labelled credentials) into r. Nothing is sent before it passes.
func (d *Door) directoryRecipe(ctx context.Context, namespace string, dir *v1alpha1.Directory, r *Recipe) error {
	l, err := d.ldapSettings(dir)
	if err != nil {
		return err
	}
	if r.DirectoryPassword, err = Credential(ctx, d.Reader, namespace, l.BindPasswordSecretRef); err != nil {
		return err
	}
	if ref := l.CASecretRef; ref != nil {
		if r.DirectoryCA, err = Credential(ctx, d.Reader, namespace, *ref); err != nil {
			return err
		}
	}
	r.Directory = dir.DeepCopy()
	return nil
}

// ldapSettings is the directory's LDAP block after the door's checks.
func (d *Door) ldapSettings(dir *v1alpha1.Directory) (*v1alpha1.LDAPDirectory, error) {
	if dir.Type != v1alpha1.DirectoryLDAP || dir.LDAP == nil {
		return nil, Stall(v1alpha1.ReasonDriverUnsupported, "spec.directory: type %q is not available or its settings are missing; use LDAP", dir.Type)
	}
	u, err := d.Allow.Check(directoryURLField, dir.LDAP.URL)
	if err != nil {
		return nil, err
	}
	if u.Scheme != "ldap" && u.Scheme != "ldaps" {
		return nil, Stall(v1alpha1.ReasonInvalidURL, "%s must be an ldap:// or ldaps:// URL", directoryURLField)
	}
	return dir.LDAP, nil
}

// attachDirectory sends the corpus's group memberships to the recipe's
// directory and sets the check the Corpus controller runs on it. The
// document's grant to a group stays where it was (the driver or the
// permissions backend): the directory holds who is in a group, the target
// what a group may read.
func (d *Door) attachDirectory(c *Corpus, r Recipe) error {
	l, err := d.ldapSettings(r.Directory)
	if err != nil {
		return err
	}
	dir, err := directory.New(directory.Config{
		URL: l.URL, BindDN: l.BindDN, BindPassword: string(r.DirectoryPassword), CA: r.DirectoryCA,
		GroupDN: l.GroupDN, MemberAttribute: string(l.MemberAttribute),
		UserDN: l.UserDN, UserSearchBase: userSearchBase(l), UserSearchAttribute: userSearchAttribute(l),
		Dial: d.Addresses.DialContext, Timeout: c.Timeout,
	})
	if err != nil {
		return Stall(v1alpha1.ReasonInvalidURL, "spec.directory.ldap: %v", err)
	}
	holdUntilLastRelease(c.holds, func() { _ = dir.Close() })
	c.Driver = &withDirectory{passThrough: passThrough{c.Driver}, dir: dir}
	c.CheckDirectory = func(ctx context.Context) error { return directoryError("Check", dir.Check(ctx)) }
	return nil
}

// holdUntilLastRelease records a client no pool owns in h: it is closed
// when the last holder (the resolver, and each Corpus.Hold) lets go.
func holdUntilLastRelease(h *holds, closeFn func()) {
	var mu sync.Mutex
	n := 1
	release := func() {
		mu.Lock()
		defer mu.Unlock()
		if n--; n == 0 {
			closeFn()
		}
	}
	h.add(release, func() func() {
		mu.Lock()
		defer mu.Unlock()
		n++
		var once sync.Once
		return func() { once.Do(release) }
	})
}

func userSearchBase(l *v1alpha1.LDAPDirectory) string {
	if l.UserSearch == nil {
		return ""
	}
	return l.UserSearch.BaseDN
}

func userSearchAttribute(l *v1alpha1.LDAPDirectory) string {
	if l.UserSearch == nil {
		return ""
	}
	if l.UserSearch.Attribute == "" {
		return "uid"
	}
	return l.UserSearch.Attribute
}

// withDirectory is a corpus driver whose group memberships are changed in
// a directory; every other call goes to the driver it wraps.
type withDirectory struct {
	passThrough
	dir *directory.Directory
}

func (w *withDirectory) AddMember(ctx context.Context, group, principal string) error {
	return directoryError("AddMember", w.dir.AddMember(ctx, group, principal))
}

func (w *withDirectory) RemoveMember(ctx context.Context, group, principal string) error {
	return directoryError("RemoveMember", w.dir.RemoveMember(ctx, group, principal))
}

// GrantGroup and RevokeGroup leave a group's grant where it was: with the
// wrapped driver's group grants, or a plain grant to the group's name
// where it has none (what revocation does for such a driver).
func (w *withDirectory) GrantGroup(ctx context.Context, doc, group string) error {
	if g, ok := w.Driver.(driver.GroupGranter); ok {
		return g.GrantGroup(ctx, doc, group)
	}
	return w.Driver.Grant(ctx, doc, group)
}

func (w *withDirectory) RevokeGroup(ctx context.Context, doc, group string) error {
	if g, ok := w.Driver.(driver.GroupGranter); ok {
		return g.RevokeGroup(ctx, doc, group)
	}
	return w.Driver.Revoke(ctx, doc, group)
}

// directoryError classifies a directory failure the way every driver error
// is: a transient one (unreachable, busy, timed out) is retried until the
// step's deadline; anything else is the configuration's or the directory's
// refusal, which retrying cannot help.
func directoryError(op string, err error) error {
	if err == nil {
		return nil
	}
	var de *driver.Error
	if errors.As(err, &de) {
		return err
	}
	kind := driver.Permanent
	if directory.IsTransient(err) {
		kind = driver.Transient
	}
	return driver.NewError(kind, op, 0, "directory: "+err.Error(), err)
}

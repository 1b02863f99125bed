package conformance

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/ragcanary/ragcanary/internal/driver"
	"github.com/ragcanary/ragcanary/internal/driver/rest"
	"github.com/ragcanary/ragcanary/internal/safetext"
)

// Checks of a REST source besides its operations, which are checked under
// their own names (createDocument, grant, ...).
const (
	// CheckLookupUnknown: lookupDocument answers "not found" for a
	// document never created.
	CheckLookupUnknown = "lookupDocument-unknown"
	// CheckLookupDeleted: lookupDocument no longer finds the deleted
	// document.
	CheckLookupDeleted = "lookupDocument-deleted"
	// CheckCleanup: what a failed check left behind was removed.
	CheckCleanup = "cleanup"
	notDeclared  = "not declared"
	// maxDetail bounds a check's detail: errors quote configured names.
	maxDetail = 600
)

// RESTConfig says what to check of a REST source (spec.driver.type: REST).
type RESTConfig struct {
	// Source is the REST source as rest.New (through the door) built it.
	Source driver.Driver
	// Subject is the persona's subject: the principal grant and revoke
	// name, and the member addToGroup adds.
	Subject string
	// Group is the group grantGroup, revokeGroup, addToGroup and
	// removeFromGroup name; "" skips those operations.
	Group string
	// Timeout bounds the wait for the deleted document to be gone;
	// PollInterval is the pause between lookups.
	Timeout, PollInterval time.Duration
}

// restRunner carries a REST check's state. pending are the undo steps a
// failed or unfinished check left for cleanup, by the operation that
// undoes them.
type restRunner struct {
	cfg     RESTConfig
	src     *rest.Driver
	report  Report
	docID   string
	pending map[string]bool
	// removed and remain say what the undo steps removed and what they
	// could not.
	removed, remain []string
	// created: createDocument succeeded with every capture held.
	created bool
}

// RunREST sends each declared operation of a REST source once, against a
// uniquely named test document, and reports each under the operation's
// name; a failure quotes the driver's error, which names the request and
// the capture pointer. Undeclared operations are listed as skipped.
// Whatever the run created is removed at the end, also after a failed
// check; what could not be is named in the cleanup check.
func RunREST(ctx context.Context, cfg RESTConfig) Report {
	r := &restRunner{cfg: cfg, src: rest.Unwrap(cfg.Source), docID: "ragcanary-conformance-" + randomHex(6), pending: map[string]bool{}}
	if r.src == nil {
		r.fail(CheckCapabilities, errors.New("the driver is not a REST source"))
		return r.report
	}
	ctx = rest.WithRun(ctx, r.docID)
	r.capabilities(ctx)
	r.create(ctx)
	r.lookupCreated(ctx)
	r.lookupUnknown(ctx)
	r.permissions(ctx)
	r.update(ctx)
	// A grant left by a failed revoke is taken back while the document's
	// captures, which its requests may need, are still held.
	r.undo(ctx, rest.OpRevokeGroup, rest.OpRevoke)
	r.delete(ctx)
	r.cleanup(ctx)
	return r.report
}

func (r *restRunner) pass(name, detail string) {
	r.report.Results = append(r.report.Results, Result{Name: name, Status: Pass, Detail: detail})
}

func (r *restRunner) fail(name string, err error) {
	r.report.Results = append(r.report.Results, Result{Name: name, Status: Fail, Detail: detailOf(err)})
}

func (r *restRunner) skip(name, why string) {
	r.report.Results = append(r.report.Results, Result{Name: name, Status: Skip, Detail: why})
}

// detailOf is an error's text made safe for a terminal: the driver's
// errors hold no credential or reply body, but quote configured names.
func detailOf(err error) string { return safetext.Clean(err.Error(), maxDetail) }

// declared reports whether op is declared, listing it as skipped when not.
func (r *restRunner) declared(op string) bool {
	if r.src.Declared(op) {
		return true
	}
	r.skip(op, notDeclared)
	return false
}

// capabilities lists the revocation methods the declared operations enable.
func (r *restRunner) capabilities(ctx context.Context) {
	caps, err := r.src.Capabilities(ctx)
	if err != nil {
		r.fail(CheckCapabilities, err)
		return
	}
	methods := make([]string, 0, len(caps.RevocationMethods))
	for _, m := range caps.RevocationMethods {
		methods = append(methods, string(m))
	}
	if len(methods) == 0 {
		r.fail(CheckCapabilities, errors.New("no revocation method: declare grant and revoke, updateContent, or a group's operations"))
		return
	}
	r.pass(CheckCapabilities, "revocation methods: "+strings.Join(methods, ", "))
}

// create plants the test document and checks every capture of
// createDocument is held.
func (r *restRunner) create(ctx context.Context) {
	r.pending[rest.OpDeleteDocument] = true
	err := r.src.CreateDocument(ctx, r.document("created"))
	if err != nil {
		r.fail(rest.OpCreateDocument, err)
		return
	}
	names := r.src.CaptureNames(rest.OpCreateDocument)
	held := r.src.Captured(r.docID)
	for _, name := range names {
		if _, ok := held[name]; !ok {
			r.fail(rest.OpCreateDocument, fmt.Errorf("capture %q is not held after the operation succeeded", name))
			return
		}
	}
	r.created = true
	if len(names) == 0 {
		r.pass(rest.OpCreateDocument, "")
		return
	}
	r.pass(rest.OpCreateDocument, "captured "+strings.Join(names, ", "))
}

func (r *restRunner) document(version string) driver.Document {
	return driver.Document{ID: r.docID, Title: "ragcanary conformance " + r.docID + " " + version,
		Body:       "This document checks a REST source's declared operations (" + version + "). It is deleted when the check ends.",
		Principals: []string{}}
}

// lookupCreated finds the created document again, starting from no held
// captures, and checks it captures what createDocument captured. The
// document's captures from createDocument are restored afterwards, so the
// later operations use what the source answered when it was created.
func (r *restRunner) lookupCreated(ctx context.Context) {
	if !r.declared(rest.OpLookupDocument) {
		return
	}
	if !r.created {
		r.skip(rest.OpLookupDocument, "createDocument failed")
		return
	}
	before := r.src.Captured(r.docID)
	defer r.src.Restore(r.docID, before)
	r.src.Restore(r.docID, nil)
	found, err := r.src.Lookup(ctx, r.docID)
	switch {
	case err != nil:
		r.fail(rest.OpLookupDocument, err)
		return
	case !found:
		r.fail(rest.OpLookupDocument, errors.New("the document createDocument made was not found (the lookup answered 404)"))
		return
	}
	got := r.src.Captured(r.docID)
	var differ []string
	for _, name := range r.src.CaptureNames(rest.OpCreateDocument) {
		if got[name] != before[name] {
			differ = append(differ, fmt.Sprintf("%q", name))
		}
	}
	if len(differ) > 0 {
		r.fail(rest.OpLookupDocument, fmt.Errorf("captured %s differently from createDocument: its pointers must name the same values", strings.Join(differ, ", ")))
		return
	}
	r.pass(rest.OpLookupDocument, "found the document with the values createDocument captured")
}

// lookupUnknown: a document never created is "not found", and nothing
// else: a lookup that fails must not pass for one that found nothing.
func (r *restRunner) lookupUnknown(ctx context.Context) {
	if !r.src.Declared(rest.OpLookupDocument) {
		return
	}
	found, err := r.src.Lookup(ctx, "ragcanary-conformance-missing-"+randomHex(6))
	switch {
	case err != nil:
		r.fail(CheckLookupUnknown, fmt.Errorf("looking up a document never created failed, want not found (404): %w", err))
	case found:
		r.fail(CheckLookupUnknown, errors.New("a document never created was found; lookupDocument must answer 404 for it"))
	default:
		r.pass(CheckLookupUnknown, "a document never created is not found")
	}
}

// permission is one operation that gives access and the one that takes
// it back, with what each is called with.
type permission struct {
	give, undo string
	run        func(ctx context.Context, op string) error
	// needsDoc: the operation acts on the test document.
	needsDoc, needsGroup bool
}

func (r *restRunner) permissionOps() []permission {
	principal := func(ctx context.Context, op string) error {
		if op == rest.OpGrant {
			return r.src.Grant(ctx, r.docID, r.cfg.Subject)
		}
		return r.src.Revoke(ctx, r.docID, r.cfg.Subject)
	}
	group := func(ctx context.Context, op string) error {
		g, ok := r.cfg.Source.(driver.GroupGranter)
		if !ok {
			return fmt.Errorf("%s is declared but the source is no group granter", op)
		}
		if op == rest.OpGrantGroup {
			return g.GrantGroup(ctx, r.docID, r.cfg.Group)
		}
		return g.RevokeGroup(ctx, r.docID, r.cfg.Group)
	}
	member := func(ctx context.Context, op string) error {
		if op == rest.OpAddToGroup {
			return r.src.AddMember(ctx, r.cfg.Group, r.cfg.Subject)
		}
		return r.src.RemoveMember(ctx, r.cfg.Group, r.cfg.Subject)
	}
	return []permission{
		{give: rest.OpGrant, undo: rest.OpRevoke, run: principal, needsDoc: true},
		{give: rest.OpGrantGroup, undo: rest.OpRevokeGroup, run: group, needsDoc: true, needsGroup: true},
		{give: rest.OpAddToGroup, undo: rest.OpRemoveFromGroup, run: member, needsGroup: true},
	}
}

// permissions gives and takes back each declared access: the persona's
// grant, the group's grant, the persona's group membership.
func (r *restRunner) permissions(ctx context.Context) {
	for _, p := range r.permissionOps() {
		giveOK, undoOK := r.src.Declared(p.give), r.src.Declared(p.undo)
		if !giveOK || !undoOK {
			r.unpaired(p.give, giveOK, p.undo)
			r.unpaired(p.undo, undoOK, p.give)
			continue
		}
		switch {
		case p.needsDoc && !r.created:
			r.skip(p.give, "createDocument failed")
			r.skip(p.undo, "createDocument failed")
			continue
		case p.needsGroup && r.cfg.Group == "":
			r.skip(p.give, "no group given (--group, or a Persona with spec.groups)")
			r.skip(p.undo, "no group given (--group, or a Persona with spec.groups)")
			continue
		}
		r.pending[p.undo] = true
		if err := p.run(ctx, p.give); err != nil {
			r.fail(p.give, err)
			r.skip(p.undo, p.give+" failed")
			continue
		}
		r.pass(p.give, "")
		if err := p.run(ctx, p.undo); err != nil {
			r.fail(p.undo, err)
			continue
		}
		delete(r.pending, p.undo)
		r.pass(p.undo, "")
	}
}

// unpaired lists an operation whose partner is not declared: it is not
// run, since nothing would take back what it gives.
func (r *restRunner) unpaired(op string, declared bool, partner string) {
	if !declared {
		r.skip(op, notDeclared)
		return
	}
	r.skip(op, "declared without "+partner+", so not run")
}

// update writes the document again: the driver runs updateContent for a
// document it created.
func (r *restRunner) update(ctx context.Context) {
	if !r.declared(rest.OpUpdateContent) {
		return
	}
	if !r.created {
		r.skip(rest.OpUpdateContent, "createDocument failed")
		return
	}
	if err := r.src.CreateDocument(ctx, r.document("updated")); err != nil {
		r.fail(rest.OpUpdateContent, err)
		return
	}
	r.pass(rest.OpUpdateContent, "")
}

// delete removes the document and, when lookupDocument is declared,
// checks it is gone.
func (r *restRunner) delete(ctx context.Context) {
	if !r.created {
		r.skip(rest.OpDeleteDocument, "createDocument failed (cleanup removes what it made)")
		return
	}
	if err := r.src.DeleteDocument(ctx, r.docID); err != nil {
		r.fail(rest.OpDeleteDocument, err)
		return
	}
	delete(r.pending, rest.OpDeleteDocument)
	r.pass(rest.OpDeleteDocument, "")
	if !r.src.Declared(rest.OpLookupDocument) {
		return
	}
	if err := r.awaitGone(ctx); err != nil {
		r.fail(CheckLookupDeleted, err)
		return
	}
	r.pass(CheckLookupDeleted, "the deleted document is not found")
}

// awaitGone looks the deleted document up until it is not found. An error
// is never "not found": the last one is reported if the wait ends.
func (r *restRunner) awaitGone(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, r.cfg.Timeout)
	defer cancel()
	var lastErr error
	for {
		found, err := r.src.Lookup(ctx, r.docID)
		switch {
		case err == nil && !found:
			return nil
		case driver.IsUnauthorized(err):
			return err
		case err != nil && ctx.Err() == nil:
			lastErr = err
		}
		if !wait(ctx, r.cfg.PollInterval) {
			msg := fmt.Sprintf("the deleted document was still found within %v", r.cfg.Timeout)
			if lastErr != nil {
				msg = fmt.Sprintf("the deleted document was not reported gone within %v (last error: %v)", r.cfg.Timeout, lastErr)
			}
			return errors.New(msg)
		}
	}
}

// undo runs the pending undo steps among ops, best effort and with its
// own deadline, noting what each removed or could not.
func (r *restRunner) undo(ctx context.Context, ops ...string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	for _, p := range r.permissionOps() {
		if slices.Contains(ops, p.undo) && r.pending[p.undo] {
			r.note(r.undoneWhat(p.undo), p.run(ctx, p.undo))
			delete(r.pending, p.undo)
		}
	}
	if slices.Contains(ops, rest.OpDeleteDocument) && r.pending[rest.OpDeleteDocument] {
		what, err := r.deleteLeftover(ctx)
		r.note(what, err)
		delete(r.pending, rest.OpDeleteDocument)
	}
}

func (r *restRunner) note(what string, err error) {
	if err == nil || isNotFound(err) {
		r.removed = append(r.removed, what)
		return
	}
	r.remain = append(r.remain, fmt.Sprintf("%s (%s)", what, detailOf(err)))
}

// cleanup removes what failed checks left (the membership, then the
// document) and reports, when there was anything to undo, what was
// removed or what may remain.
func (r *restRunner) cleanup(ctx context.Context) {
	r.undo(ctx, rest.OpRemoveFromGroup, rest.OpDeleteDocument)
	switch {
	case len(r.remain) > 0:
		r.report.Results = append(r.report.Results, Result{Name: CheckCleanup, Status: Fail,
			Detail: "may remain at the source: " + strings.Join(r.remain, "; ")})
	case len(r.removed) > 0:
		r.pass(CheckCleanup, "removed what the failed checks left: "+strings.Join(r.removed, ", "))
	}
}

func (r *restRunner) undoneWhat(op string) string {
	switch op {
	case rest.OpRevoke:
		return fmt.Sprintf("the grant to %q", r.cfg.Subject)
	case rest.OpRevokeGroup:
		return fmt.Sprintf("the grant to group %q", r.cfg.Group)
	default:
		return fmt.Sprintf("%q's membership of group %q", r.cfg.Subject, r.cfg.Group)
	}
}

// deleteLeftover deletes the test document, saying what it removed. When
// createDocument failed part-way its captures are lost: lookupDocument,
// when declared, finds the document by its name first.
func (r *restRunner) deleteLeftover(ctx context.Context) (string, error) {
	what := fmt.Sprintf("the test document %q", r.docID)
	if !r.created && r.src.Declared(rest.OpLookupDocument) {
		found, err := r.src.Lookup(ctx, r.docID)
		if err != nil {
			return what, fmt.Errorf("createDocument failed and lookupDocument could not look for what it made: %w", err)
		}
		if !found {
			return "nothing (lookupDocument does not find the test document)", nil
		}
		what += " (found with lookupDocument)"
	}
	err := r.src.DeleteDocument(ctx, r.docID)
	var missing *rest.MissingCapture
	if errors.As(err, &missing) {
		return what, fmt.Errorf("%w; declare lookupDocument so a document whose captures were lost is found again", err)
	}
	return what, err
}

// isNotFound: the source answered 404, the thing is not there.
func isNotFound(err error) bool {
	var de *driver.Error
	return errors.As(err, &de) && de.Kind == driver.Permanent && de.StatusCode == http.StatusNotFound
}

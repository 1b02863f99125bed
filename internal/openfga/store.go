package openfga

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/ragcanary/ragcanary/internal/driver"
	httpdriver "github.com/ragcanary/ragcanary/internal/driver/http"
)

// Store listing bounds. A lookup asks for OpenFGA's largest page and reads
// at most maxStorePages of them, maxStoreListBytes of reply over all of
// them: 10,000 stores, more than any real server a canary shares, in about
// 200 bytes a store. Past either bound, or on a page longer than asked
// for, the lookup stops with an error telling the user to give the ID: a
// server whose list never ends would otherwise hold a shared worker for
// hundreds of pages of 8 MiB each.
const (
	storePageSize     = 100
	maxStorePages     = 100
	maxStoreListBytes = 1 << 20
)

// ResolveStore returns the store's ID: StoreID as given, or the ID of the
// one store named StoreName. No such store, several, or a list too long to
// read within the bounds is a *SchemaProblem saying so. A resolved ID is
// remembered for every later call; a failure is not.
func (c *Client) ResolveStore(ctx context.Context) (string, error) {
	c.mu.Lock()
	resolved := c.resolved
	c.mu.Unlock()
	if resolved != "" {
		return resolved, nil
	}
	id := c.storeID
	if id == "" {
		ctx, cancel := c.bounded(ctx)
		defer cancel()
		var err error
		if id, err = c.storeNamed(ctx, c.storeName); err != nil {
			return "", err
		}
	}
	c.mu.Lock()
	c.resolved = id
	c.mu.Unlock()
	return id, nil
}

// UseStore makes every later call of the client go to the store id, which
// a name resolved to earlier (a run pins it): no lookup is made again, so a
// name pointed at another store since is not followed. An id that is not
// an OpenFGA ID is refused.
func (c *Client) UseStore(id string) error {
	if !ulid.MatchString(id) {
		return errors.New("openfga: the pinned store ID is not an OpenFGA ID (a ULID)")
	}
	c.mu.Lock()
	c.resolved = id
	c.mu.Unlock()
	return nil
}

// storeNamed pages through the stores for the one named name, within the
// listing bounds. Deleted stores are not listed by OpenFGA; the check for
// them is belt and braces.
func (c *Client) storeNamed(ctx context.Context, name string) (string, error) {
	meter := &listMeter{remaining: maxStoreListBytes, budget: c.replies}
	defer meter.release()
	ctx = context.WithValue(ctx, listMeterKey{}, meter)
	var ids []string
	token := ""
	for page := range maxStorePages {
		req := c.api.OpenFgaApi.ListStores(ctx).PageSize(storePageSize)
		if token != "" {
			req = req.ContinuationToken(token)
		}
		resp, httpResp, err := req.Execute()
		switch {
		case meter.over:
			return "", listTooLong(page+1, maxStoreListBytes-meter.remaining)
		case err != nil:
			return "", classify("ListStores", httpResp, err)
		case len(resp.Stores) > storePageSize:
			return "", driver.NewError(driver.Transient, "ListStores", 0, reasonMalformed,
				fmt.Errorf("a page of %d stores, %d asked for", len(resp.Stores), storePageSize))
		}
		for _, s := range resp.Stores {
			if s.Name == name && s.DeletedAt == nil {
				ids = append(ids, s.Id)
			}
		}
		if resp.ContinuationToken == "" {
			return oneStore(name, ids)
		}
		if resp.ContinuationToken == token {
			return "", driver.NewError(driver.Transient, "ListStores", 0, reasonMalformed,
				errors.New("the continuation token did not advance"))
		}
		token = resp.ContinuationToken
	}
	return "", listTooLong(maxStorePages, maxStoreListBytes-meter.remaining)
}

// listTooLong is the problem of a store list that did not end within the
// bounds; it never says the store is absent, as only part was read.
func listTooLong(pages int, read int64) error {
	return &SchemaProblem{Message: fmt.Sprintf(
		"OpenFGA's store list did not end within %d pages or %d KiB (stopped after %d pages and %d KiB), so the store name cannot be resolved; "+
			"set the store ID instead of the name", maxStorePages, maxStoreListBytes>>10, pages, read>>10)}
}

func oneStore(name string, ids []string) (string, error) {
	switch len(ids) {
	case 0:
		return "", &SchemaProblem{Message: fmt.Sprintf("no OpenFGA store is named %q", name)}
	case 1:
		if !ulid.MatchString(ids[0]) {
			return "", driver.NewError(driver.Transient, "ListStores", 0, reasonMalformed, nil)
		}
		return ids[0], nil
	default:
		return "", &SchemaProblem{Message: fmt.Sprintf(
			"%d OpenFGA stores are named %q; set the store ID instead of the name", len(ids), name)}
	}
}

// store is ResolveStore for a driver operation: a store that cannot be
// resolved is a permanent failure of op, its message safe to show.
func (c *Client) store(ctx context.Context, op string) (string, error) {
	id, err := c.ResolveStore(ctx)
	var sp *SchemaProblem
	if errors.As(err, &sp) {
		return "", driver.NewError(driver.Permanent, op, 0, sp.Message, sp)
	}
	return id, err
}

// listMeter counts the reply bytes of one store lookup over all its pages.
// What it counts is also held from the corpus's reply budget until the
// lookup ends. A lookup's pages are read one after another by the lookup's
// own goroutine.
type listMeter struct {
	remaining int64
	budget    httpdriver.ReplyBudget
	held      int64
	// over is set once the lookup read past its bound.
	over bool
}

type listMeterKey struct{}

// charge counts n bytes just read: false when they pass the lookup's bound
// (over is then set) or the reply budget has no room for them.
func (m *listMeter) charge(n int64) error {
	m.remaining -= n
	if m.remaining < 0 {
		m.over = true
		return httpdriver.ErrTooLarge
	}
	if m.budget != nil && n > 0 {
		if !m.budget.TryAcquire(n) {
			return httpdriver.ErrBudgetExhausted
		}
		m.held += n
	}
	return nil
}

// release returns what the lookup held of the reply budget.
func (m *listMeter) release() {
	if m.budget != nil && m.held > 0 {
		m.budget.Release(m.held)
	}
	m.held = 0
}

// metered makes resp's body count against the lookup's meter; a declared
// length past what is left fails before anything is read.
func (m *listMeter) metered(resp *http.Response) error {
	if resp.ContentLength > m.remaining {
		_ = resp.Body.Close()
		m.over = true
		return httpdriver.ErrTooLarge
	}
	resp.Body = &meteredBody{ReadCloser: resp.Body, meter: m}
	return nil
}

type meteredBody struct {
	io.ReadCloser
	meter *listMeter
}

func (b *meteredBody) Read(p []byte) (int, error) {
	// One byte past what is left tells a body that ends exactly at the
	// bound from one that goes on.
	if int64(len(p)) > b.meter.remaining+1 {
		p = p[:max(b.meter.remaining+1, 0)]
	}
	n, err := b.ReadCloser.Read(p)
	if cerr := b.meter.charge(int64(n)); cerr != nil {
		return 0, cerr
	}
	return n, err
}

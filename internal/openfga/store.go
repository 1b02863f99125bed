package openfga

import (
	"context"
	"errors"
	"fmt"

	"github.com/ragcanary/ragcanary/internal/driver"
)

// Store listing bounds: OpenFGA's largest page, and enough pages for any
// real server; past them a name is too costly to resolve and the user
// should give the ID.
const (
	storePageSize = 100
	maxStorePages = 100
)

// ResolveStore returns the store's ID: StoreID as given, or the ID of the
// one store named StoreName. No such store, or several, is a
// *SchemaProblem saying so. A resolved ID is remembered for every later
// call; a failure is not.
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

// storeNamed pages through every store for the one named name. Deleted
// stores are not listed by OpenFGA; the check for them is belt and braces.
func (c *Client) storeNamed(ctx context.Context, name string) (string, error) {
	var ids []string
	token := ""
	for range maxStorePages {
		req := c.api.OpenFgaApi.ListStores(ctx).PageSize(storePageSize)
		if token != "" {
			req = req.ContinuationToken(token)
		}
		resp, httpResp, err := req.Execute()
		if err != nil {
			return "", classify("ListStores", httpResp, err)
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
	return "", &SchemaProblem{Message: fmt.Sprintf(
		"OpenFGA lists more than %d stores; set the store ID instead of the name", storePageSize*maxStorePages)}
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

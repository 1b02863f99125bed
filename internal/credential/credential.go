// Package credential gives a persona's credential at the moment a probe
// sends it: a static key, or an OAuth2 access token replaced before it
// expires. Enterprise assistants accept short-lived tokens rather than
// keys, and a run outlives many of them, so the token a probe sends is
// taken when the probe goes out, not when the run began.
package credential

import (
	"context"

	"github.com/ragcanary/ragcanary/internal/driver"
)

// Source is a persona's credential as of now.
type Source interface {
	Token(ctx context.Context) (driver.Token, error)
}

// Static is a key that does not change.
type Static driver.Token

// Token returns the key.
func (s Static) Token(context.Context) (driver.Token, error) { return driver.Token(s), nil }

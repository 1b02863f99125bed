package target

import (
	"errors"
	"testing"
	"time"

	authzed "github.com/authzed/authzed-go/v1"
	"google.golang.org/grpc"
)

// closed reports whether cl was already closed: grpc refuses a second Close.
// It closes cl if it was not, so call it once per client, last.
func closed(cl *authzed.Client) bool { return errors.Is(cl.Close(), grpc.ErrClientConnClosing) }

func TestSpiceDBClientsCloseWhatNobodyAskedForOrUsedInTheIdleTime(t *testing.T) {
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	c := newClients(func() time.Time { return now }, 30*time.Minute)
	get := func(key string) (*authzed.Client, func()) {
		t.Helper()
		// Dialling is lazy: nothing listens on the endpoint, nothing is sent.
		cl, inUse, err := c.get("127.0.0.1:1", []byte(key), true)
		if err != nil {
			t.Fatal(err)
		}
		return cl, inUse
	}

	old, _ := get("old-key")
	other, _ := get("tenant-b")
	planter, inUse := get("long-plant") // got once, then only used
	if again, _ := get("old-key"); again != old {
		t.Fatal("a second get with the same endpoint and key dialled again")
	}
	// tenant-b keeps being asked for, long-plant keeps being used, and
	// old-key was rotated away 20 minutes in.
	now = now.Add(20 * time.Minute)
	rotated, _ := get("new-key")
	if cl, _ := get("tenant-b"); cl != other {
		t.Fatal("a client asked for within the idle time was replaced")
	}
	inUse()
	now = now.Add(11 * time.Minute) // old-key last asked for 31 minutes ago
	if cl, _ := get("new-key"); cl != rotated {
		t.Fatal("the rotated key's client was replaced")
	}
	if len(c.m) != 3 {
		t.Errorf("the cache holds %d clients, want 3 (tenant-b, long-plant and new-key)", len(c.m))
	}
	if !closed(old) {
		t.Error("the client of the rotated-away key was not closed after 30 idle minutes")
	}
	if closed(other) || closed(rotated) || closed(planter) {
		t.Error("a client asked for or used within the idle time was closed")
	}
}

package schedule

import (
	"crypto/sha256"
	"encoding/binary"
	"time"
)

// Jitter is the delay, in whole seconds in [0, maxJitter), added to the run
// scheduled at scheduled for the object identified by key (its UID). It is
// a hash, not a random draw, so every reconcile of the same scheduled time
// computes the same due time and the same requeue: a retry never moves a
// run. Different objects on one schedule spread over the jitter window.
func Jitter(key string, scheduled time.Time, maxJitter time.Duration) time.Duration {
	seconds := int64(maxJitter / time.Second)
	if seconds <= 0 {
		return 0
	}
	var buf [8]byte
	binary.BigEndian.PutUint64(buf[:], uint64(scheduled.Unix()))
	h := sha256.New()
	h.Write([]byte(key))
	h.Write([]byte{0}) // separates key from time so no two inputs concatenate alike
	h.Write(buf[:])
	sum := h.Sum(nil)
	return time.Duration(binary.BigEndian.Uint64(sum[:8])%uint64(seconds)) * time.Second
}

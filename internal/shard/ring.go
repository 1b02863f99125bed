package shard

import "hash/fnv"

// Assign picks the replica that owns key by rendezvous (highest random
// weight) hashing: every replica scores the key and the highest wins. A
// replica joining takes about 1/n of the keys, only from the others, and
// one leaving gives away only its own, so moves (each a drain) are as few
// as they can be. Keys are "namespace/name" of the canary or suite: its
// runs follow it, and a re-created object of the same name lands where its
// old series were. Assign returns "" for no replicas.
func Assign(key string, replicas []string) string {
	var best string
	var bestScore uint64
	for _, r := range replicas {
		s := score(r, key)
		if best == "" || s > bestScore || (s == bestScore && r < best) {
			best, bestScore = r, s
		}
	}
	return best
}

// score is a 64-bit hash of the pair, FNV-1a with a final mix: FNV alone
// spreads keys that differ in their last bytes poorly.
func score(replica, key string) uint64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(replica))
	_, _ = h.Write([]byte{0})
	_, _ = h.Write([]byte(key))
	return mix(h.Sum64())
}

// mix is the splitmix64 finalizer.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

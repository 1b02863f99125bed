package scoring

// set builds a membership set from a list.
func set(ids []string) map[string]bool {
	s := make(map[string]bool, len(ids))
	for _, id := range ids {
		s[id] = true
	}
	return s
}

// distinct returns ids without repeats, keeping first occurrences in order.
func distinct(ids []string) []string {
	seen := make(map[string]bool, len(ids))
	out := make([]string, 0, len(ids))
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out
}

func nonNilList[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

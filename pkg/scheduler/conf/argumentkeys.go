package conf

import "strings"

// ArgumentKeys are the argument keys one plugin reads, declared by the plugin next to the
// code that reads them. An entry ending in "*" stands for every key that starts with what
// comes before the "*" (binpack.resources.<resource>).
type ArgumentKeys []string

// Has reports whether key is one of k.
func (k ArgumentKeys) Has(key string) bool {
	for _, known := range k {
		if stem, ok := strings.CutSuffix(known, "*"); ok {
			if strings.HasPrefix(key, stem) {
				return true
			}
		} else if key == known {
			return true
		}
	}
	return false
}

// Nearest returns the entry of k closest to key, by edit distance ignoring case, and
// whether it is close enough to be what was meant: at most a third of its length away (at
// least 2 edits), so that a typo or a wrong case is named and an unrelated key is not.
func (k ArgumentKeys) Nearest(key string) (string, bool) {
	best, bestDistance := "", -1
	for _, known := range k {
		target, compared := known, key
		if stem, ok := strings.CutSuffix(known, "*"); ok {
			// Compare the part of key that would be the stem.
			target, compared = stem, key[:min(len(key), len(stem))]
		}
		if d := editDistance(strings.ToLower(compared), strings.ToLower(target)); bestDistance < 0 || d < bestDistance {
			best, bestDistance = known, d
		}
	}
	if bestDistance < 0 || bestDistance > max(2, len(strings.TrimSuffix(best, "*"))/3) {
		return "", false
	}
	return best, true
}

// editDistance is the Levenshtein distance between a and b, in bytes.
func editDistance(a, b string) int {
	previous := make([]int, len(b)+1)
	current := make([]int, len(b)+1)
	for j := range previous {
		previous[j] = j
	}
	for i := 1; i <= len(a); i++ {
		current[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			current[j] = min(previous[j]+1, current[j-1]+1, previous[j-1]+cost)
		}
		previous, current = current, previous
	}
	return previous[len(b)]
}

// ArgumentKeyLister is optionally implemented by a KnownNames: loading a configuration then
// reports every plugin argument the plugin does not read (SkippedArgument).
type ArgumentKeyLister interface {
	// PluginArgumentKeys returns the keys plugin reads, and false when the plugin declared
	// none, in which case its arguments are not checked.
	PluginArgumentKeys(plugin string) (ArgumentKeys, bool)
}

package conf

import (
	"fmt"
	"sort"
	"strings"
)

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
// warns about every plugin argument the plugin does not read (UnknownArgument).
type ArgumentKeyLister interface {
	// PluginArgumentKeys returns the keys plugin reads, and false when the plugin declared
	// none, in which case its arguments are not checked.
	PluginArgumentKeys(plugin string) (ArgumentKeys, bool)
}

// UnknownArgument is a plugin argument the plugin does not read. It is a warning, not an
// error: upstream Volcano ignores such keys too, and a file written for another scheduler
// version must still load. It is usually a typo, which Nearest names.
type UnknownArgument struct {
	Where   string // e.g. "tiers[1].plugins[6]"
	Plugin  string
	Key     string
	Nearest string // the known key closest to Key; empty when none is close
	// None: the plugin reads no arguments at all.
	None bool
}

func (u *UnknownArgument) Error() string {
	switch {
	case u.None:
		return fmt.Sprintf("%s: plugin %s reads no arguments; %q is ignored", u.Where, u.Plugin, u.Key)
	case u.Nearest != "":
		return fmt.Sprintf("%s: plugin %s has no argument %q, ignoring it; did you mean %q?", u.Where, u.Plugin, u.Key, u.Nearest)
	}
	return fmt.Sprintf("%s: plugin %s has no argument %q, ignoring it", u.Where, u.Plugin, u.Key)
}

// UnknownArguments lists the plugin arguments of cfg that their plugins do not read, in
// file order and by key within a plugin. It needs names to implement ArgumentKeyLister;
// otherwise, and for plugins that declared no keys, nothing is reported.
func UnknownArguments(cfg *SchedulerConfiguration, names KnownNames) []*UnknownArgument {
	lister, ok := names.(ArgumentKeyLister)
	if !ok || cfg == nil {
		return nil
	}
	var unknown []*UnknownArgument
	for t, tier := range cfg.Tiers {
		for p, plugin := range tier.Plugins {
			known, declared := lister.PluginArgumentKeys(plugin.Name)
			if !declared {
				continue
			}
			keys := make([]string, 0, len(plugin.Arguments))
			for key := range plugin.Arguments {
				if !known.Has(key) {
					keys = append(keys, key)
				}
			}
			sort.Strings(keys)
			for _, key := range keys {
				u := &UnknownArgument{Where: fmt.Sprintf("tiers[%d].plugins[%d]", t, p), Plugin: plugin.Name, Key: key,
					None: len(known) == 0}
				u.Nearest, _ = known.Nearest(key)
				unknown = append(unknown, u)
			}
		}
	}
	return unknown
}

package conf

import (
	"fmt"
	"maps"
	"slices"
)

// SkipKind says what part of a configuration file was not applied.
type SkipKind string

const (
	// SkippedAction: an action the scheduler does not have (in actions or configurations),
	// or one that the actions list already runs under another of its names.
	SkippedAction SkipKind = "action"
	// SkippedPlugin: a plugin entry the scheduler does not have, or one without a name.
	SkippedPlugin SkipKind = "plugin"
	// SkippedArgument: a plugin argument the plugin does not read, or reads without acting on it.
	SkippedArgument SkipKind = "argument"
	// SkippedValue: a plugin argument whose value the plugin refuses; its default applies.
	SkippedValue SkipKind = "argument-value"
	// SkippedSetting: a plugin entry's mode the plugin does not implement (enableHierarchy).
	SkippedSetting SkipKind = "setting"
)

// Skipped is one part of a configuration file that the scheduler does not apply while it
// applies the rest. Upstream Volcano skips an action or plugin it does not know with a log
// line; a file written for it (or for a newer release) must load here the same way, because
// rejecting the whole file would also drop the deviceshare entry it carries, and every vGPU
// pod with it. Each Skipped is reported where an operator looks (log, Event, metric, status).
type Skipped struct {
	Kind  SkipKind
	Where string // e.g. "actions", "tiers[1].plugins[3]", "configurations[0]"
	Name  string // the action or plugin as written
	Key   string // the argument or setting, for the argument and setting kinds
	// Reason says why it is skipped and, for names Volcano has, what it would have done.
	Reason string
}

// Label is the name the metric and the status show: the action or plugin, or
// "plugin/argument" for the argument and setting kinds.
func (s *Skipped) Label() string {
	if s.Key == "" {
		return s.Name
	}
	return s.Name + "/" + s.Key
}

func (s *Skipped) Error() string {
	switch s.Kind {
	case SkippedArgument:
		return fmt.Sprintf("%s: plugin %s: argument %q is ignored: %s", s.Where, s.Name, s.Key, s.Reason)
	case SkippedValue:
		return fmt.Sprintf("%s: plugin %s: %s", s.Where, s.Name, s.Reason)
	case SkippedSetting:
		return fmt.Sprintf("%s: plugin %s: %s is ignored: %s", s.Where, s.Name, s.Key, s.Reason)
	}
	name := fmt.Sprintf("%q", s.Name)
	if s.Name == "" {
		name = "without a name"
	}
	return fmt.Sprintf("%s: %s %s is skipped: %s", s.Where, s.Kind, name, s.Reason)
}

// UpstreamNames is optionally implemented by a KnownNames: it says what each action or plugin
// of upstream Volcano that the scheduler lacks would have done, so that the warning tells the
// operator what is not enforced, and so that a name close to one of them is pointed to it.
type UpstreamNames interface {
	// Upstream maps each such action (kind SkippedAction) or plugin (SkippedPlugin) to what
	// it does in Volcano. Read only.
	Upstream(kind SkipKind) map[string]string
}

// NameLister is optionally implemented by a KnownNames: an unknown name then gets the nearest
// registered one as a suggestion.
type NameLister interface {
	ActionNames() []string
	PluginNames() []string
}

// PluginModes is optionally implemented by a KnownNames: what a plugin makes of its entry's
// enableHierarchy, and which upstream arguments it accepts without acting on them.
type PluginModes interface {
	// HonoursHierarchy reports whether the plugin implements enableHierarchy.
	HonoursHierarchy(plugin string) bool
	// IgnoredArgument says why the plugin, which accepts key (so that a file written for
	// upstream loads and a malformed value is still reported), does not act on it; false
	// for a key it acts on.
	IgnoredArgument(plugin, key string) (string, bool)
}

// unknownNameReason is the Reason of a skipped action or plugin. It says what the name is in
// Volcano: one of its actions or plugins that this scheduler lacks, or no name Volcano has
// either (which Volcano skips too), then with the nearest name either has.
func unknownNameReason(kind SkipKind, name string, names KnownNames) string {
	var upstream map[string]string
	if u, ok := names.(UpstreamNames); ok {
		upstream = u.Upstream(kind)
	}
	if what, ok := upstream[name]; ok {
		return "not implemented by this scheduler; in Volcano it " + what
	}
	reason := fmt.Sprintf("no %s of this name in this scheduler or in Volcano", kind)
	// The scheduler's own names first: they win a tie.
	var candidates ArgumentKeys
	if lister, ok := names.(NameLister); ok {
		candidates = lister.PluginNames()
		if kind == SkippedAction {
			candidates = lister.ActionNames()
		}
	}
	candidates = append(candidates, slices.Sorted(maps.Keys(upstream))...)
	nearest, close := candidates.Nearest(name)
	switch _, lacking := upstream[nearest]; {
	case !close:
	case lacking:
		reason += fmt.Sprintf("; did you mean %q, a Volcano %s this scheduler does not implement yet?", nearest, kind)
	default:
		reason += fmt.Sprintf("; did you mean %q?", nearest)
	}
	return reason
}

// SkippedLabels are skipped's entries as "kind name" lines, for tests and the status page.
func SkippedLabels(skipped []*Skipped) []string {
	lines := make([]string, len(skipped))
	for i, s := range skipped {
		lines[i] = string(s.Kind) + " " + s.Label()
	}
	return lines
}

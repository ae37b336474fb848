package conf

import (
	"errors"
	"fmt"
)

// KnownNames tells validation which action and plugin names exist. The
// framework implements it from its registries; conf keeps no list of its own.
type KnownNames interface {
	IsAction(name string) bool
	IsPlugin(name string) bool
}

// ArgumentChecker is optionally implemented by a KnownNames: Validate then
// asks it whether each plugin accepts its arguments, so a malformed argument
// rejects the file (and the last good configuration stays) instead of
// failing every scheduling cycle.
type ArgumentChecker interface {
	CheckPluginArguments(plugin string, args Arguments) error
}

// NameSet is a KnownNames backed by two fixed sets, for callers (and tests)
// that have plain lists.
type NameSet struct {
	actions map[string]struct{}
	plugins map[string]struct{}
}

// NewNameSet builds a NameSet from the registered action and plugin names.
func NewNameSet(actions, plugins []string) NameSet {
	set := NameSet{
		actions: make(map[string]struct{}, len(actions)),
		plugins: make(map[string]struct{}, len(plugins)),
	}
	for _, name := range actions {
		set.actions[name] = struct{}{}
	}
	for _, name := range plugins {
		set.plugins[name] = struct{}{}
	}
	return set
}

// IsAction reports whether name is a registered action.
func (s NameSet) IsAction(name string) bool { _, ok := s.actions[name]; return ok }

// IsPlugin reports whether name is a registered plugin.
func (s NameSet) IsPlugin(name string) bool { _, ok := s.plugins[name]; return ok }

// UnknownNameError reports an action or plugin name the scheduler does not
// have, and where in the file it was written.
type UnknownNameError struct {
	Kind  string // "action" or "plugin"
	Name  string // the name as written (trimmed)
	Where string // e.g. `actions`, `tiers[1].plugins[0]`, `configurations[0]`
}

func (e *UnknownNameError) Error() string {
	return fmt.Sprintf("%s: unknown %s %q", e.Where, e.Kind, e.Name)
}

// ErrNoActions is returned for a configuration whose actions list is empty: a
// scheduler with nothing to do would leave every pod Pending without a word.
var ErrNoActions = errors.New("actions: no action configured")

// Plugin names that take part in the one cross-plugin rule below. conf names
// them only for that rule; it does not decide which plugins exist.
const (
	pluginDRF        = "drf"
	pluginProportion = "proportion"
)

// Validate checks cfg against the registered names and returns every problem
// found, joined (errors.Join), or nil. Problems: no actions; an unknown action
// in actions or configurations; a plugin entry without a name or with an
// unknown name; arguments an ArgumentChecker refuses; drf with enableHierarchy together with proportion, which both
// try to own queue shares (upstream rejects the pair as well).
func Validate(cfg *SchedulerConfiguration, names KnownNames) error {
	var problems []error

	actions := cfg.ActionNames()
	if len(actions) == 0 {
		problems = append(problems, ErrNoActions)
	}
	for _, action := range actions {
		if !names.IsAction(action) {
			problems = append(problems, &UnknownNameError{Kind: "action", Name: action, Where: "actions"})
		}
	}

	hierarchicalDRF, proportion := false, false
	for t, tier := range cfg.Tiers {
		for p, plugin := range tier.Plugins {
			where := fmt.Sprintf("tiers[%d].plugins[%d]", t, p)
			switch {
			case plugin.Name == "":
				problems = append(problems, fmt.Errorf("%s: plugin has no name", where))
			case !names.IsPlugin(plugin.Name):
				problems = append(problems, &UnknownNameError{Kind: "plugin", Name: plugin.Name, Where: where})
			default:
				if checker, ok := names.(ArgumentChecker); ok {
					if err := checker.CheckPluginArguments(plugin.Name, plugin.Arguments); err != nil {
						problems = append(problems, fmt.Errorf("%s: plugin %s: %w", where, plugin.Name, err))
					}
				}
			}
			if plugin.Name == pluginDRF && plugin.HierarchyEnabled() {
				hierarchicalDRF = true
			}
			if plugin.Name == pluginProportion {
				proportion = true
			}
		}
	}
	if hierarchicalDRF && proportion {
		problems = append(problems, errors.New("tiers: drf with enableHierarchy: true cannot be combined with proportion"))
	}

	for i, c := range cfg.Configurations {
		where := fmt.Sprintf("configurations[%d]", i)
		switch {
		case c.Name == "":
			problems = append(problems, fmt.Errorf("%s: configuration has no action name", where))
		case !names.IsAction(c.Name):
			problems = append(problems, &UnknownNameError{Kind: "action", Name: c.Name, Where: where})
		}
	}

	return errors.Join(problems...)
}

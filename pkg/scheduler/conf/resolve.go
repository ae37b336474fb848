package conf

import (
	"errors"
	"fmt"
	"maps"
	"sort"
	"strings"
)

// KnownNames tells loading which action and plugin names exist. The framework implements it
// from its registries; conf keeps no list of its own. It may also implement ArgumentChecker,
// ArgumentKeyLister, UpstreamNames, NameLister and PluginModes, each making the report of
// what is skipped more complete.
type KnownNames interface {
	IsAction(name string) bool
	IsPlugin(name string) bool
}

// ArgumentChecker is optionally implemented by a KnownNames: Resolve then builds each plugin
// from its arguments, and an argument whose value the plugin refuses (an *ArgumentError) is
// dropped, so the plugin runs with its default for it, instead of failing every cycle.
type ArgumentChecker interface {
	CheckPluginArguments(plugin string, args Arguments) error
}

// NameSet is a KnownNames backed by two fixed sets, for callers (and tests) that have plain
// lists.
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

// ErrNoActions is returned for a configuration without one action the scheduler has: a
// scheduler with nothing to do would leave every pod Pending without a word.
var ErrNoActions = errors.New("actions: no action configured")

// Resolve returns the configuration to run from cfg: cfg less every part names cannot apply,
// each listed in skipped in file order (actions, then tiers, then configurations). Skipped:
// an action or plugin the scheduler does not have, a plugin entry without a name, an
// argument its plugin does not read or does not act on, a value its plugin refuses (the
// plugin then runs with its default there), an enableHierarchy the plugin does not
// implement.
// The only error is ErrNoActions: no action left to run. cfg is not changed.
func Resolve(cfg *SchedulerConfiguration, names KnownNames) (*SchedulerConfiguration, []*Skipped, error) {
	out := *cfg
	var skipped []*Skipped
	skippedActions := map[string]bool{}

	var actions []string
	for _, action := range cfg.ActionNames() {
		if !names.IsAction(action) {
			skippedActions[action] = true
			skipped = append(skipped, &Skipped{Kind: SkippedAction, Where: "actions", Name: action,
				Reason: unknownNameReason(SkippedAction, action, names)})
			continue
		}
		actions = append(actions, action)
	}
	if len(actions) < len(cfg.ActionNames()) {
		out.Actions = strings.Join(actions, ", ")
	}

	out.Tiers = make([]Tier, len(cfg.Tiers))
	for t, tier := range cfg.Tiers {
		out.Tiers[t].Plugins = make([]PluginOption, 0, len(tier.Plugins))
		for p := range tier.Plugins {
			where := fmt.Sprintf("tiers[%d].plugins[%d]", t, p)
			plugin, report := resolvePlugin(tier.Plugins[p], where, names)
			skipped = append(skipped, report...)
			if plugin != nil {
				out.Tiers[t].Plugins = append(out.Tiers[t].Plugins, *plugin)
			}
		}
	}

	out.Configurations = nil
	for i, c := range cfg.Configurations {
		if c.Name != "" && names.IsAction(c.Name) {
			out.Configurations = append(out.Configurations, c)
			continue
		}
		if skippedActions[c.Name] {
			continue // reported once, where the actions list names it
		}
		skipped = append(skipped, &Skipped{Kind: SkippedAction, Where: fmt.Sprintf("configurations[%d]", i), Name: c.Name,
			Reason: configurationReason(c.Name, names)})
	}

	if len(actions) == 0 {
		problems := []error{ErrNoActions}
		for _, s := range skipped {
			if s.Kind == SkippedAction {
				problems = append(problems, s)
			}
		}
		return nil, skipped, errors.Join(problems...)
	}
	return &out, skipped, nil
}

func configurationReason(name string, names KnownNames) string {
	if name == "" {
		return "a configuration entry names no action"
	}
	return unknownNameReason(SkippedAction, name, names)
}

// resolvePlugin is the entry to run (nil: none) and what of it is skipped.
func resolvePlugin(plugin PluginOption, where string, names KnownNames) (*PluginOption, []*Skipped) {
	if plugin.Name == "" || !names.IsPlugin(plugin.Name) {
		reason := "a plugin entry needs a name"
		if plugin.Name != "" {
			reason = unknownNameReason(SkippedPlugin, plugin.Name, names)
		}
		return nil, []*Skipped{{Kind: SkippedPlugin, Where: where, Name: plugin.Name, Reason: reason}}
	}
	var skipped []*Skipped
	skip := func(kind SkipKind, key, reason string) {
		skipped = append(skipped, &Skipped{Kind: kind, Where: where, Name: plugin.Name, Key: key, Reason: reason})
	}

	modes, hasModes := names.(PluginModes)
	if plugin.HierarchyEnabled() && hasModes && !modes.HonoursHierarchy(plugin.Name) {
		skip(SkippedSetting, "enableHierarchy", "not implemented by this plugin here; it runs as with flat queues")
		plugin.EnabledHierarchy = nil
	}

	keys := sortedKeys(plugin.Arguments)
	if lister, ok := names.(ArgumentKeyLister); ok {
		if known, declared := lister.PluginArgumentKeys(plugin.Name); declared {
			for _, key := range keys {
				if known.Has(key) {
					continue
				}
				reason := "the plugin does not read it"
				switch nearest, close := known.Nearest(key); {
				case len(known) == 0:
					reason = "the plugin reads no arguments"
				case close:
					reason += fmt.Sprintf("; did you mean %q?", nearest)
				}
				skip(SkippedArgument, key, reason)
			}
		}
	}
	if hasModes {
		for _, key := range keys {
			if reason, ignored := modes.IgnoredArgument(plugin.Name, key); ignored {
				skip(SkippedArgument, key, reason)
			}
		}
	}

	checker, ok := names.(ArgumentChecker)
	if !ok {
		return &plugin, skipped
	}
	// Each refused value is dropped and the plugin built again, so every bad value is
	// reported at once and the plugin keeps the arguments it can use.
	for {
		err := checker.CheckPluginArguments(plugin.Name, plugin.Arguments)
		if err == nil {
			return &plugin, skipped
		}
		var bad *ArgumentError
		switch {
		case errors.As(err, &bad) && hasKey(plugin.Arguments, bad.Key):
			skip(SkippedValue, bad.Key, err.Error()+"; the plugin's default applies")
			plugin.Arguments = maps.Clone(plugin.Arguments)
			delete(plugin.Arguments, bad.Key)
		case len(plugin.Arguments) > 0:
			// A refusal that names none of the entry's arguments.
			skip(SkippedValue, "", err.Error()+"; the plugin runs with its defaults")
			plugin.Arguments = nil
		default:
			return nil, append(skipped, &Skipped{Kind: SkippedPlugin, Where: where, Name: plugin.Name,
				Reason: "the plugin cannot be built: " + err.Error()})
		}
	}
}

func hasKey(args Arguments, key string) bool {
	_, ok := args[key]
	return ok
}

func sortedKeys(args Arguments) []string {
	keys := make([]string, 0, len(args))
	for key := range args {
		keys = append(keys, key)
	}
	sort.Strings(keys)
	return keys
}

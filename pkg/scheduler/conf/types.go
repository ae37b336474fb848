// Package conf holds the volcano-scheduler.conf file format: its types, the
// built-in default, parsing, validation and hot reload of the file.
//
// The format is upstream Volcano's, so a ConfigMap written for the stock
// vc-scheduler loads here unchanged. The package knows no action or plugin by
// its own list: callers pass the names they have registered (KnownNames), so
// the framework stays the one owner of those lists.
package conf

import "strings"

// SchedulerConfiguration is one parsed volcano-scheduler.conf.
//
// Values handed out by Parse, Load, DefaultConfiguration and Watcher.Current
// are shared between scheduling cycles: treat them as read-only.
type SchedulerConfiguration struct {
	// Actions is the comma-separated list of actions in execution order,
	// kept as written, e.g. "enqueue, allocate, backfill". ActionNames splits it.
	Actions string `json:"actions,omitempty"`
	// Tiers are the plugin tiers, in order. Session functions walk them
	// tier by tier and, inside a tier, plugin by plugin.
	Tiers []Tier `json:"tiers,omitempty"`
	// Configurations carry per-action arguments.
	Configurations []Configuration `json:"configurations,omitempty"`
	// Metrics configures the load-aware usage plugin's metrics source
	// (type, address, interval). Kept so upstream files load; unused so far.
	Metrics map[string]string `json:"metrics,omitempty"`
}

// Tier is one group of plugins. Plugins in an earlier tier decide first.
type Tier struct {
	Plugins []PluginOption `json:"plugins,omitempty"`
}

// Configuration holds the arguments of one action.
type Configuration struct {
	// Name is the action the arguments belong to, e.g. "allocate".
	Name string `json:"name,omitempty"`
	// Arguments are the action's arguments, e.g. predicateErrorCacheEnable.
	Arguments Arguments `json:"arguments,omitempty"`
}

// PluginOption is one plugin entry of a tier.
//
// Every Enabled* field except EnabledHierarchy switches one kind of session
// function of the plugin on or off. nil means "not written in the file",
// which counts as enabled: use IsEnabled to read them. EnabledHierarchy is a
// mode, not a function switch, and is off unless set: use HierarchyEnabled. The JSON names are upstream's YAML keys, including
// their mix of "enable" and "enabled" prefixes; keys match case-insensitively,
// so upstream v1.13's "EnabledClusterOrder" and later "enabledClusterOrder"
// both land in EnabledClusterOrder.
type PluginOption struct {
	// Name is the plugin's registered name, e.g. "gang".
	Name string `json:"name,omitempty"`

	EnabledJobOrder       *bool `json:"enableJobOrder,omitempty"`
	EnabledHierarchy      *bool `json:"enableHierarchy,omitempty"`
	EnabledJobReady       *bool `json:"enableJobReady,omitempty"`
	EnabledJobPipelined   *bool `json:"enableJobPipelined,omitempty"`
	EnabledTaskOrder      *bool `json:"enableTaskOrder,omitempty"`
	EnabledPreemptable    *bool `json:"enablePreemptable,omitempty"`
	EnabledReclaimable    *bool `json:"enableReclaimable,omitempty"`
	EnablePreemptive      *bool `json:"enablePreemptive,omitempty"`
	EnabledQueueOrder     *bool `json:"enableQueueOrder,omitempty"`
	EnabledClusterOrder   *bool `json:"enabledClusterOrder,omitempty"`
	EnabledPredicate      *bool `json:"enablePredicate,omitempty"`
	EnabledBestNode       *bool `json:"enableBestNode,omitempty"`
	EnabledNodeOrder      *bool `json:"enableNodeOrder,omitempty"`
	EnabledTargetJob      *bool `json:"enableTargetJob,omitempty"`
	EnabledReservedNodes  *bool `json:"enableReservedNodes,omitempty"`
	EnabledJobEnqueued    *bool `json:"enableJobEnqueued,omitempty"`
	EnabledVictim         *bool `json:"enabledVictim,omitempty"`
	EnabledJobStarving    *bool `json:"enableJobStarving,omitempty"`
	EnabledOverused       *bool `json:"enabledOverused,omitempty"`
	EnabledAllocatable    *bool `json:"enabledAllocatable,omitempty"`
	EnabledHyperNodeOrder *bool `json:"enabledHyperNodeOrder,omitempty"`

	// Flags upstream added after v1.13. Parsed so newer files load; the
	// framework decides whether it honours them.
	EnabledSubJobReady       *bool `json:"enabledSubJobReady,omitempty"`
	EnabledSubJobPipelined   *bool `json:"enabledSubJobPipelined,omitempty"`
	EnabledSubJobOrder       *bool `json:"enabledSubJobOrder,omitempty"`
	EnabledHyperNodeGradient *bool `json:"enabledHyperNodeGradient,omitempty"`

	// Arguments are handed to the plugin's constructor.
	Arguments Arguments `json:"arguments,omitempty"`
}

// IsEnabled reads an Enabled* flag of PluginOption: a flag left out of the
// file (nil) counts as enabled, as upstream does.
func IsEnabled(flag *bool) bool {
	return flag == nil || *flag
}

// HierarchyEnabled reports whether enableHierarchy: true was written for the
// plugin (drf's hierarchical shares, capacity's queue tree). Unlike the
// function switches it is off when left out.
func (p *PluginOption) HierarchyEnabled() bool {
	return p.EnabledHierarchy != nil && *p.EnabledHierarchy
}

// ActionNames splits Actions into trimmed action names, in execution order.
// Empty entries (a trailing comma, ", ,") are dropped.
func (c *SchedulerConfiguration) ActionNames() []string {
	parts := strings.Split(c.Actions, ",")
	names := parts[:0]
	for _, part := range parts {
		if name := strings.TrimSpace(part); name != "" {
			names = append(names, name)
		}
	}
	return names
}

// ActionArguments returns the arguments configured for action, or nil when
// the file has none. Reading a nil Arguments is safe and leaves defaults.
func (c *SchedulerConfiguration) ActionArguments(action string) Arguments {
	for i := range c.Configurations {
		if c.Configurations[i].Name == action {
			return c.Configurations[i].Arguments
		}
	}
	return nil
}

// HierarchyEnabled reports whether some plugin entry sets enableHierarchy. On a resolved
// configuration (Resolve drops the flag where the plugin does not implement it) that means
// the queues form a tree for this scheduler.
func (c *SchedulerConfiguration) HierarchyEnabled() bool {
	for _, tier := range c.Tiers {
		for i := range tier.Plugins {
			if tier.Plugins[i].HierarchyEnabled() {
				return true
			}
		}
	}
	return false
}

package framework

import (
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/conf"
)

// Registry holds the actions and plugins the scheduler binary provides, and what it knows of
// upstream Volcano's that it lacks. It answers every question conf asks of a configuration
// (conf.KnownNames and its optional interfaces).
type Registry struct {
	plugins map[string]PluginSpec
	actions map[string]Action
	// upstreamActions and upstreamPlugins say what Volcano's actions and plugins that this
	// binary lacks would have done.
	upstreamActions, upstreamPlugins map[string]string
	// owners are the plugins registered with a ResourceOwner, in registration order.
	owners []string
}

// PluginSpec is one plugin as the registry knows it.
type PluginSpec struct {
	Build PluginBuilder
	// Arguments are the argument keys the plugin reads, declared by the plugin package beside
	// the code that reads them; loading reports any other key. nil: not declared, not checked.
	Arguments conf.ArgumentKeys
	// Ignored are upstream argument keys among Arguments that the plugin reads (so that a
	// malformed value is still reported) without acting on them, each with why; loading
	// reports them with it.
	Ignored map[string]string
	// Hierarchy: the plugin implements enableHierarchy; loading reports it otherwise.
	Hierarchy bool
	// Component is the state the plugin keeps for the life of the scheduler, which Build
	// shares with every session; nil when it keeps none.
	Component Component
	// Owns, when set, names the resources only this plugin can place (Registry.Places).
	Owns ResourceOwner
}

// ResourceOwner is a plugin's claim on resources that only it can place: a pod requesting
// them needs what the plugin adds to its Binding (deviceshare's device assignment, without
// which the device plugin has nothing to serve), yet a node's allocatable alone would let any
// configuration bind it. A session whose configuration does not turn the plugin on refuses
// such pods (Session.PrePredicate), naming the plugin, and they stay Pending.
type ResourceOwner interface {
	// OwnedResources are the names of those resources. Asked at every session open: cheap.
	OwnedResources() []corev1.ResourceName
	// PlacesWith reports whether a configuration entry of the plugin with args places them.
	PlacesWith(args conf.Arguments) bool
}

// NewRegistry is an empty registry.
func NewRegistry() *Registry {
	return &Registry{plugins: map[string]PluginSpec{}, actions: map[string]Action{},
		upstreamActions: map[string]string{}, upstreamPlugins: map[string]string{}}
}

// RegisterPlugin adds a plugin builder under its configuration name, with no arguments
// declared (for tests; the binary registers a PluginSpec).
func (r *Registry) RegisterPlugin(name string, b PluginBuilder) {
	r.plugins[name] = PluginSpec{Build: b}
}

// Register adds a plugin under its configuration name.
func (r *Registry) Register(name string, spec PluginSpec) {
	if spec.Arguments == nil {
		spec.Arguments = conf.ArgumentKeys{}
	}
	if _, again := r.plugins[name]; !again && spec.Owns != nil {
		r.owners = append(r.owners, name)
	}
	r.plugins[name] = spec
}

// Places reports whether cfg turns the registered plugin on: some tier lists it, with
// arguments under which it places the resources it owns (ResourceOwner.PlacesWith), if any.
func (r *Registry) Places(cfg *conf.SchedulerConfiguration, plugin string) bool {
	owns := r.plugins[plugin].Owns
	for _, tier := range cfg.Tiers {
		for _, opt := range tier.Plugins {
			if opt.Name == plugin && (owns == nil || owns.PlacesWith(opt.Arguments)) {
				return true
			}
		}
	}
	return false
}

// unplaced are the resources that only a registered plugin can place and cfg does not turn
// on, each with that plugin, in registration order; nil for a configuration that turns on
// every such plugin (the usual case, which then costs the sessions nothing).
func (r *Registry) unplaced(cfg *conf.SchedulerConfiguration) []ownedResource {
	var out []ownedResource
	for _, plugin := range r.owners {
		if r.Places(cfg, plugin) {
			continue
		}
		for _, name := range r.plugins[plugin].Owns.OwnedResources() {
			out = append(out, ownedResource{name: name, plugin: plugin})
		}
	}
	return out
}

// ownedResource is a resource that only plugin can place.
type ownedResource struct {
	name   corev1.ResourceName
	plugin string
}

// DescribeUpstream records what an action or plugin of upstream Volcano that this binary
// lacks does there, for the warning of a configuration that names it.
func (r *Registry) DescribeUpstream(action bool, name, does string) {
	if action {
		r.upstreamActions[name] = does
	} else {
		r.upstreamPlugins[name] = does
	}
}

// PluginArgumentKeys implements conf.ArgumentKeyLister.
func (r *Registry) PluginArgumentKeys(plugin string) (conf.ArgumentKeys, bool) {
	spec, ok := r.plugins[plugin]
	return spec.Arguments, ok && spec.Arguments != nil
}

// IgnoredArgument implements conf.PluginModes.
func (r *Registry) IgnoredArgument(plugin, key string) (string, bool) {
	why, ok := r.plugins[plugin].Ignored[key]
	return why, ok
}

// HonoursHierarchy implements conf.PluginModes.
func (r *Registry) HonoursHierarchy(plugin string) bool { return r.plugins[plugin].Hierarchy }

// Upstream implements conf.UpstreamNames.
func (r *Registry) Upstream(kind conf.SkipKind) map[string]string {
	if kind == conf.SkippedAction {
		return r.upstreamActions
	}
	return r.upstreamPlugins
}

// RegisterAction adds an action under its name.
func (r *Registry) RegisterAction(a Action) { r.actions[a.Name()] = a }

// IsAction implements conf.KnownNames.
func (r *Registry) IsAction(name string) bool { _, ok := r.actions[name]; return ok }

// IsPlugin implements conf.KnownNames.
func (r *Registry) IsPlugin(name string) bool { _, ok := r.plugins[name]; return ok }

// Action returns a registered action.
func (r *Registry) Action(name string) (Action, bool) { a, ok := r.actions[name]; return a, ok }

// PluginNames lists the registered plugins, sorted (conf.NameLister).
func (r *Registry) PluginNames() []string { return slices.Sorted(maps.Keys(r.plugins)) }

// ActionNames lists the registered actions, sorted (conf.NameLister).
func (r *Registry) ActionNames() []string { return slices.Sorted(maps.Keys(r.actions)) }

// CheckPluginArguments implements conf.ArgumentChecker by building the plugin once.
func (r *Registry) CheckPluginArguments(plugin string, args conf.Arguments) error {
	_, err := r.plugins[plugin].Build(args)
	return err
}

// Components are the registered plugins' components, in the order of the plugins' names,
// for cmd/vc-scheduler to start, configure and collect from.
func (r *Registry) Components() []Component {
	var components []Component
	for _, name := range r.PluginNames() {
		if c := r.plugins[name].Component; c != nil {
			components = append(components, c)
		}
	}
	return components
}

// Plugin builds a registered plugin for a session.
func (r *Registry) Plugin(name string, args conf.Arguments) (Plugin, error) {
	spec, ok := r.plugins[name]
	if !ok {
		return nil, fmt.Errorf("unknown plugin %q", name)
	}
	return spec.Build(args)
}

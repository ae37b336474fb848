package framework

import (
	"fmt"
	"sort"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/conf"
)

// Registry holds the actions and plugins the scheduler binary provides.
type Registry struct {
	plugins map[string]PluginBuilder
	// argumentKeys are the argument keys of the plugins that declared them.
	argumentKeys map[string]conf.ArgumentKeys
	actions      map[string]Action
}

// NewRegistry is an empty registry.
func NewRegistry() *Registry {
	return &Registry{plugins: map[string]PluginBuilder{}, argumentKeys: map[string]conf.ArgumentKeys{}, actions: map[string]Action{}}
}

// RegisterPlugin adds a plugin builder under its configuration name. Its arguments are
// not checked by key: use RegisterPluginWithArguments for a plugin that declares its keys.
func (r *Registry) RegisterPlugin(name string, b PluginBuilder) {
	r.plugins[name] = b
	delete(r.argumentKeys, name)
}

// RegisterPluginWithArguments adds a plugin builder with the argument keys it reads
// (the plugin package declares them beside the code that reads them; an empty list means
// it reads none). Loading a configuration warns about any other key (conf.UnknownArguments).
func (r *Registry) RegisterPluginWithArguments(name string, b PluginBuilder, keys conf.ArgumentKeys) {
	r.plugins[name] = b
	if keys == nil {
		keys = conf.ArgumentKeys{}
	}
	r.argumentKeys[name] = keys
}

// PluginArgumentKeys implements conf.ArgumentKeyLister.
func (r *Registry) PluginArgumentKeys(plugin string) (conf.ArgumentKeys, bool) {
	keys, ok := r.argumentKeys[plugin]
	return keys, ok
}

// RegisterAction adds an action under its name.
func (r *Registry) RegisterAction(a Action) { r.actions[a.Name()] = a }

// IsAction implements conf.KnownNames.
func (r *Registry) IsAction(name string) bool { _, ok := r.actions[name]; return ok }

// IsPlugin implements conf.KnownNames.
func (r *Registry) IsPlugin(name string) bool { _, ok := r.plugins[name]; return ok }

// Action returns a registered action.
func (r *Registry) Action(name string) (Action, bool) { a, ok := r.actions[name]; return a, ok }

// PluginNames lists the registered plugins, sorted.
func (r *Registry) PluginNames() []string {
	names := make([]string, 0, len(r.plugins))
	for n := range r.plugins {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// CheckPluginArguments implements conf.ArgumentChecker by building the plugin once.
func (r *Registry) CheckPluginArguments(plugin string, args conf.Arguments) error {
	_, err := r.plugins[plugin](args)
	return err
}

// Plugin builds a registered plugin for a session.
func (r *Registry) Plugin(name string, args conf.Arguments) (Plugin, error) {
	b, ok := r.plugins[name]
	if !ok {
		return nil, fmt.Errorf("unknown plugin %q", name)
	}
	return b(args)
}

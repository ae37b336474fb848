// Package framework is the scheduling engine: a session per cycle over a private snapshot of
// the cluster, the plugin extension points combined tier by tier, statements that make
// tentative placements undoable, and the registry through which cmd/vc-scheduler supplies
// actions and plugins. It knows no plugin or action by name.
package framework

import "github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/conf"

// Plugin registers functions on the session when it opens and may report when it closes.
// A new instance is built for every session from the configured arguments.
type Plugin interface {
	Name() string
	OnSessionOpen(ssn *Session)
	OnSessionClose(ssn *Session)
}

// PluginBuilder makes a plugin from its arguments. An error (a malformed argument) rejects
// the configuration that carries it, so it names the argument and value.
type PluginBuilder func(args conf.Arguments) (Plugin, error)

// Action is one step of a scheduling cycle (enqueue, allocate, backfill).
type Action interface {
	Name() string
	Execute(ssn *Session)
}

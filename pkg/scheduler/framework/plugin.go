// Package framework is the scheduling engine: a session per cycle over a private snapshot of
// the cluster, the plugin extension points combined tier by tier, statements that make
// tentative placements undoable, and the registry through which cmd/vc-scheduler supplies
// actions and plugins. It knows no plugin or action by name.
//
// The contract between the engine and a plugin:
//
//   - A Plugin is built for one session, from its arguments, and OnSessionOpen registers its
//     functions there. State that outlives a session (watches, metric series) is not the
//     plugin's: it is the plugin's Component, which its registry entry owns and its builder
//     shares, and a session only reads it. The scheduler's metrics come with the session
//     (Metrics).
//   - Every extension point goes through one chain: the functions of the plugins whose tier
//     lists them, tier by tier and in configuration order, skipping a plugin whose enable
//     flag for the point is false (sessionPoints names each point's flag, if any). How a chain
//     combines its answers (first opinion, all must agree, sum, vote by tier) is said on the
//     Session method that calls it.
//   - Nothing is called concurrently. Actions run one at a time, a node search examines one
//     node at a time, and event handlers run on the goroutine that placed the task; so a
//     plugin may keep scratch state between calls (the last task seen, per-node memos)
//     without locks. Only what outlives the session must be safe for concurrent use.
//   - Functions read the session's copies of jobs, nodes and queues and change nothing but
//     their own state; a placement changes the session through a Statement, and an
//     EventHandler that books something on Allocate takes back exactly the same on
//     Deallocate.
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

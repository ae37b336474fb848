package vgpu

import (
	"fmt"
	"time"
)

// NodeLockExpiry is how old a node lock may get before the scheduler takes it over: a lock
// that old belongs to a pod that never reached its device plugin.
const NodeLockExpiry = 5 * time.Minute

// nodeLockLayout is the format of a node lock's value: the time it was taken.
const nodeLockLayout = time.RFC3339

// NodeLockValue is the value of a node lock taken at now.
func NodeLockValue(now time.Time) string { return now.Format(nodeLockLayout) }

// NodeLockHeld says whether a node lock with this value, read at now, still belongs to its
// taker: it is younger than NodeLockExpiry. A value that does not parse holds nothing, so a
// garbled lock never blocks a node.
func NodeLockHeld(value string, now time.Time) bool {
	at, err := time.Parse(nodeLockLayout, value)
	return err == nil && now.Sub(at) < NodeLockExpiry
}

// NodeLockedError is the error of a bind refused because node's lock is held.
func NodeLockedError(node string) error {
	return fmt.Errorf("node %s has been locked within %.0f minutes", node, NodeLockExpiry.Minutes())
}

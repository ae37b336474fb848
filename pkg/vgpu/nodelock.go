package vgpu

import (
	"encoding/json"
	"fmt"
	"strings"
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

// NodeLockReleasePatch is the one way either half removes a node lock: a JSON patch that
// removes it only while it still holds value, the lock its sender took or read. A lock taken
// again in between (the scheduler's next vGPU bind to the node, or one that took over an
// expired lock) stays: the API server refuses the patch as invalid, and so it does where the
// node has no lock. Sent as types.JSONPatchType.
func NodeLockReleasePatch(value string) []byte {
	path := "/metadata/annotations/" + strings.NewReplacer("~", "~0", "/", "~1").Replace(NodeLockAnnotation)
	patch, _ := json.Marshal([]map[string]string{ // strings only: cannot fail
		{"op": "test", "path": path, "value": value},
		{"op": "remove", "path": path},
	})
	return patch
}

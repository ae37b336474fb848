package api

// ClusterInfo is a snapshot of the cache: the session's private copy of the cluster.
type ClusterInfo struct {
	Jobs   map[JobID]*JobInfo
	Nodes  map[string]*NodeInfo
	Queues map[QueueID]*QueueInfo
	// NodeList is Nodes in name order, for deterministic iteration.
	NodeList []*NodeInfo
	// Generation numbers the cache's snapshots, so that what a session hands back (Released)
	// is matched with the snapshot it came from.
	Generation uint64
}

// Released is what a closed session hands back to the cache, for the next snapshot to reuse
// what the session left as it found it (framework.Cache.Release).
type Released struct {
	// Generation is that of the ClusterInfo the session was opened on.
	Generation uint64
	Jobs       map[JobID]*JobInfo
	Nodes      map[string]*NodeInfo
	// Touched names the nodes the session placed a task on, took one off or evicted one on,
	// even if it undid that: their copies may differ from what the snapshot held.
	Touched map[string]struct{}
}

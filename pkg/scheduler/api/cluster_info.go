package api

// ClusterInfo is a snapshot of the cache: the session's private copy of the cluster.
type ClusterInfo struct {
	Jobs   map[JobID]*JobInfo
	Nodes  map[string]*NodeInfo
	Queues map[QueueID]*QueueInfo
	// NodeList is Nodes in name order, for deterministic iteration.
	NodeList []*NodeInfo
}

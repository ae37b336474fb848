package nodesearch

// Options bound how far a node search goes before it settles (upstream's
// --minimum-feasible-nodes, --percentage-nodes-to-find and
// --minimum-percentage-nodes-to-find). cmd/vc-scheduler fills them from its flags.
type Options struct {
	// MinimumFeasibleNodes: a cluster this small is searched whole, and a larger one is
	// never searched for fewer feasible nodes than this.
	MinimumFeasibleNodes int
	// PercentageNodesToFind: the share of the cluster's nodes a search collects before it
	// stops scoring more; 0 adapts it to the cluster size (50% less 1% per 125 nodes).
	PercentageNodesToFind int
	// MinimumPercentageNodesToFind: the floor of the adaptive share.
	MinimumPercentageNodesToFind int
}

// DefaultOptions are the flags' defaults.
func DefaultOptions() Options {
	return Options{MinimumFeasibleNodes: 100, PercentageNodesToFind: 0, MinimumPercentageNodesToFind: 5}
}

// feasibleNodesToFind is how many feasible nodes a search over n nodes collects before it
// stops: large clusters are sampled, so that scoring stays cheap.
func (o Options) feasibleNodesToFind(n int) int {
	if n <= o.MinimumFeasibleNodes || o.PercentageNodesToFind >= 100 {
		return n
	}
	pct := o.PercentageNodesToFind
	if pct <= 0 {
		pct = max(50-n/125, o.MinimumPercentageNodesToFind)
	}
	return max(n*pct/100, o.MinimumFeasibleNodes)
}

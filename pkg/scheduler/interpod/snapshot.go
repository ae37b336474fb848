package interpod

import (
	corev1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
)

// podInfos holds, for one session, each pod's terms as kube-scheduler parses them, keyed by
// the pod object the session's tasks share. Only PreFilter reads it, one pod at a time (the
// actions place pods one by one), so it takes no lock.
type podInfos map[*corev1.Pod]fwk.PodInfo

// of returns the pod's parsed terms. A term that does not parse is left out, as
// kube-scheduler's cache leaves it out of a pod already placed (the API server does not
// validate every term); the pod being placed is parsed by InterPodAffinity itself, which
// refuses it.
func (c podInfos) of(pod *corev1.Pod) fwk.PodInfo {
	if pi, ok := c[pod]; ok {
		return pi
	}
	pi, _ := framework.NewPodInfo(pod)
	c[pod] = pi
	return pi
}

// evictedPods are the pods a session evicts: their tasks stay on their nodes, releasing, but
// the filters' counts leave them out, as upstream's scheduler takes them off its snapshot.
// Scores count them still: they only rank the nodes.
type evictedPods map[*corev1.Pod]struct{}

// nodeView is a session's node as the plugins read it: the node object, and the tasks the
// session has there (its tentative placements included, those it evicts left out), listed on
// first use and kept for later attempts until the session changes them (NodeChanged). The
// filters read nothing else; the embedded interface is left nil.
type nodeView struct {
	fwk.NodeInfo
	node    *api.NodeInfo
	pods    podInfos
	evicted evictedPods

	all, antiAffinity, scoring listedPods
}

// listedPods is one list of a node's pods, made on first use.
type listedPods struct {
	pods   []fwk.PodInfo
	listed bool
}

// of lists, the first time, the parsed terms of the node's pods that keep accepts (every pod
// when keep is nil).
func (l *listedPods) of(n *nodeView, keep func(*corev1.Pod) bool) []fwk.PodInfo {
	if !l.listed {
		l.listed = true
		if keep == nil {
			l.pods = make([]fwk.PodInfo, 0, len(n.node.Tasks))
		}
		for _, t := range n.node.Tasks {
			if _, gone := n.evicted[t.Pod]; gone {
				continue
			}
			if keep == nil || keep(t.Pod) {
				l.pods = append(l.pods, n.pods.of(t.Pod))
			}
		}
	}
	return l.pods
}

func (n *nodeView) Node() *corev1.Node { return n.node.Node }

// GetPods lists every task's pod: PodTopologySpread counts those its constraints select, and
// InterPodAffinity those the pod's own terms select.
func (n *nodeView) GetPods() []fwk.PodInfo { return n.all.of(n, nil) }

// GetPodsWithRequiredAntiAffinity lists the pods whose anti-affinity may keep the pod away.
func (n *nodeView) GetPodsWithRequiredAntiAffinity() []fwk.PodInfo {
	return n.antiAffinity.of(n, api.HasRequiredAntiAffinity)
}

// GetPodsWithAffinity lists the pods whose affinity terms score nodes for the pods they
// select (api.HasScoringTerms), which InterPodAffinity's PreScore reads for a pod without
// preferred terms of its own. kube-scheduler lists every pod with pod affinity or
// anti-affinity; those with only required anti-affinity add nothing to a score.
func (n *nodeView) GetPodsWithAffinity() []fwk.PodInfo { return n.scoring.of(n, api.HasScoringTerms) }

// views holds, for one session, the view of each node a PreFilter was given, until the
// session changes the node's tasks. PreFilter reads it, and the session's placements change
// it, one at a time (the actions place pods one by one), so it takes no lock.
type views map[*api.NodeInfo]*nodeView

// snapshot views the nodes as they are now, without the evicted pods (nil: none): a node
// whose tasks the session has not changed since it was last viewed keeps its view, and the
// pods it listed.
func (v views) snapshot(nodes []*api.NodeInfo, pods podInfos, evicted evictedPods) *snapshot {
	s := &snapshot{nodes: make([]fwk.NodeInfo, len(nodes))}
	for i, n := range nodes {
		view := v[n]
		if view == nil {
			view = &nodeView{node: n, pods: pods, evicted: evicted}
			v[n] = view
		}
		s.nodes[i] = view
	}
	return s
}

// snapshot is the nodes one PreFilter or PreScore is given, as kube-scheduler's snapshot
// lists them to the plugins: all of them, those that hold pods with required anti-affinity
// (the filters of a pod without constraints of its own are given only those) and those that
// hold pods with scoring terms (as the scores of a pod without preferred terms are). The
// embedded interface is left nil.
type snapshot struct {
	fwk.NodeInfoLister
	nodes []fwk.NodeInfo
}

func (s *snapshot) NodeInfos() fwk.NodeInfoLister { return s }

// StorageInfos is never called: neither plugin reads claims.
func (s *snapshot) StorageInfos() fwk.StorageInfoLister { return nil }

// List lists every node: PodTopologySpread's PreScore counts pods over them, and
// InterPodAffinity's over those of a pod with preferred terms.
func (s *snapshot) List() ([]fwk.NodeInfo, error) { return s.nodes, nil }

// HavePodsWithAffinityList lists the nodes that hold a pod with scoring terms.
func (s *snapshot) HavePodsWithAffinityList() ([]fwk.NodeInfo, error) {
	var out []fwk.NodeInfo
	for _, n := range s.nodes {
		if len(n.GetPodsWithAffinity()) > 0 {
			out = append(out, n)
		}
	}
	return out, nil
}

// HavePodsWithRequiredAntiAffinityList lists the nodes that hold a pod with required
// anti-affinity.
func (s *snapshot) HavePodsWithRequiredAntiAffinityList() ([]fwk.NodeInfo, error) {
	var out []fwk.NodeInfo
	for _, n := range s.nodes {
		if len(n.GetPodsWithRequiredAntiAffinity()) > 0 {
			out = append(out, n)
		}
	}
	return out, nil
}

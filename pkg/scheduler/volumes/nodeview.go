package volumes

import (
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/component-helpers/storage/ephemeral"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
)

// nodeView is a session's node as the plugins' Filter reads it. Its pods (the session's, its
// tentative placements included, so a gang's earlier pods count against an attach limit) are
// listed only when a plugin asks: NodeVolumeLimits does only for a node with CSI limits, and
// VolumeRestrictions only for a pod with an inline disk.
type nodeView struct {
	*framework.NodeInfo
	node *api.NodeInfo
	once sync.Once
	pods []fwk.PodInfo
}

func newNodeView(ni *framework.NodeInfo, node *api.NodeInfo) *nodeView {
	return &nodeView{NodeInfo: ni, node: node}
}

// nodeInfos holds, for one session, kube-scheduler's NodeInfo of each node object, without
// pods: building one parses the node's allocatable resources, too dear to do for every pod
// a node is tried for. The plugins only read it, from any number of Filters at once.
type nodeInfos struct{ m sync.Map }

func (c *nodeInfos) get(n *corev1.Node) *framework.NodeInfo {
	if ni, ok := c.m.Load(n.Name); ok && ni.(*framework.NodeInfo).Node() == n {
		return ni.(*framework.NodeInfo)
	}
	ni := framework.NewNodeInfo()
	ni.SetNode(n)
	c.m.Store(n.Name, ni)
	return ni
}

// GetPods lists the node's pods on first call.
func (n *nodeView) GetPods() []fwk.PodInfo {
	n.once.Do(func() {
		n.pods = make([]fwk.PodInfo, 0, len(n.node.Tasks))
		for _, t := range n.node.Tasks {
			if pi, err := framework.NewPodInfo(t.Pod); err == nil {
				n.pods = append(n.pods, pi)
			}
		}
	})
	return n.pods
}

// claimsInUse answers VolumeRestrictions' one question, whether a pod on the attempt's nodes
// uses a claim, as kube-scheduler's snapshot does for the pods assigned to nodes; here the
// session's tentative placements count too, so a gang's two pods cannot share a
// ReadWriteOncePod claim. The pod being placed does not count against itself.
type claimsInUse struct {
	nodes []*api.NodeInfo
	self  types.UID
}

// NodeInfos is never called: VolumeRestrictions reads only StorageInfos.
func (c claimsInUse) NodeInfos() fwk.NodeInfoLister       { return nil }
func (c claimsInUse) StorageInfos() fwk.StorageInfoLister { return c }

// IsPVCUsedByPods: key ("namespace/name") is a claim of a pod on the nodes, by a
// persistentVolumeClaim volume or as an ephemeral volume's claim.
func (c claimsInUse) IsPVCUsedByPods(key string) bool {
	ns, name, _ := strings.Cut(key, "/")
	for _, n := range c.nodes {
		for _, t := range n.Tasks {
			if t.Pod.Namespace == ns && t.Pod.UID != c.self && usesClaim(t.Pod, name) {
				return true
			}
		}
	}
	return false
}

func usesClaim(pod *corev1.Pod, name string) bool {
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		switch {
		case v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == name:
			return true
		case v.Ephemeral != nil && ephemeral.VolumeClaimName(pod, v) == name:
			return true
		}
	}
	return false
}

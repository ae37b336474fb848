// Package images scores a node by the pod's container images it already holds, with
// kube-scheduler's ImageLocality plugin (k8s.io/kubernetes/pkg/scheduler/framework/plugins/
// imagelocality): the larger the images found and the more nodes hold them, the higher, 0–100.
//
// The plugin reads each node's images as kube-scheduler's snapshot sums them up (an image's
// size and how many nodes hold it, by each of its names); here that is the nodes' status
// image lists, summed over one session's nodes the first time a pod is scored.
package images

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/imagelocality"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
)

// Locality scores one session's nodes.
type Locality struct {
	nodes []*api.NodeInfo
	// views are the nodes that list images, as the plugin reads them, built on the first
	// Score; nil until then.
	views  map[*api.NodeInfo]*nodeView
	plugin fwk.ScorePlugin
}

// New scores the session's nodes.
func New(nodes []*api.NodeInfo) *Locality { return &Locality{nodes: nodes} }

// Score is the node's image locality for the pod, 0–100. A node that lists no image scores 0
// without asking the plugin, as it would answer.
func (l *Locality) Score(pod *corev1.Pod, node *api.NodeInfo) int64 {
	if l.views == nil {
		l.index()
	}
	view := l.views[node]
	if view == nil {
		return 0
	}
	// ImageLocality keeps no cycle state, and fails only when the node list cannot be read.
	score, _ := l.plugin.Score(context.Background(), nil, pod, view)
	return score
}

// index sums up the nodes' images: for each name, the size and the number of nodes listing
// it, shared by those nodes' views, as kube-scheduler's snapshot does. Only nodes that list
// images get a view; a session whose nodes list none builds nothing more.
func (l *Locality) index() {
	summaries := map[string]*fwk.ImageStateSummary{}
	l.views = map[*api.NodeInfo]*nodeView{}
	for _, n := range l.nodes {
		if n.Node == nil || len(n.Node.Status.Images) == 0 {
			continue
		}
		view := &nodeView{node: n.Node, states: map[string]*fwk.ImageStateSummary{}}
		l.views[n] = view
		for _, image := range n.Node.Status.Images {
			for _, name := range image.Names {
				if _, ok := view.states[name]; ok {
					continue
				}
				s := summaries[name]
				if s == nil {
					s = &fwk.ImageStateSummary{Size: image.SizeBytes}
					summaries[name] = s
				}
				s.NumNodes++
				view.states[name] = s
			}
		}
	}
	if len(l.views) == 0 {
		return
	}
	// ImageLocality reads only the length of the node list: the share of nodes holding an image.
	pl, _ := imagelocality.New(context.Background(), nil, handle{lister: lister{nodes: make([]fwk.NodeInfo, len(l.nodes))}})
	l.plugin = pl.(fwk.ScorePlugin)
}

// nodeView is a node as ImageLocality reads it. The embedded interface is left nil.
type nodeView struct {
	fwk.NodeInfo
	node   *corev1.Node
	states map[string]*fwk.ImageStateSummary
}

func (v *nodeView) Node() *corev1.Node                                { return v.node }
func (v *nodeView) GetImageStates() map[string]*fwk.ImageStateSummary { return v.states }

// handle gives ImageLocality the session's nodes, the only thing it asks of kube-scheduler's
// framework. The embedded interface is left nil.
type handle struct {
	fwk.Handle
	lister lister
}

func (h handle) SnapshotSharedLister() fwk.SharedLister { return h.lister }

// lister lists the session's nodes. The embedded interface is left nil.
type lister struct {
	fwk.NodeInfoLister
	nodes []fwk.NodeInfo
}

func (l lister) NodeInfos() fwk.NodeInfoLister       { return l }
func (l lister) StorageInfos() fwk.StorageInfoLister { return nil }
func (l lister) List() ([]fwk.NodeInfo, error)       { return l.nodes, nil }

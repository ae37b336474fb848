package interpod

import (
	"context"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/util/workqueue"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/feature"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/interpodaffinity"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/podtopologyspread"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/kubestatus"
)

// Plugins are the plugins one session's configuration switches on (an api.InterPodPlugins).
type Plugins struct {
	source *Source
	checks api.InterPodChecks
	// kinds are the plugins the checks switch on, in kube-scheduler's filter order
	// (PodTopologySpread, then InterPodAffinity).
	kinds []kind
	// pods holds the pods' parsed terms for the session, built the first time a count reads
	// a pod, and views the nodes as the counts last read them; evicted are the pods the
	// session evicts, which no count reads.
	pods    podInfos
	views   views
	evicted evictedPods
	// verdicts holds one status per plugin, code and reason, shared by every node refused
	// alike (callers only read them).
	verdicts sync.Map
}

var _ api.InterPodPlugins = (*Plugins)(nil)

// filter is a plugin's PreFilter and Filter, as kube-scheduler's framework calls them.
type filter interface {
	fwk.PreFilterPlugin
	fwk.FilterPlugin
}

// state is one placement attempt of a pod: the plugins' cycle state, and the plugins that
// did not skip the pod, in kube-scheduler's filter order.
type state struct {
	cycle   *framework.CycleState
	pod     *corev1.Pod
	filters []filter
}

// ErrNotSynced is the reason a pod waits while the namespaces are listed (after a reload
// that switches pod affinity on): a term's namespaceSelector, and the namespace labels an
// existing pod's anti-affinity may select, are read from them.
const ErrNotSynced = "the scheduler has not yet listed the cluster's namespaces"

// kind is one of the plugins, as kube-scheduler builds it.
type kind struct {
	name  string
	build func(context.Context, runtime.Object, fwk.Handle, feature.Features) (fwk.Plugin, error)
	args  runtime.Object
}

var (
	// spread has no default constraints: kube-scheduler's (System) are ScheduleAnyway, which
	// only score, and would have the plugin watch Services and workload controllers.
	spread   = kind{podtopologyspread.Name, podtopologyspread.New, &config.PodTopologySpreadArgs{DefaultingType: config.ListDefaulting}}
	affinity = kind{interpodaffinity.Name, interpodaffinity.New, &config.InterPodAffinityArgs{HardPodAffinityWeight: 1}}
)

// PreFilter counts, over nodes, the pods the pod's terms and constraints select and those
// whose anti-affinity selects it. The plugins are built for each attempt: InterPodAffinity
// reads the pods that have anti-affinity from the snapshot it is built with, and the snapshot
// is the session's nodes as they are now.
func (p *Plugins) PreFilter(ctx context.Context, pod *corev1.Pod, nodes []*api.NodeInfo) (api.InterPodState, *api.Status) {
	if p.checks.Affinity && !p.source.synced() {
		return nil, &api.Status{Code: api.Unschedulable, Reasons: []string{ErrNotSynced}, Plugin: interpodaffinity.Name}
	}
	snap := p.views.snapshot(nodes, p.pods, p.evicted)
	h := handle{factory: p.source.factory, lister: snap}
	s := &state{cycle: framework.NewCycleState(), pod: pod}
	for _, k := range p.kinds {
		pl, err := k.build(ctx, k.args, h, p.source.features)
		if err != nil {
			return nil, &api.Status{Code: api.Error, Reasons: []string{err.Error()}, Plugin: k.name}
		}
		f := pl.(filter)
		_, status := f.PreFilter(ctx, s.cycle, pod, snap.nodes)
		switch {
		case status.IsSkip():
			continue
		case !status.IsSuccess():
			return nil, p.convert(status, k.name)
		}
		s.filters = append(s.filters, f)
	}
	if len(s.filters) == 0 {
		return nil, nil
	}
	return s, nil
}

// Filter says whether node takes the pod by its PreFilter's counts, which the filters look
// up by the node's labels: the view of the node lists no pod.
func (p *Plugins) Filter(ctx context.Context, is api.InterPodState, node *api.NodeInfo) *api.Status {
	s := is.(*state)
	view := &nodeView{node: node}
	for _, f := range s.filters {
		if status := f.Filter(ctx, s.cycle, s.pod, view); !status.IsSuccess() {
			return p.convert(status, f.Name())
		}
	}
	return nil
}

// NodeChanged forgets the node's view: the next PreFilter lists its pods again.
func (p *Plugins) NodeChanged(node *api.NodeInfo) { delete(p.views, node) }

// Evicted leaves the pod out of the node's view from now on, and out of the state's counts
// (each filter's RemovePod).
func (p *Plugins) Evicted(ctx context.Context, is api.InterPodState, pod *corev1.Pod, node *api.NodeInfo) *api.Status {
	p.evicted[pod] = struct{}{}
	delete(p.views, node)
	return p.recount(ctx, is, pod, node, fwk.PreFilterExtensions.RemovePod)
}

// Unevicted counts the pod in the node's view again, and in the state's counts (AddPod).
func (p *Plugins) Unevicted(ctx context.Context, is api.InterPodState, pod *corev1.Pod, node *api.NodeInfo) *api.Status {
	delete(p.evicted, pod)
	delete(p.views, node)
	return p.recount(ctx, is, pod, node, fwk.PreFilterExtensions.AddPod)
}

// change is a PreFilterExtensions method: AddPod or RemovePod.
type change func(fwk.PreFilterExtensions, context.Context, fwk.CycleState, *corev1.Pod, fwk.PodInfo, fwk.NodeInfo) *fwk.Status

// recount has every filter of the state (nil: none) apply the change of pod on node to its
// counts, which it finds by the node's labels.
func (p *Plugins) recount(ctx context.Context, is api.InterPodState, pod *corev1.Pod, node *api.NodeInfo, apply change) *api.Status {
	s, _ := is.(*state)
	if s == nil {
		return nil
	}
	changed, view := p.pods.of(pod), &nodeView{node: node}
	for _, f := range s.filters {
		if status := apply(f.PreFilterExtensions(), ctx, s.cycle, s.pod, changed, view); !status.IsSuccess() {
			return p.convert(status, f.Name())
		}
	}
	return nil
}

// verdictKey names a status the plugins give.
type verdictKey struct {
	plugin string
	code   fwk.Code
	reason string
}

// convert is the plugin's failure status as the scheduler's (kubestatus.Convert), made once
// per plugin, code and reason.
func (p *Plugins) convert(s *fwk.Status, plugin string) *api.Status {
	key := verdictKey{plugin: plugin, code: s.Code(), reason: s.Message()}
	if v, ok := p.verdicts.Load(key); ok {
		return v.(*api.Status)
	}
	v, _ := p.verdicts.LoadOrStore(key, kubestatus.Convert(s, plugin))
	return v.(*api.Status)
}

// handle gives the plugins what they ask of kube-scheduler's framework when they are built:
// the snapshot, the loop over nodes, and (for InterPodAffinity's namespace lister) the
// informer factory. Nothing else is called; the embedded interface is left nil.
type handle struct {
	fwk.Handle
	factory informers.SharedInformerFactory
	lister  fwk.SharedLister
}

func (h handle) SnapshotSharedLister() fwk.SharedLister                 { return h.lister }
func (h handle) SharedInformerFactory() informers.SharedInformerFactory { return h.factory }
func (h handle) Parallelizer() fwk.Parallelizer                         { return inOrder{} }

// inOrder runs the plugins' loops over nodes on the calling goroutine. kube-scheduler's
// Parallelizer counts its goroutines in a metric of kube-scheduler's that this binary never
// initialises, and the node views list their pods on first use, without a lock.
type inOrder struct{}

func (inOrder) Until(ctx context.Context, pieces int, work workqueue.DoWorkPieceFunc, _ string) {
	for i := 0; i < pieces && ctx.Err() == nil; i++ {
		work(i)
	}
}

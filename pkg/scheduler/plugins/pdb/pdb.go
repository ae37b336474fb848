// Package pdb keeps preempt and reclaim from evicting pods that a PodDisruptionBudget
// protects, as upstream's plugin of that name: a pod is covered by each policy/v1 budget of
// its namespace whose selector matches its labels, and may go only while every one of them
// has a disruption left. A budget's status.disruptionsAllowed is what its controller last
// counted; this session's own evictions (kept or still tentative) and the victims allowed
// before a pod in the same choice are taken from it, so one cycle never evicts more pods
// than a budget allows. A pod the budget's status.disruptedPods already names was evicted
// through the API and is counted there already, as upstream reads it.
//
// Unlike upstream:
//   - the budgets apply whatever tier the plugin is in (framework's victim filter), not only
//     where no earlier tier has a say on victims (upstream's confs put pdb behind priority,
//     gang and conformance, where its Preemptable and Reclaimable are never asked). In the
//     first tier it also has its say there, as upstream's;
//   - a pod without labels is a victim like any other (it matches no budget; upstream never
//     lets it go);
//   - an empty selector ({}) covers every pod of the namespace, as policy/v1 defines it
//     (upstream: none); a missing one covers none.
//
// Until the budgets have been listed (the watch starts with the first session that asks),
// no pod is let go.
package pdb

import (
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/conf"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/ondemand"
)

// PluginName is the plugin's name in volcano-scheduler.conf.
const PluginName = "pdb"

// ArgumentKeys is empty: the plugin reads no arguments, as upstream's.
var ArgumentKeys = conf.ArgumentKeys{}

// Budgets are a namespace's PodDisruptionBudgets; false while they are not yet listed.
type Budgets interface {
	InNamespace(namespace string) ([]*policyv1.PodDisruptionBudget, bool)
}

// NewSource is the watch on PodDisruptionBudgets that NewBuilder's plugins read: the plugin's
// component, started on the scheduler cache's informers.
func NewSource() *ondemand.Watch[*policyv1.PodDisruptionBudget] {
	return ondemand.New[*policyv1.PodDisruptionBudget](func(f informers.SharedInformerFactory) toolscache.SharedIndexInformer {
		return f.Policy().V1().PodDisruptionBudgets().Informer()
	})
}

// New builds the plugin of a scheduler without an API server: there are no budgets, and it
// protects no pod.
func New(args conf.Arguments) (framework.Plugin, error) { return NewBuilder(nil)(args) }

// NewBuilder builds plugins that read budgets (nil: none).
func NewBuilder(budgets Budgets) framework.PluginBuilder {
	return func(conf.Arguments) (framework.Plugin, error) { return &pdbPlugin{budgets: budgets}, nil }
}

type pdbPlugin struct {
	budgets Budgets
	// namespaces are the budgets of each namespace the session asked about.
	namespaces map[string][]*budget
	// evicted are the pods this session evicts (tentatively or for good) and the budgets
	// that cover them.
	evicted map[api.TaskID][]*budget
}

// budget is one PodDisruptionBudget for the session.
type budget struct {
	pdb      *policyv1.PodDisruptionBudget
	selector labels.Selector
	// left is status.disruptionsAllowed less the session's evictions of pods it covers.
	left int32
}

func (*pdbPlugin) Name() string { return PluginName }

func (p *pdbPlugin) OnSessionOpen(ssn *framework.Session) {
	if p.budgets == nil {
		return
	}
	p.namespaces = map[string][]*budget{}
	p.evicted = map[api.TaskID][]*budget{}
	ssn.AddVictimFilterFn(PluginName, p.allowed)
	evictable := func(_ *api.TaskInfo, candidates []*api.TaskInfo) ([]*api.TaskInfo, bool) {
		return p.allowed(candidates), false
	}
	ssn.AddPreemptableFn(PluginName, evictable)
	ssn.AddReclaimableFn(PluginName, evictable)
	ssn.AddEventHandler(&framework.EventHandler{AllocateFunc: p.restored, DeallocateFunc: p.released})
}

func (*pdbPlugin) OnSessionClose(*framework.Session) {}

// allowed are the victims, in order, that every budget covering them lets go, each taking
// one disruption from its budgets for those after it; nil while the budgets are not listed.
func (p *pdbPlugin) allowed(victims []*api.TaskInfo) []*api.TaskInfo {
	spent := map[*budget]int32{}
	out := make([]*api.TaskInfo, 0, len(victims))
	for _, v := range victims {
		covering, listed := p.covering(v)
		if !listed {
			klog.V(3).InfoS("PodDisruptionBudgets not yet listed; no pod of the namespace is evicted", "namespace", v.Namespace)
			return nil
		}
		ok := true
		for _, b := range covering {
			if b.left-spent[b] <= 0 {
				ok = false
				klog.V(4).InfoS("PodDisruptionBudget keeps the pod", "pod", klog.KRef(v.Namespace, v.Name), "podDisruptionBudget", klog.KObj(b.pdb))
				break
			}
		}
		if !ok {
			continue
		}
		for _, b := range covering {
			spent[b]++
		}
		out = append(out, v)
	}
	return out
}

// covering are the budgets that count the task's pod, and whether its namespace's budgets
// are listed. A budget that already counts the pod as disrupted is left out.
func (p *pdbPlugin) covering(task *api.TaskInfo) ([]*budget, bool) {
	all, listed := p.inNamespace(task.Namespace)
	if !listed || task.Pod == nil {
		return nil, listed
	}
	var out []*budget
	podLabels := labels.Set(task.Pod.Labels)
	for _, b := range all {
		if _, counted := b.pdb.Status.DisruptedPods[task.Pod.Name]; counted || !b.selector.Matches(podLabels) {
			continue
		}
		out = append(out, b)
	}
	return out, true
}

// inNamespace lists the namespace's budgets once a session, with their selectors.
func (p *pdbPlugin) inNamespace(namespace string) ([]*budget, bool) {
	if bs, ok := p.namespaces[namespace]; ok {
		return bs, true
	}
	pdbs, listed := p.budgets.InNamespace(namespace)
	if !listed {
		return nil, false
	}
	bs := make([]*budget, 0, len(pdbs))
	for _, pdb := range pdbs {
		sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
		if err != nil {
			// The API server validates selectors: unreachable for a stored budget.
			klog.ErrorS(err, "PodDisruptionBudget selector cannot be read; it protects no pod", "podDisruptionBudget", klog.KObj(pdb))
			continue
		}
		bs = append(bs, &budget{pdb: pdb, selector: sel, left: pdb.Status.DisruptionsAllowed})
	}
	p.namespaces[namespace] = bs
	return bs, true
}

// released takes a disruption from the budgets of a pod the session evicts (a task taken
// back from a placement is Pending, not Releasing, and disrupts nothing).
func (p *pdbPlugin) released(ev *framework.Event) {
	if ev.Task.Status != api.Releasing {
		return
	}
	covering, listed := p.covering(ev.Task)
	if !listed {
		return
	}
	for _, b := range covering {
		b.left--
	}
	p.evicted[ev.Task.UID] = covering
}

// restored gives the disruption back when the session undoes the eviction.
func (p *pdbPlugin) restored(ev *framework.Event) {
	covering, ok := p.evicted[ev.Task.UID]
	if !ok {
		return
	}
	for _, b := range covering {
		b.left++
	}
	delete(p.evicted, ev.Task.UID)
}

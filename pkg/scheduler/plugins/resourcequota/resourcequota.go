// Package resourcequota keeps a job Pending while a ResourceQuota of its namespace could not
// hold its PodGroup's spec.minResources, as upstream's plugin of that name: the VolcanoJob
// controller creates a job's pods only once it is Inqueue, and pods the quota would refuse
// would only fail to be created.
//
// For each ResourceQuota of the namespace, each resource of its status.hard that
// minResources asks for must hold status.used, plus the minResources of the namespace's jobs
// this cycle has already enqueued (which the quota does not count yet), plus the job's. A
// job without minResources is let through. Of a job's minResources, the requests of its pods
// that already exist are left out: the quota counted each when it was created (plain pods
// given a PodGroup exist before their job is enqueued; upstream counts them twice, and such a
// job never enters a namespace whose quota is more than half used). Refused, the job stays Pending and its PodGroup
// gets upstream's Normal "Unschedulable" Event, "resource quota insufficient, ...", naming
// the quota (upstream's Event prints the lists as Go maps of quantity structs and names no
// quota).
//
// Unlike upstream, a quota's "requests.<resource>" counts against minResources' <resource>
// as its plain "<resource>" does: Kubernetes accepts only that form for extended resources
// (requests.volcano.sh/vgpu-number), and it is the common one for cpu and memory, which
// upstream's plugin does not see. "limits.*" and object counts are not read: minResources
// says nothing of them.
package resourcequota

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/informers"
	toolscache "k8s.io/client-go/tools/cache"
	resourcehelper "k8s.io/component-helpers/resource"
	"k8s.io/klog/v2"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/conf"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/ondemand"
)

// PluginName is the plugin's name in volcano-scheduler.conf.
const PluginName = "resourcequota"

// Insufficient opens the message of the PodGroup Event a refusal emits (upstream's words).
const Insufficient = "resource quota insufficient"

// ArgumentKeys is empty: the plugin reads no arguments, as upstream's.
var ArgumentKeys = conf.ArgumentKeys{}

// Quotas are a namespace's ResourceQuotas; false while they are not yet listed.
type Quotas interface {
	InNamespace(namespace string) ([]*corev1.ResourceQuota, bool)
}

// NewSource is the watch on ResourceQuotas that NewBuilder's plugins read: the plugin's
// component, started on the scheduler cache's informers.
func NewSource() *ondemand.Watch[*corev1.ResourceQuota] {
	return ondemand.New[*corev1.ResourceQuota](func(f informers.SharedInformerFactory) toolscache.SharedIndexInformer {
		return f.Core().V1().ResourceQuotas().Informer()
	})
}

// New builds the plugin of a scheduler without an API server: there are no ResourceQuotas,
// and every job is let through.
func New(args conf.Arguments) (framework.Plugin, error) { return NewBuilder(nil)(args) }

// NewBuilder builds plugins that read quotas (nil: none).
func NewBuilder(quotas Quotas) framework.PluginBuilder {
	return func(conf.Arguments) (framework.Plugin, error) { return &quotaPlugin{quotas: quotas}, nil }
}

type quotaPlugin struct {
	quotas Quotas
	// admitted are the minResources of the jobs this session enqueued, by namespace.
	admitted map[string]corev1.ResourceList
}

func (*quotaPlugin) Name() string { return PluginName }

func (p *quotaPlugin) OnSessionOpen(ssn *framework.Session) {
	if p.quotas == nil {
		return
	}
	p.admitted = map[string]corev1.ResourceList{}
	ssn.AddJobEnqueueableFn(PluginName, func(job *api.JobInfo) int { return p.enqueueable(ssn, job) })
	ssn.AddJobEnqueuedFn(PluginName, p.enqueued)
}

func (*quotaPlugin) OnSessionClose(*framework.Session) {}

// enqueueable permits the job when every quota of its namespace holds it (see the package
// comment); otherwise it rejects it and says why on the PodGroup.
func (p *quotaPlugin) enqueueable(ssn *framework.Session, job *api.JobInfo) int {
	want := uncounted(job)
	if want == nil {
		return framework.Permit
	}
	quotas, listed := p.quotas.InNamespace(job.Namespace)
	if !listed {
		klog.V(3).InfoS("ResourceQuotas not yet listed; the job waits", "podGroup", klog.KRef(job.Namespace, job.Name))
		return framework.Reject
	}
	slices.SortFunc(quotas, func(a, b *corev1.ResourceQuota) int { return strings.Compare(a.Name, b.Name) })
	for _, q := range quotas {
		if why := refusal(q, want, p.admitted[job.Namespace]); why != "" {
			klog.V(3).InfoS("Job not enqueued: its namespace's ResourceQuota cannot hold it", "podGroup", klog.KRef(job.Namespace, job.Name),
				"resourceQuota", klog.KObj(q), "reason", why)
			ssn.RecordJobEvent(job, corev1.EventTypeNormal, string(schedulingv1beta1.PodGroupUnschedulableType), why)
			return framework.Reject
		}
	}
	return framework.Permit
}

// enqueued counts the job's minResources against its namespace for the rest of the session.
func (p *quotaPlugin) enqueued(job *api.JobInfo) {
	want := uncounted(job)
	if want == nil {
		return
	}
	sum := p.admitted[job.Namespace]
	if sum == nil {
		sum = corev1.ResourceList{}
		p.admitted[job.Namespace] = sum
	}
	for name, q := range want {
		total := sum[name]
		total.Add(q)
		sum[name] = total
	}
}

func minResources(job *api.JobInfo) corev1.ResourceList {
	if job.PodGroup == nil || job.PodGroup.Spec.MinResources == nil {
		return nil
	}
	return *job.PodGroup.Spec.MinResources
}

// uncounted is the job's minResources less the requests of its pods that exist and are not
// finished, which its namespace's quotas count already; nil without minResources.
func uncounted(job *api.JobInfo) corev1.ResourceList {
	min := minResources(job)
	if min == nil {
		return nil
	}
	want := min.DeepCopy()
	for _, t := range job.Tasks {
		if t.Pod == nil || t.Pod.Status.Phase == corev1.PodSucceeded || t.Pod.Status.Phase == corev1.PodFailed {
			continue
		}
		for name, q := range resourcehelper.PodRequests(t.Pod, resourcehelper.PodResourcesOptions{}) {
			if left, ok := want[name]; ok {
				left.Sub(q)
				if left.Sign() < 0 {
					left = resource.Quantity{Format: left.Format}
				}
				want[name] = left
			}
		}
	}
	return want
}

// quotaEntry is one resource of a quota that minResources asks for.
type quotaEntry struct {
	key                   corev1.ResourceName // as the quota names it
	requested, used, hard resource.Quantity
	exceeded              bool
}

// refusal says why quota q cannot hold want on top of admitted (what the jobs this session
// enqueued in the namespace asked), or "" when it can.
func refusal(q *corev1.ResourceQuota, want, admitted corev1.ResourceList) string {
	var entries []quotaEntry
	short := false
	for key, hard := range q.Status.Hard {
		name := requestedName(key)
		requested, asked := want[name]
		if !asked {
			continue
		}
		e := quotaEntry{key: key, requested: requested, used: q.Status.Used[key].DeepCopy(), hard: hard}
		e.used.Add(admitted[name])
		total := e.used.DeepCopy()
		total.Add(requested)
		e.exceeded = total.Cmp(hard) > 0
		short = short || e.exceeded
		entries = append(entries, e)
	}
	if !short {
		return ""
	}
	slices.SortFunc(entries, func(a, b quotaEntry) int { return strings.Compare(string(a.key), string(b.key)) })
	var requested, used, hard []string
	for _, e := range entries {
		if !e.exceeded {
			continue
		}
		requested = append(requested, fmt.Sprintf("%s=%s", e.key, e.requested.String()))
		used = append(used, fmt.Sprintf("%s=%s", e.key, e.used.String()))
		hard = append(hard, fmt.Sprintf("%s=%s", e.key, e.hard.String()))
	}
	return fmt.Sprintf("%s, requested: %s, used: %s, limited: %s (ResourceQuota %s/%s)", Insufficient,
		strings.Join(requested, " "), strings.Join(used, " "), strings.Join(hard, " "), q.Namespace, q.Name)
}

// requestedName is the minResources name a quota's resource counts: "requests.<r>" and "<r>"
// count <r>; anything else names nothing minResources has ("limits.cpu", "count/pods").
func requestedName(key corev1.ResourceName) corev1.ResourceName {
	if r, ok := strings.CutPrefix(string(key), corev1.DefaultResourceRequestsPrefix); ok {
		return corev1.ResourceName(r)
	}
	return key
}

package resourcequota

import (
	"context"
	"fmt"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/actions/enqueue"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/conf"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework/frameworktest"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/testing/st"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/vgpu"
)

func quota(ns, name string, hard, used corev1.ResourceList) *corev1.ResourceQuota {
	return &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.ResourceQuotaSpec{Hard: hard}, Status: corev1.ResourceQuotaStatus{Hard: hard, Used: used}}
}

func list(pairs ...string) corev1.ResourceList {
	l := corev1.ResourceList{}
	for i := 0; i < len(pairs); i += 2 {
		l[corev1.ResourceName(pairs[i])] = resource.MustParse(pairs[i+1])
	}
	return l
}

// pendingJob is a Pending PodGroup of ns, created at second i, asking min (none when nil).
type pendingJob struct {
	ns, name string
	created  int
	min      corev1.ResourceList
}

func cluster(jobs ...pendingJob) *api.ClusterInfo {
	objs := frameworktest.Objects{Queues: []*schedulingv1beta1.Queue{st.MakeQueue().Name("default").Weight(1).Obj()}}
	for _, j := range jobs {
		w := st.MakePodGroup().Namespace(j.ns).Name(j.name).Queue("default").MinMember(1).Created(j.created).
			Phase(schedulingv1beta1.PodGroupPending)
		if j.min != nil {
			w.MinResources(j.min)
		}
		objs.PodGroups = append(objs.PodGroups, w.Obj())
	}
	return objs.ClusterInfo()
}

// enqueueOnce runs enqueue with resourcequota reading source over the jobs, and returns the
// names of the jobs it enqueued, sorted, and the PodGroup events.
func enqueueOnce(t *testing.T, quotas Quotas, jobs ...pendingJob) ([]string, []frameworktest.JobEvent) {
	t.Helper()
	cache := &frameworktest.Cache{Snap: cluster(jobs...)}
	reg := framework.NewRegistry()
	reg.RegisterAction(enqueue.New())
	reg.RegisterPlugin(PluginName, NewBuilder(quotas))
	ssn := frameworktest.RunActions(t, cache, &conf.SchedulerConfiguration{Actions: "enqueue",
		Tiers: []conf.Tier{{Plugins: []conf.PluginOption{{Name: PluginName}}}}}, reg)
	var enqueued []string
	for _, job := range ssn.Jobs {
		if job.Status.Phase == schedulingv1beta1.PodGroupInqueue {
			enqueued = append(enqueued, job.Name)
		}
	}
	slices.Sort(enqueued)
	return enqueued, cache.Events
}

// watched is the plugin's watch over a fake API server holding the objects, started as the
// scheduler starts components.
func watched(t *testing.T, quotas ...*corev1.ResourceQuota) (Quotas, informers.SharedInformerFactory, context.Context) {
	t.Helper()
	objs := make([]runtime.Object, len(quotas))
	for i, q := range quotas {
		objs[i] = q
	}
	source := NewSource()
	factory, ctx := frameworktest.StartOn(t, source, objs...)
	return source, factory, ctx
}

// notListed is a watch that has not listed its quotas yet.
type notListed struct{}

func (notListed) InNamespace(string) ([]*corev1.ResourceQuota, bool) { return nil, false }

// TestNamespaceQuotaHoldsJobsBack: in one cycle, jobs of a namespace are enqueued while its
// quotas hold their minResources on top of status.used and of the jobs enqueued before them;
// the next is refused with upstream's Event naming the quota; other namespaces, jobs without
// minResources, and resources no quota names are not held back. Until the quotas are
// listed, no job with minResources is enqueued.
func TestNamespaceQuotaHoldsJobsBack(t *testing.T) {
	source, factory, ctx := watched(t,
		quota("ns", "compute", list("requests.cpu", "10", "memory", "20Gi"), list("requests.cpu", "4", "memory", "2Gi")),
		quota("ns", "gpus", list("requests."+string(vgpu.DefaultCountResource), "2"), list("requests."+string(vgpu.DefaultCountResource), "1")),
		quota("ns", "objects", list("count/pods", "1", "limits.cpu", "1"), list("count/pods", "1", "limits.cpu", "1")),
		quota("other", "compute", list("cpu", "1"), nil))
	jobs := []pendingJob{
		{ns: "ns", name: "fits", created: 1, min: list("cpu", "4", "memory", "1Gi")},
		{ns: "ns", name: "over-cpu", created: 2, min: list("cpu", "4", "memory", "1Gi")},
		{ns: "ns", name: "fits-the-rest", created: 3, min: list("cpu", "2")},
		{ns: "ns", name: "no-min", created: 4},
		{ns: "ns", name: "over-gpu-and-memory", created: 5, min: list(string(vgpu.DefaultCountResource), "2", "memory", "18Gi", "pods", "3")},
		{ns: "ns", name: "unquoted", created: 6, min: list("ephemeral-storage", "1Ti")},
		{ns: "other", name: "plain-cpu-name", created: 7, min: list("cpu", "2")},
		{ns: "free", name: "no-quota", created: 8, min: list("cpu", "100")},
	}

	// Before the list: a watch answering as one not yet listed, since the fake API server
	// may list faster than a session runs.
	enqueued, events := enqueueOnce(t, notListed{}, jobs...)
	if want := []string{"no-min"}; !slices.Equal(enqueued, want) || len(events) != 0 {
		t.Errorf("before the quotas are listed: enqueued %v, events %v; want %v and none", enqueued, events, want)
	}
	source.InNamespace("ns") // starts the watch, as a session's first question does
	factory.WaitForCacheSync(ctx.Done())

	enqueued, events = enqueueOnce(t, source, jobs...)
	if want := []string{"fits", "fits-the-rest", "no-min", "no-quota", "unquoted"}; !slices.Equal(enqueued, want) {
		t.Errorf("enqueued %v, want %v", enqueued, want)
	}
	// Golden: upstream's reason and message opening; the rest names the quota and lists only
	// what it lacks.
	want := []frameworktest.JobEvent{
		{PodGroup: "over-cpu", Type: "Normal", Reason: "Unschedulable",
			Message: "resource quota insufficient, requested: requests.cpu=4, used: requests.cpu=8, limited: requests.cpu=10 (ResourceQuota ns/compute)"},
		{PodGroup: "over-gpu-and-memory", Type: "Normal", Reason: "Unschedulable",
			Message: "resource quota insufficient, requested: memory=18Gi, used: memory=3Gi, limited: memory=20Gi (ResourceQuota ns/compute)"},
		{PodGroup: "plain-cpu-name", Type: "Normal", Reason: "Unschedulable",
			Message: "resource quota insufficient, requested: cpu=2, used: cpu=0, limited: cpu=1 (ResourceQuota other/compute)"},
	}
	if fmt.Sprint(events) != fmt.Sprint(want) {
		t.Errorf("events\n%v\nwant\n%v", events, want)
	}

	// The vGPU quota alone: requests.volcano.sh/vgpu-number counts minResources' vGPUs.
	enqueued, events = enqueueOnce(t, source, pendingJob{ns: "ns", name: "gpu", created: 1, min: list(string(vgpu.DefaultCountResource), "2")})
	if len(enqueued) != 0 || len(events) != 1 || events[0].Message !=
		"resource quota insufficient, requested: requests.volcano.sh/vgpu-number=2, used: requests.volcano.sh/vgpu-number=1, limited: requests.volcano.sh/vgpu-number=2 (ResourceQuota ns/gpus)" {
		t.Errorf("vGPU job: enqueued %v, events %v", enqueued, events)
	}
}

// TestWithoutAPIServerEveryJobPasses: the plugin of a scheduler without an API server has no
// quotas and holds nothing back.
func TestWithoutAPIServerEveryJobPasses(t *testing.T) {
	enqueued, events := enqueueOnce(t, nil, pendingJob{ns: "ns", name: "big", min: list("cpu", "1000")})
	if !slices.Equal(enqueued, []string{"big"}) || len(events) != 0 {
		t.Errorf("enqueued %v, events %v", enqueued, events)
	}
}

// A PodGroup given to plain pods that already exist (their requests counted in the quota's
// status.used when they were created) is not counted twice: with 800m of a 1-CPU quota used by
// its own two pods, a job asking 800m is enqueued; a job whose pods do not exist yet is not.
func TestOwnPodsAreNotCountedTwice(t *testing.T) {
	q := quota("ns", "team", list("requests.cpu", "1"), list("requests.cpu", "800m"))
	quotas, factory, ctx := watched(t, q)
	objs := frameworktest.Objects{Queues: []*schedulingv1beta1.Queue{st.MakeQueue().Name("default").Weight(1).Obj()}}
	for i, name := range []string{"plain", "controller"} {
		objs.PodGroups = append(objs.PodGroups, st.MakePodGroup().Namespace("ns").Name(name).Queue("default").MinMember(2).
			Created(i).Phase(schedulingv1beta1.PodGroupPending).MinResources(list("cpu", "800m")).Obj())
	}
	for i := range 2 {
		objs.Pods = append(objs.Pods, st.Pod(fmt.Sprintf("plain-%d", i), "400m", "").Group("plain").Obj())
	}
	reg := framework.NewRegistry()
	reg.RegisterAction(enqueue.New())
	reg.RegisterPlugin(PluginName, NewBuilder(quotas))
	cfg := &conf.SchedulerConfiguration{Actions: "enqueue", Tiers: []conf.Tier{{Plugins: []conf.PluginOption{{Name: PluginName}}}}}
	frameworktest.RunActions(t, &frameworktest.Cache{Snap: objs.ClusterInfo()}, cfg, reg) // asks for the quotas
	factory.WaitForCacheSync(ctx.Done())
	ssn := frameworktest.RunActions(t, &frameworktest.Cache{Snap: objs.ClusterInfo()}, cfg, reg)
	for name, want := range map[string]schedulingv1beta1.PodGroupPhase{"plain": schedulingv1beta1.PodGroupInqueue, "controller": schedulingv1beta1.PodGroupPending} {
		if got := ssn.Jobs[api.JobID("ns/"+name)].Status.Phase; got != want {
			t.Errorf("%s: %s, want %s", name, got, want)
		}
	}
}

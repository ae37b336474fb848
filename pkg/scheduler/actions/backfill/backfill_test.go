package backfill

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/conf"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework/frameworktest"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/testing/st"
)

var errNoGPUNode = errors.New("no node has the selected labels")

// stub stands in for gang (valid and ready by api.JobInfo's counts), priority (queues by
// priority) and predicates (node selectors, pre-checked).
type stub struct{}

func (stub) Name() string { return "stub" }
func (stub) OnSessionOpen(ssn *framework.Session) {
	ssn.AddQueueOrderFn("stub", func(l, r *api.QueueInfo) int { return int(r.Priority) - int(l.Priority) })
	ssn.AddJobValidFn("stub", func(j *api.JobInfo) *framework.ValidateResult {
		if j.ValidTaskNum() < j.MinAvailable {
			return &framework.ValidateResult{Reason: "NotEnoughTasks"}
		}
		return nil
	})
	ssn.AddJobReadyFn("stub", func(j *api.JobInfo) bool { return j.IsReady() })
	ssn.AddPrePredicateFn("stub", func(t *api.TaskInfo) error {
		if t.Pod.Spec.NodeSelector["gpu"] != "" {
			return errNoGPUNode
		}
		return nil
	})
}
func (stub) OnSessionClose(*framework.Session) {}

func pod(name, group string, requests corev1.ResourceList, changes ...func(*corev1.Pod)) *corev1.Pod {
	p := st.MakePod().Namespace("c1").Name(name).Group(group).Container(requests).Obj()
	for _, change := range changes {
		change(p)
	}
	return p
}

func runningOn(node string) func(*corev1.Pod) {
	return func(p *corev1.Pod) { p.Spec.NodeName, p.Status.Phase = node, corev1.PodRunning }
}

func group(name, queue string, minMember int32, phase schedulingv1beta1.PodGroupPhase) *schedulingv1beta1.PodGroup {
	return st.MakePodGroup().Namespace("c1").Name(name).Created(0).MinMember(minMember).Queue(queue).Phase(phase).Obj()
}

func node(name string, pods string) *corev1.Node {
	return st.MakeNode().Name(name).Allocatable(st.Resources("4", "8Gi", "pods", pods)).Obj()
}

func TestBackfill(t *testing.T) {
	const (
		inqueue = schedulingv1beta1.PodGroupInqueue
		pending = schedulingv1beta1.PodGroupPending
		running = schedulingv1beta1.PodGroupRunning
	)
	oneCPU := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}
	hugeCPU := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100")}
	cases := []struct {
		name   string
		queues map[string]int32 // name -> priority
		groups []*schedulingv1beta1.PodGroup
		pods   []*corev1.Pod
		nodes  []*corev1.Node

		wantBinds     map[string]string
		wantFitErrors map[string]string
		// wantWouldGo: pods left unbound that must remember the node they were tried on.
		wantWouldGo map[string]string
		// wantUntried: pods never placed, not even tentatively.
		wantUntried []string
	}{
		{
			name:      "a best-effort pod is bound",
			groups:    []*schedulingv1beta1.PodGroup{group("pg1", "q1", 1, inqueue)},
			pods:      []*corev1.Pod{pod("be", "pg1", nil)},
			nodes:     []*corev1.Node{node("n1", "10")},
			wantBinds: map[string]string{"c1/be": "n1"},
		},
		{
			name:   "pods with requests are left to allocate",
			groups: []*schedulingv1beta1.PodGroup{group("pg1", "q1", 1, inqueue)},
			pods:   []*corev1.Pod{pod("p1", "pg1", oneCPU)},
			nodes:  []*corev1.Node{node("n1", "10")},
		},
		{
			name:        "a job still Pending is not backfilled",
			groups:      []*schedulingv1beta1.PodGroup{group("pg1", "q1", 1, pending)},
			pods:        []*corev1.Pod{pod("be", "pg1", nil)},
			nodes:       []*corev1.Node{node("n1", "10")},
			wantUntried: []string{"be"},
		},
		{
			name:        "an invalid job is not backfilled",
			groups:      []*schedulingv1beta1.PodGroup{group("pg1", "q1", 2, inqueue)},
			pods:        []*corev1.Pod{pod("be", "pg1", nil)},
			nodes:       []*corev1.Node{node("n1", "10")},
			wantUntried: []string{"be"},
		},
		{
			name:        "a job whose queue is missing is not backfilled",
			groups:      []*schedulingv1beta1.PodGroup{group("pg1", "gone", 1, inqueue)},
			pods:        []*corev1.Pod{pod("be", "pg1", nil)},
			nodes:       []*corev1.Node{node("n1", "10")},
			wantUntried: []string{"be"},
		},
		{
			name:   "a gated pod waits",
			groups: []*schedulingv1beta1.PodGroup{group("pg1", "q1", 1, inqueue)},
			pods: []*corev1.Pod{pod("be", "pg1", nil, func(p *corev1.Pod) {
				p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "wait"}}
			})},
			nodes: []*corev1.Node{node("n1", "10")},
		},
		{
			// The gang needs its other pod, which does not fit: the best-effort pod is
			// not bound, and remembers where it would go.
			name:        "a job that is not ready binds nothing",
			groups:      []*schedulingv1beta1.PodGroup{group("pg1", "q1", 2, inqueue)},
			pods:        []*corev1.Pod{pod("be", "pg1", nil), pod("big", "pg1", hugeCPU)},
			nodes:       []*corev1.Node{node("n1", "10")},
			wantWouldGo: map[string]string{"be": "n1"},
		},
		{
			name:          "no pod slot left",
			groups:        []*schedulingv1beta1.PodGroup{group("pg1", "q1", 1, inqueue), group("old", "q1", 1, running)},
			pods:          []*corev1.Pod{pod("be", "pg1", nil), pod("resident", "old", oneCPU, runningOn("n1"))},
			nodes:         []*corev1.Node{node("n1", "1")},
			wantFitErrors: map[string]string{"be": "0/1 nodes are unavailable: 1 Insufficient pods."},
		},
		{
			name:   "a pre-predicate failure is recorded for every node",
			groups: []*schedulingv1beta1.PodGroup{group("pg1", "q1", 1, inqueue)},
			pods: []*corev1.Pod{pod("be", "pg1", nil, func(p *corev1.Pod) {
				p.Spec.NodeSelector = map[string]string{"gpu": "h200"}
			})},
			nodes:         []*corev1.Node{node("n1", "10"), node("n2", "10")},
			wantFitErrors: map[string]string{"be": "0/2 nodes are unavailable: 2 no node has the selected labels."},
		},
		{
			// One pod slot: the queue that goes first gets it.
			name:          "candidates are taken in queue order",
			queues:        map[string]int32{"low": 1, "high": 10},
			groups:        []*schedulingv1beta1.PodGroup{group("pg-low", "low", 1, inqueue), group("pg-high", "high", 1, inqueue)},
			pods:          []*corev1.Pod{pod("be-low", "pg-low", nil), pod("be-high", "pg-high", nil)},
			nodes:         []*corev1.Node{node("n1", "1")},
			wantBinds:     map[string]string{"c1/be-high": "n1"},
			wantFitErrors: map[string]string{"be-low": "0/1 nodes are unavailable: 1 Insufficient pods."},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			queues := c.queues
			if queues == nil {
				queues = map[string]int32{"q1": 0}
			}
			objects := frameworktest.Objects{Nodes: c.nodes, PodGroups: c.groups, Pods: c.pods}
			for name, prio := range queues {
				objects.Queues = append(objects.Queues, &schedulingv1beta1.Queue{
					ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: schedulingv1beta1.QueueSpec{Priority: prio}})
			}
			cache := &frameworktest.Cache{Snap: objects.ClusterInfo()}
			ssn := frameworktest.OpenTiers(cache, conf.SchedulerConfiguration{Actions: "enqueue, allocate, backfill"}, []stub{{}})

			New().Execute(ssn)

			want := c.wantBinds
			if want == nil {
				want = map[string]string{}
			}
			if diff := cmp.Diff(want, cache.Binds()); diff != "" {
				t.Errorf("binds (-want +got):\n%s", diff)
			}
			tasks := map[string]*api.TaskInfo{}
			jobs := map[string]*api.JobInfo{}
			for _, j := range ssn.Jobs {
				for _, task := range j.Tasks {
					tasks[task.Name], jobs[task.Name] = task, j
				}
			}
			for name, msg := range c.wantFitErrors {
				fe := jobs[name].NodesFitErrors[tasks[name].UID]
				if fe == nil || fe.Error() != msg {
					t.Errorf("pod %s: fit error %v, want %q", name, fe, msg)
				}
			}
			for _, name := range c.wantUntried {
				if task := tasks[name]; task.Status != api.Pending || task.LastTransaction != nil {
					t.Errorf("pod %s was tried: status %v, last placement %+v", name, task.Status, task.LastTransaction)
				}
			}
			for name, n := range c.wantWouldGo {
				task := tasks[name]
				if task.Status != api.Pending || task.LastTransaction == nil || task.LastTransaction.NodeName != n {
					t.Errorf("pod %s: status %v, last placement %+v, want Pending and last placed on %s", name, task.Status, task.LastTransaction, n)
				}
			}
		})
	}
}

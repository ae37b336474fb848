package allocate

import (
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/actions/internal/nodesearch"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/conf"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework/frameworktest"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/metrics"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/testing/st"
)

const (
	inqueue = schedulingv1beta1.PodGroupInqueue
	pending = schedulingv1beta1.PodGroupPending
	running = schedulingv1beta1.PodGroupRunning
)

// allocateCase is one cluster, one allocate run, and what must come out of it.
type allocateCase struct {
	name      string
	actions   string // default "enqueue, allocate"
	queues    []*schedulingv1beta1.Queue
	podGroups []*schedulingv1beta1.PodGroup
	pods      []*corev1.Pod
	nodes     []*corev1.Node
	hooks     func(ssn *framework.Session)
	args      conf.Arguments
	opts      *Options
	// metrics records the run (nil: nothing is recorded).
	metrics *metrics.Set

	wantBinds map[string]string // "<ns>/<pod>" -> node; nil means none
	// wantFitErrors: the fit error message recorded for each listed pod (by name).
	wantFitErrors map[string]string
	// wantNoFitErrors: pods that must have no fit error recorded.
	wantNoFitErrors []string
	// wantPodMessages: the PodScheduled message of each listed pod (by name).
	wantPodMessages map[string]string
	wantPhases      map[string]schedulingv1beta1.PodGroupPhase // by PodGroup name
	wantStatus      map[string]api.TaskStatus                  // by pod name
	// wantUntried: pods never placed, not even tentatively.
	wantUntried []string
}

// runAllocate runs one allocate over the case's cluster and returns the session and cache.
func runAllocate(t *testing.T, tc allocateCase) (*framework.Session, *frameworktest.Cache) {
	t.Helper()
	cache := &frameworktest.Cache{Snap: frameworktest.Objects{Nodes: tc.nodes, Queues: tc.queues, PodGroups: tc.podGroups, Pods: tc.pods}.ClusterInfo()}
	cfg := conf.SchedulerConfiguration{Actions: tc.actions}
	if cfg.Actions == "" {
		cfg.Actions = "enqueue, allocate"
	}
	if tc.args != nil {
		cfg.Configurations = []conf.Configuration{{Name: Name, Arguments: tc.args}}
	}
	ssn := frameworktest.OpenTiersRecording(tc.metrics, cache, cfg, standardTiers(tc.hooks)...)
	act := New()
	if tc.opts != nil {
		act = NewWithOptions(*tc.opts)
	}
	act.Execute(ssn)
	return ssn, cache
}

// closingQueue is a queue that its controller is closing.
func closingQueue(name string) *schedulingv1beta1.Queue {
	q := buildQueue(name, 0, 0)
	q.Status.State = schedulingv1beta1.QueueStateClosing
	return q
}

func taskByName(ssn *framework.Session, name string) (*api.JobInfo, *api.TaskInfo) {
	for _, job := range ssn.Jobs {
		for _, task := range job.Tasks {
			if task.Name == name {
				return job, task
			}
		}
	}
	return nil, nil
}

func checkCase(t *testing.T, tc allocateCase, ssn *framework.Session, cache *frameworktest.Cache) {
	t.Helper()
	want := tc.wantBinds
	if want == nil {
		want = map[string]string{}
	}
	if diff := cmp.Diff(want, cache.Binds()); diff != "" {
		t.Errorf("binds (-want +got):\n%s", diff)
	}
	for pod, msg := range tc.wantFitErrors {
		job, task := taskByName(ssn, pod)
		if task == nil {
			t.Fatalf("no pod %s", pod)
		}
		fe := job.NodesFitErrors[task.UID]
		if fe == nil {
			t.Errorf("pod %s: no fit error recorded, want %q", pod, msg)
			continue
		}
		if got := fe.Error(); got != msg {
			t.Errorf("pod %s: fit error %q, want %q", pod, got, msg)
		}
	}
	for _, pod := range tc.wantNoFitErrors {
		job, task := taskByName(ssn, pod)
		if fe := job.NodesFitErrors[task.UID]; fe != nil {
			t.Errorf("pod %s: unexpected fit error %q", pod, fe.Error())
		}
	}
	for pod, msg := range tc.wantPodMessages {
		job, task := taskByName(ssn, pod)
		if _, got := job.PodScheduledMessage(task, job.FitError); got != msg {
			t.Errorf("pod %s: message %q, want %q", pod, got, msg)
		}
	}
	for pg, phase := range tc.wantPhases {
		job := ssn.Jobs[api.NewJobID(ns, pg)]
		if job.Status.Phase != phase {
			t.Errorf("PodGroup %s: phase %q, want %q", pg, job.Status.Phase, phase)
		}
	}
	for _, pod := range tc.wantUntried {
		_, task := taskByName(ssn, pod)
		if task.Status != api.Pending || task.LastTransaction != nil {
			t.Errorf("pod %s was tried: status %v, last placement %+v", pod, task.Status, task.LastTransaction)
		}
	}
	for pod, status := range tc.wantStatus {
		_, task := taskByName(ssn, pod)
		if task.Status != status {
			t.Errorf("pod %s: status %v, want %v", pod, task.Status, status)
		}
	}
}

func TestAllocate(t *testing.T) {
	cpu1 := st.Resources("1", "1Gi")
	cpu2 := st.Resources("2", "1Gi")
	cpu4 := st.Resources("4", "1Gi")
	node2 := st.Resources("2", "4Gi", "pods", "110")
	node4 := st.Resources("4", "8Gi", "pods", "110")
	q1 := []*schedulingv1beta1.Queue{buildQueue("q1", 0, 0)}

	cases := []allocateCase{
		{
			name:      "one Job with two Pods on one node",
			queues:    q1,
			podGroups: []*schedulingv1beta1.PodGroup{buildPodGroup("pg1", "q1", 2, inqueue, 0)},
			pods:      []*corev1.Pod{buildPod("p1", "pg1", cpu1), buildPod("p2", "pg1", cpu1)},
			nodes:     []*corev1.Node{st.Node("n1", node2).Obj()},
			wantBinds: map[string]string{"c1/p1": "n1", "c1/p2": "n1"},
		},
		{
			// Room for one gang: the older queue's job gets the node, the other job none
			// of it (a half-placed gang is undone).
			name:   "two Jobs on one node",
			queues: []*schedulingv1beta1.Queue{buildQueue("q1", 0, 0), buildQueue("q2", 0, 1)},
			podGroups: []*schedulingv1beta1.PodGroup{
				buildPodGroup("pg1", "q1", 2, inqueue, 0), buildPodGroup("pg2", "q2", 2, inqueue, 0),
			},
			pods: []*corev1.Pod{
				buildPod("pg1-w-0", "pg1", cpu1), buildPod("pg1-w-1", "pg1", cpu1),
				buildPod("pg2-w-0", "pg2", cpu1), buildPod("pg2-w-1", "pg2", cpu1),
			},
			nodes:         []*corev1.Node{st.Node("n1", node2).Obj()},
			wantBinds:     map[string]string{"c1/pg1-w-0": "n1", "c1/pg1-w-1": "n1"},
			wantFitErrors: map[string]string{"pg2-w-0": "0/1 nodes are unavailable: 1 Insufficient cpu."},
		},
		{
			name:          "prepredicate failed: node selector does not match",
			queues:        q1,
			podGroups:     []*schedulingv1beta1.PodGroup{buildPodGroup("pg1", "q1", 1, inqueue, 0)},
			pods:          []*corev1.Pod{buildPod("p1", "pg1", cpu1, withNodeSelector(map[string]string{"gpu": "h200"}))},
			nodes:         []*corev1.Node{st.Node("n1", node2).Obj(), st.Node("n2", node2).Obj()},
			wantFitErrors: map[string]string{"p1": "0/2 nodes are unavailable: 2 node selector does not match."},
		},
		{
			// p1 goes first (priority) and fails its pre-predicate, which ends the job's turn;
			// the job comes back for its other tasks, which make the gang.
			name:      "prepredicate failed and tasks are not used up, continue on until min member meet",
			queues:    q1,
			podGroups: []*schedulingv1beta1.PodGroup{buildPodGroup("pg1", "q1", 2, inqueue, 0)},
			pods: []*corev1.Pod{
				buildPod("p1", "pg1", cpu1, withPriority(100), withNodeSelector(map[string]string{"gpu": "h200"})),
				buildPod("p2", "pg1", cpu1, withPriority(1)),
				buildPod("p3", "pg1", cpu1, withPriority(1)),
			},
			nodes:         []*corev1.Node{st.Node("n1", node4).Obj()},
			wantBinds:     map[string]string{"c1/p2": "n1", "c1/p3": "n1"},
			wantFitErrors: map[string]string{"p1": "0/1 nodes are unavailable: 1 node selector does not match."},
		},
		{
			// minTaskMember master:1 cannot be met: the workers are tried on the job's next
			// turn, but without the master the gang never forms and nothing is bound.
			name:   "master's min member can not be allocated, break from allocating",
			queues: q1,
			podGroups: func() []*schedulingv1beta1.PodGroup {
				pg := buildPodGroup("pg1", "q1", 3, inqueue, 0)
				pg.Spec.MinTaskMember = map[string]int32{"master": 1, "worker": 2}
				return []*schedulingv1beta1.PodGroup{pg}
			}(),
			pods: []*corev1.Pod{
				buildPod("pg1-master-0", "pg1", cpu4, withRole("master"), withPriority(100)),
				buildPod("pg1-worker-0", "pg1", cpu1, withRole("worker")),
				buildPod("pg1-worker-1", "pg1", cpu1, withRole("worker")),
				buildPod("pg1-worker-2", "pg1", cpu1, withRole("worker")),
			},
			nodes:         []*corev1.Node{st.Node("n1", node2).Obj()},
			wantFitErrors: map[string]string{"pg1-master-0": "0/1 nodes are unavailable: 1 Insufficient cpu."},
			wantStatus: map[string]api.TaskStatus{
				"pg1-master-0": api.Pending, "pg1-worker-0": api.Pending, "pg1-worker-1": api.Pending, "pg1-worker-2": api.Pending,
			},
		},
		{
			name:   "high priority queue should not block others",
			queues: []*schedulingv1beta1.Queue{buildQueue("q-high", 10, 0), buildQueue("q-low", 1, 0)},
			podGroups: []*schedulingv1beta1.PodGroup{
				buildPodGroup("pg-big", "q-high", 1, inqueue, 0), buildPodGroup("pg-small", "q-low", 1, inqueue, 0),
			},
			pods:          []*corev1.Pod{buildPod("big", "pg-big", cpu4), buildPod("small", "pg-small", cpu1)},
			nodes:         []*corev1.Node{st.Node("n1", node2).Obj()},
			wantBinds:     map[string]string{"c1/small": "n1"},
			wantFitErrors: map[string]string{"big": "0/1 nodes are unavailable: 1 Insufficient cpu."},
		},
		{
			name:   "an overused queue is dropped",
			queues: []*schedulingv1beta1.Queue{buildQueue("q1", 0, 0), buildQueue("q2", 0, 1)},
			podGroups: []*schedulingv1beta1.PodGroup{
				buildPodGroup("pg1", "q1", 1, inqueue, 0), buildPodGroup("pg2", "q2", 1, inqueue, 0),
			},
			pods:  []*corev1.Pod{buildPod("p1", "pg1", cpu1), buildPod("p2", "pg2", cpu1)},
			nodes: []*corev1.Node{st.Node("n1", node4).Obj()},
			hooks: func(ssn *framework.Session) {
				ssn.AddOverusedFn("hooks", func(q *api.QueueInfo) bool { return q.Name == "q1" })
			},
			wantBinds:       map[string]string{"c1/p2": "n1"},
			wantNoFitErrors: []string{"p1"},
		},
		{
			name:      "a task the queue cannot take is skipped: no fit error, the queue's reason as its message",
			queues:    q1,
			podGroups: []*schedulingv1beta1.PodGroup{buildPodGroup("pg1", "q1", 1, inqueue, 0)},
			pods:      []*corev1.Pod{buildPod("p1", "pg1", cpu1), buildPod("p2", "pg1", cpu2)},
			nodes:     []*corev1.Node{st.Node("n1", node4).Obj()},
			hooks: func(ssn *framework.Session) {
				ssn.AddAllocatableFn("hooks", func(q *api.QueueInfo, t *api.TaskInfo) error {
					if t.Name == "p2" {
						return fmt.Errorf("queue %s has no room for the pod within its deserved share: cpu", q.Name)
					}
					return nil
				})
			},
			wantBinds:       map[string]string{"c1/p1": "n1"},
			wantNoFitErrors: []string{"p1", "p2"},
			wantPodMessages: map[string]string{"p2": "queue q1 has no room for the pod within its deserved share: cpu"},
			wantStatus:      map[string]api.TaskStatus{"p2": api.Pending},
		},
		{
			name:       "a Pending job waits for enqueue when enqueue is configured",
			queues:     q1,
			podGroups:  []*schedulingv1beta1.PodGroup{buildPodGroup("pg1", "q1", 1, pending, 0)},
			pods:       []*corev1.Pod{buildPod("p1", "pg1", cpu1)},
			nodes:      []*corev1.Node{st.Node("n1", node2).Obj()},
			wantPhases: map[string]schedulingv1beta1.PodGroupPhase{"pg1": pending},
		},
		{
			name:      "without enqueue, allocate admits Pending jobs itself",
			actions:   "allocate, backfill",
			queues:    q1,
			podGroups: []*schedulingv1beta1.PodGroup{buildPodGroup("pg1", "q1", 1, pending, 0), buildPodGroup("empty", "q1", 1, "", 0)},
			pods:      []*corev1.Pod{buildPod("p1", "pg1", cpu1)},
			nodes:     []*corev1.Node{st.Node("n1", node2).Obj()},
			wantBinds: map[string]string{"c1/p1": "n1"},
			// A PodGroup whose pods do not exist yet is admitted too: the job controller
			// creates them only then.
			wantPhases: map[string]schedulingv1beta1.PodGroupPhase{"pg1": inqueue, "empty": inqueue},
		},
		{
			name:       "without enqueue, a Closing queue's Pending job is not admitted",
			actions:    "allocate, backfill",
			queues:     []*schedulingv1beta1.Queue{closingQueue("q1")},
			podGroups:  []*schedulingv1beta1.PodGroup{buildPodGroup("pg1", "q1", 1, pending, 0)},
			pods:       []*corev1.Pod{buildPod("p1", "pg1", cpu1)},
			nodes:      []*corev1.Node{st.Node("n1", node2).Obj()},
			wantPhases: map[string]schedulingv1beta1.PodGroupPhase{"pg1": pending},
		},
		{
			name:        "an invalid job is skipped",
			queues:      q1,
			podGroups:   []*schedulingv1beta1.PodGroup{buildPodGroup("pg1", "q1", 3, inqueue, 0)},
			pods:        []*corev1.Pod{buildPod("p1", "pg1", cpu1), buildPod("p2", "pg1", cpu1)},
			nodes:       []*corev1.Node{st.Node("n1", node4).Obj()},
			wantUntried: []string{"p1", "p2"},
		},
		{
			// The first worker (priority) finds no node; its role's other tasks are not tried,
			// although they would fit. (The error cache is off: it would fail them on its own.)
			name:      "once a task of a role found no node, the role's other tasks are not tried",
			args:      conf.Arguments{nodesearch.PredicateErrorCacheArg: false},
			queues:    q1,
			podGroups: []*schedulingv1beta1.PodGroup{buildPodGroup("pg1", "q1", 1, inqueue, 0)},
			pods: []*corev1.Pod{
				buildPod("pg1-worker-0", "pg1", cpu4, withRole("worker"), withPriority(100)),
				buildPod("pg1-worker-1", "pg1", cpu1, withRole("worker")),
				buildPod("pg1-worker-2", "pg1", cpu1, withRole("worker")),
			},
			nodes:         []*corev1.Node{st.Node("n1", node2).Obj()},
			wantFitErrors: map[string]string{"pg1-worker-0": "0/1 nodes are unavailable: 1 Insufficient cpu."},
			wantUntried:   []string{"pg1-worker-1", "pg1-worker-2"},
		},
		{
			// pg1 (minMember 1, two pods) is ready after one pod; it goes back behind pg2,
			// which is not ready yet (gang order), and pg2 gets the second slot.
			name:   "a ready job lets other jobs go before its extra tasks",
			queues: q1,
			podGroups: []*schedulingv1beta1.PodGroup{
				buildPodGroup("pg1", "q1", 1, inqueue, 0), buildPodGroup("pg2", "q1", 1, inqueue, 1),
			},
			pods: []*corev1.Pod{
				buildPod("pg1-w-0", "pg1", cpu1), buildPod("pg1-w-1", "pg1", cpu1), buildPod("pg2-w-0", "pg2", cpu1),
			},
			nodes:         []*corev1.Node{st.Node("n1", node2).Obj()},
			wantBinds:     map[string]string{"c1/pg1-w-0": "n1", "c1/pg2-w-0": "n1"},
			wantFitErrors: map[string]string{"pg1-w-1": "0/1 nodes are unavailable: 1 Insufficient cpu."},
		},
		{
			name:            "a job whose queue is missing is skipped",
			queues:          q1,
			podGroups:       []*schedulingv1beta1.PodGroup{buildPodGroup("pg1", "gone", 1, inqueue, 0)},
			pods:            []*corev1.Pod{buildPod("p1", "pg1", cpu1)},
			nodes:           []*corev1.Node{st.Node("n1", node2).Obj()},
			wantNoFitErrors: []string{"p1"},
		},
		{
			name:      "gated and best-effort pods are left alone",
			queues:    q1,
			podGroups: []*schedulingv1beta1.PodGroup{buildPodGroup("pg1", "q1", 1, inqueue, 0)},
			pods: []*corev1.Pod{
				buildPod("gated", "pg1", cpu1, withGate()),
				buildPod("besteffort", "pg1", nil),
				buildPod("p1", "pg1", cpu1),
			},
			nodes:      []*corev1.Node{st.Node("n1", node4).Obj()},
			wantBinds:  map[string]string{"c1/p1": "n1"},
			wantStatus: map[string]api.TaskStatus{"gated": api.Pending, "besteffort": api.Pending},
		},
		{
			// n1's cpu is held by a pod being deleted: the new pod waits for it there
			// (pipelined, not bound), and the job keeps that in the session.
			name:   "a pod is pipelined onto resources being released",
			queues: q1,
			podGroups: []*schedulingv1beta1.PodGroup{
				buildPodGroup("old", "q1", 1, running, 0), buildPodGroup("pg1", "q1", 1, inqueue, 1),
			},
			pods: []*corev1.Pod{
				buildPod("leaving", "old", cpu2, runningOn("n1", true)),
				buildPod("p1", "pg1", cpu1),
			},
			nodes:      []*corev1.Node{st.Node("n1", node2).Obj()},
			wantStatus: map[string]api.TaskStatus{"p1": api.Pipelined},
		},
		{
			name:   "a node with room now is preferred to one with room once released",
			queues: q1,
			podGroups: []*schedulingv1beta1.PodGroup{
				buildPodGroup("old", "q1", 1, running, 0), buildPodGroup("pg1", "q1", 1, inqueue, 1),
			},
			pods: []*corev1.Pod{
				buildPod("leaving", "old", cpu2, runningOn("n1", true)),
				buildPod("p1", "pg1", cpu1),
			},
			nodes:     []*corev1.Node{st.Node("n1", node2).Obj(), st.Node("n2", node2).Obj()},
			wantBinds: map[string]string{"c1/p1": "n2"},
		},
		{
			// A plugin's event handler (deviceshare, when no GPU is left) refuses the
			// placement: the pod is not bound and says why.
			name:      "a placement a plugin refuses is recorded as the pod's fit error",
			queues:    q1,
			podGroups: []*schedulingv1beta1.PodGroup{buildPodGroup("pg1", "q1", 1, inqueue, 0)},
			pods:      []*corev1.Pod{buildPod("p1", "pg1", cpu1)},
			nodes:     []*corev1.Node{st.Node("n1", node2).Obj()},
			hooks: func(ssn *framework.Session) {
				ssn.AddEventHandler(&framework.EventHandler{AllocateFunc: func(e *framework.Event) {
					e.Err = errors.New("no GPU left")
				}})
			},
			wantFitErrors: map[string]string{"p1": "0/1 nodes are unavailable: 1 no GPU left."},
			wantStatus:    map[string]api.TaskStatus{"p1": api.Pending},
		},
		{
			// minMember 1 of 3: the job is ready after one pod and is committed, then comes
			// back for the others.
			name:      "a job ready before its last task still gets the rest",
			queues:    q1,
			podGroups: []*schedulingv1beta1.PodGroup{buildPodGroup("pg1", "q1", 1, inqueue, 0)},
			pods: []*corev1.Pod{
				buildPod("p1", "pg1", cpu1), buildPod("p2", "pg1", cpu1), buildPod("p3", "pg1", cpu1),
			},
			nodes:     []*corev1.Node{st.Node("n1", node4).Obj()},
			wantBinds: map[string]string{"c1/p1": "n1", "c1/p2": "n1", "c1/p3": "n1"},
		},
		{
			// Three tasks, two fit: the gang (minMember 3) is undone, and the undone pods
			// remember where they would have gone.
			name:      "min member cannot be allocated: nothing bound",
			queues:    q1,
			podGroups: []*schedulingv1beta1.PodGroup{buildPodGroup("pg1", "q1", 3, inqueue, 0)},
			pods: []*corev1.Pod{
				buildPod("pg1-w-0", "pg1", cpu1), buildPod("pg1-w-1", "pg1", cpu1), buildPod("pg1-w-2", "pg1", cpu1),
			},
			nodes:         []*corev1.Node{st.Node("n1", node2).Obj()},
			wantFitErrors: map[string]string{"pg1-w-2": "0/1 nodes are unavailable: 1 Insufficient cpu."},
			wantStatus:    map[string]api.TaskStatus{"pg1-w-0": api.Pending, "pg1-w-1": api.Pending},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ssn, cache := runAllocate(t, tc)
			checkCase(t, tc, ssn, cache)
		})
	}
}

// An undone gang leaves each placed pod saying where it could go.
func TestDiscardedGangKeepsLastPlacement(t *testing.T) {
	tc := allocateCase{
		queues:    []*schedulingv1beta1.Queue{buildQueue("q1", 0, 0)},
		podGroups: []*schedulingv1beta1.PodGroup{buildPodGroup("pg1", "q1", 2, inqueue, 0)},
		pods:      []*corev1.Pod{buildPod("pg1-w-0", "pg1", st.Resources("1", "")), buildPod("pg1-w-1", "pg1", st.Resources("8", ""))},
		nodes:     []*corev1.Node{st.Node("n1", st.Resources("2", "4Gi", "pods", "10")).Obj()},
	}
	ssn, _ := runAllocate(t, tc)
	job, task := taskByName(ssn, "pg1-w-0")
	if task.LastTransaction == nil || task.LastTransaction.NodeName != "n1" {
		t.Fatalf("LastTransaction = %+v, want node n1", task.LastTransaction)
	}
	reason, msg := job.TaskSchedulingReason(task)
	if reason != api.ReasonSchedulable || msg != "Pod c1/pg1-w-0 can possibly be assigned to n1, once minAvailable is satisfied" {
		t.Errorf("reason %q message %q", reason, msg)
	}
	if n := ssn.Nodes["n1"]; len(n.Tasks) != 0 || n.Used.MilliCPU != 0 {
		t.Errorf("node n1 still holds the undone pods: %d tasks, %v cpu used", len(n.Tasks), n.Used.MilliCPU)
	}
}

// "Insufficient <resource>" names the first resource the node lacks, in a fixed order: cpu,
// memory, then extended resources by name.
func TestInsufficientResourceFitError(t *testing.T) {
	const (
		vgpuNumber = "volcano.sh/vgpu-number"
		vgpuMemory = "volcano.sh/vgpu-memory"
	)
	plain := st.Resources("4", "8Gi", "pods", "110")
	withVGPU := st.Resources("4", "8Gi", "pods", "110", vgpuNumber, "10", vgpuMemory, "1000")
	cases := []struct {
		name    string
		request corev1.ResourceList
		nodes   []*corev1.Node
		others  []*corev1.Pod // running pods filling the nodes
		want    string
	}{
		{
			name:    "vGPU request on a node without vGPU",
			request: st.Resources("1", "1Gi", vgpuNumber, "1", vgpuMemory, "2000"),
			nodes:   []*corev1.Node{st.Node("n1", plain).Obj()},
			want:    "0/1 nodes are unavailable: 1 Insufficient volcano.sh/vgpu-memory.",
		},
		{
			name:    "vGPU memory short where the GPU count fits",
			request: st.Resources("1", "1Gi", vgpuNumber, "1", vgpuMemory, "2000"),
			nodes:   []*corev1.Node{st.Node("n1", withVGPU).Obj()},
			want:    "0/1 nodes are unavailable: 1 Insufficient volcano.sh/vgpu-memory.",
		},
		{
			name:    "cpu is named before extended resources",
			request: st.Resources("8", "1Gi", vgpuNumber, "1", vgpuMemory, "2000"),
			nodes:   []*corev1.Node{st.Node("n1", plain).Obj()},
			want:    "0/1 nodes are unavailable: 1 Insufficient cpu.",
		},
		{
			name:    "memory is named before extended resources",
			request: st.Resources("1", "16Gi", vgpuMemory, "2000"),
			nodes:   []*corev1.Node{st.Node("n1", plain).Obj()},
			want:    "0/1 nodes are unavailable: 1 Insufficient memory.",
		},
		{
			name:    "no pod slot left",
			request: st.Resources("1", "1Gi"),
			nodes:   []*corev1.Node{st.Node("n1", st.Resources("4", "8Gi", "pods", "1")).Obj()},
			others:  []*corev1.Pod{buildPod("resident", "other", st.Resources("1", "1Gi"), runningOn("n1", false))},
			want:    "0/1 nodes are unavailable: 1 Insufficient pods.",
		},
		{
			name:    "each node reports its own shortfall",
			request: st.Resources("2", "1Gi", vgpuNumber, "1", vgpuMemory, "2000"),
			nodes: []*corev1.Node{
				st.Node("n1", st.Resources("1", "8Gi", "pods", "110", vgpuNumber, "10", vgpuMemory, "8000")).Obj(),
				st.Node("n2", plain).Obj(),
			},
			want: "0/2 nodes are unavailable: 1 Insufficient cpu, 1 Insufficient volcano.sh/vgpu-memory.",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tc := allocateCase{
				queues: []*schedulingv1beta1.Queue{buildQueue("q1", 0, 0)},
				podGroups: []*schedulingv1beta1.PodGroup{
					buildPodGroup("pg1", "q1", 1, inqueue, 0), buildPodGroup("other", "q1", 1, running, 0),
				},
				pods:          append([]*corev1.Pod{buildPod("p1", "pg1", c.request)}, c.others...),
				nodes:         c.nodes,
				wantFitErrors: map[string]string{"p1": c.want},
			}
			ssn, cache := runAllocate(t, tc)
			checkCase(t, tc, ssn, cache)
		})
	}
}

func TestPredicateErrorCache(t *testing.T) {
	cases := []struct {
		name string
		role string
		args conf.Arguments
		// claims: each pod has a claim of its own (a per-pod ephemeral volume's), which the
		// node may refuse for one pod and serve for the next.
		claims bool
		// wantCalls: how often the predicate is asked about the node that always fails.
		wantCalls int
	}{
		{name: "on by default: a role asks a failing node once", role: "worker", wantCalls: 1},
		{name: "switched off: every task asks", role: "worker", args: conf.Arguments{nodesearch.PredicateErrorCacheArg: false}, wantCalls: 3},
		{name: "tasks without a role are not cached", role: "", wantCalls: 3},
		{name: "a malformed value leaves it on", role: "worker", args: conf.Arguments{nodesearch.PredicateErrorCacheArg: "maybe"}, wantCalls: 1},
		{name: "pods with claims of their own are not cached", role: "worker", claims: true, wantCalls: 3},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			calls := 0
			var pods []*corev1.Pod
			for _, name := range []string{"pg1-w-0", "pg1-w-1", "pg1-w-2"} {
				changes := []func(*st.PodWrapper){withRole(c.role)}
				if c.claims {
					changes = append(changes, withClaim(name+"-data"))
				}
				pods = append(pods, buildPod(name, "pg1", st.Resources("1", ""), changes...))
			}
			tc := allocateCase{
				queues:    []*schedulingv1beta1.Queue{buildQueue("q1", 0, 0)},
				podGroups: []*schedulingv1beta1.PodGroup{buildPodGroup("pg1", "q1", 1, inqueue, 0)},
				pods:      pods,
				nodes:     []*corev1.Node{st.Node("bad", st.Resources("8", "8Gi", "pods", "10")).Obj(), st.Node("good", st.Resources("8", "8Gi", "pods", "10")).Obj()},
				args:      c.args,
				hooks: func(ssn *framework.Session) {
					ssn.AddPredicateFn("hooks", func(_ *api.TaskInfo, n *api.NodeInfo) *api.Status {
						if n.Name != "bad" {
							return nil
						}
						calls++
						return api.NewStatus(api.Unschedulable, "bad node")
					})
				},
				wantBinds: map[string]string{"c1/pg1-w-0": "good", "c1/pg1-w-1": "good", "c1/pg1-w-2": "good"},
			}
			ssn, cache := runAllocate(t, tc)
			checkCase(t, tc, ssn, cache)
			if calls != c.wantCalls {
				t.Errorf("predicate asked %d times about the failing node, want %d", calls, c.wantCalls)
			}
		})
	}
}

// A stop (SIGTERM) that comes while allocate works ends it between jobs: the job whose bind
// was under way is committed, the next is not tried.
func TestStopEndsAllocateBetweenJobs(t *testing.T) {
	tc := allocateCase{
		queues: []*schedulingv1beta1.Queue{buildQueue("q1", 0, 0)},
		podGroups: []*schedulingv1beta1.PodGroup{
			buildPodGroup("pg1", "q1", 1, inqueue, 0), buildPodGroup("pg2", "q1", 1, inqueue, 0),
		},
		pods: []*corev1.Pod{
			buildPod("pg1-w-0", "pg1", st.Resources("1", "1Gi")), buildPod("pg2-w-0", "pg2", st.Resources("1", "1Gi")),
		},
		nodes: []*corev1.Node{st.Node("n1", st.Resources("4", "8Gi", "pods", "10")).Obj()},
	}
	cache := &frameworktest.Cache{Snap: frameworktest.Objects{Nodes: tc.nodes, Queues: tc.queues, PodGroups: tc.podGroups, Pods: tc.pods}.ClusterInfo()}
	ssn := frameworktest.OpenTiersRecording(nil, cache, conf.SchedulerConfiguration{Actions: "allocate"}, standardTiers(nil)...)
	stop := make(chan struct{})
	ssn.StopWhen(stop)
	var bound []string
	cache.OnBind = func(task *api.TaskInfo) error {
		bound = append(bound, task.Name)
		close(stop) // SIGTERM arrives with the first bind
		return nil
	}
	New().Execute(ssn)
	if len(bound) != 1 {
		t.Fatalf("bound %v after the stop, want the first job's pod only", bound)
	}
	other := "pg2-w-0"
	if bound[0] == other {
		other = "pg1-w-0"
	}
	if _, task := taskByName(ssn, other); task.LastTransaction != nil || task.Status != api.Pending {
		t.Errorf("%s was tried after the stop: %+v, status %v", other, task.LastTransaction, task.Status)
	}
}

package enqueue

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/conf"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework/frameworktest"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/testing/st"
)

// voter stands in for the quota plugins: it orders queues by priority, votes on each job
// by its rule, and records the jobs it is told were admitted.
type voter struct {
	vote     func(job *api.JobInfo) int
	enqueued []string
	asked    []string
}

func (v *voter) Name() string { return "voter" }
func (v *voter) OnSessionOpen(ssn *framework.Session) {
	ssn.AddQueueOrderFn("voter", func(l, r *api.QueueInfo) int { return int(r.Priority) - int(l.Priority) })
	ssn.AddJobEnqueueableFn("voter", func(job *api.JobInfo) int {
		v.asked = append(v.asked, job.Name)
		return v.vote(job)
	})
	ssn.AddJobEnqueuedFn("voter", func(job *api.JobInfo) { v.enqueued = append(v.enqueued, job.Name) })
}
func (v *voter) OnSessionClose(*framework.Session) {}

func permit(*api.JobInfo) int { return framework.Permit }
func reject(*api.JobInfo) int { return framework.Reject }

// budget permits the first n jobs it is asked about.
func budget(n int) func(*api.JobInfo) int {
	return func(*api.JobInfo) int {
		if n == 0 {
			return framework.Reject
		}
		n--
		return framework.Permit
	}
}

func queue(name string, priority int32) *api.QueueInfo {
	return api.NewQueueInfo(st.MakeQueue().Name(name).Created(0).Priority(priority).Obj())
}

// stateQueue is a queue in the given state.
func stateQueue(name string, state schedulingv1beta1.QueueState) *api.QueueInfo {
	q := st.MakeQueue().Name(name).Created(0).Obj()
	q.Status.State = state
	return api.NewQueueInfo(q)
}

// minResources8 is upstream's case: 8 cpu and 8Gi up front.
var minResources8 = &corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8"), corev1.ResourceMemory: resource.MustParse("8Gi")}

// job is a PodGroup (without pods: enqueue looks at the group only) created created seconds
// after st.Epoch.
func job(name, queue string, phase schedulingv1beta1.PodGroupPhase, minResources *corev1.ResourceList, created int) *api.JobInfo {
	w := st.MakePodGroup().Namespace("c1").Name(name).Created(created).MinMember(1).Queue(queue).Phase(phase)
	if minResources != nil {
		w.MinResources(*minResources)
	}
	pg := w.Obj()
	j := api.NewJobInfo(api.NewJobID(pg.Namespace, pg.Name))
	j.SetPodGroup(pg, "default")
	return j
}

func TestEnqueue(t *testing.T) {
	const (
		pending = schedulingv1beta1.PodGroupPending
		inqueue = schedulingv1beta1.PodGroupInqueue
		running = schedulingv1beta1.PodGroupRunning
	)
	cases := []struct {
		name   string
		queues []*api.QueueInfo
		jobs   []*api.JobInfo
		vote   func(*api.JobInfo) int

		wantPhases   map[string]schedulingv1beta1.PodGroupPhase
		wantEnqueued []string // in order
		wantAsked    []string // in order
	}{
		{
			name:       "an Inqueue PodGroup stays Inqueue",
			queues:     []*api.QueueInfo{queue("c1", 0)},
			jobs:       []*api.JobInfo{job("pg1", "c1", inqueue, minResources8, 0)},
			vote:       reject,
			wantPhases: map[string]schedulingv1beta1.PodGroupPhase{"pg1": inqueue},
		},
		{
			name:   "Pending PodGroups without minResources are enqueued whatever the vote",
			queues: []*api.QueueInfo{queue("c1", 0)},
			jobs: []*api.JobInfo{
				job("pg1", "c1", pending, nil, 0), job("pg2", "c1", pending, nil, 1),
			},
			vote:         reject,
			wantPhases:   map[string]schedulingv1beta1.PodGroupPhase{"pg1": inqueue, "pg2": inqueue},
			wantEnqueued: []string{"pg1", "pg2"},
		},
		{
			name:         "a PodGroup with no phase yet counts as Pending",
			queues:       []*api.QueueInfo{queue("c1", 0)},
			jobs:         []*api.JobInfo{job("pg1", "c1", "", minResources8, 0)},
			vote:         permit,
			wantPhases:   map[string]schedulingv1beta1.PodGroupPhase{"pg1": inqueue},
			wantEnqueued: []string{"pg1"},
			wantAsked:    []string{"pg1"},
		},
		{
			name:       "a Running PodGroup stays Running",
			queues:     []*api.QueueInfo{queue("c1", 0)},
			jobs:       []*api.JobInfo{job("pg1", "c1", running, minResources8, 0)},
			vote:       permit,
			wantPhases: map[string]schedulingv1beta1.PodGroupPhase{"pg1": running},
		},
		{
			name:       "a PodGroup in a queue that does not exist is not handled",
			queues:     []*api.QueueInfo{queue("c1", 0)},
			jobs:       []*api.JobInfo{job("pg1", "c2", pending, nil, 0)},
			vote:       permit,
			wantPhases: map[string]schedulingv1beta1.PodGroupPhase{"pg1": pending},
		},
		{
			name:       "a Closed or Closing queue takes no new job, whatever the vote",
			queues:     []*api.QueueInfo{stateQueue("closed", schedulingv1beta1.QueueStateClosed), stateQueue("closing", schedulingv1beta1.QueueStateClosing)},
			jobs:       []*api.JobInfo{job("pg1", "closed", pending, nil, 0), job("pg2", "closing", pending, minResources8, 0)},
			vote:       permit,
			wantPhases: map[string]schedulingv1beta1.PodGroupPhase{"pg1": pending, "pg2": pending},
		},
		{
			name:       "a rejected PodGroup stays Pending",
			queues:     []*api.QueueInfo{queue("c1", 0)},
			jobs:       []*api.JobInfo{job("pg1", "c1", pending, minResources8, 0)},
			vote:       reject,
			wantPhases: map[string]schedulingv1beta1.PodGroupPhase{"pg1": pending},
			wantAsked:  []string{"pg1"},
		},
		{
			// Room for one job: the queue that goes first gets it.
			name:   "queues are served in QueueOrderFn order",
			queues: []*api.QueueInfo{queue("low", 1), queue("high", 10)},
			jobs: []*api.JobInfo{
				job("pg-low", "low", pending, minResources8, 0), job("pg-high", "high", pending, minResources8, 1),
			},
			vote:         budget(1),
			wantPhases:   map[string]schedulingv1beta1.PodGroupPhase{"pg-low": pending, "pg-high": inqueue},
			wantEnqueued: []string{"pg-high"},
			wantAsked:    []string{"pg-high", "pg-low"},
		},
		{
			name:   "jobs of a queue are served in JobOrderFn order",
			queues: []*api.QueueInfo{queue("c1", 0)},
			jobs: []*api.JobInfo{
				job("young", "c1", pending, minResources8, 5), job("old", "c1", pending, minResources8, 1),
			},
			vote:         budget(1),
			wantPhases:   map[string]schedulingv1beta1.PodGroupPhase{"old": inqueue, "young": pending},
			wantEnqueued: []string{"old"},
			wantAsked:    []string{"old", "young"},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			snap := &api.ClusterInfo{Jobs: map[api.JobID]*api.JobInfo{}, Nodes: map[string]*api.NodeInfo{}, Queues: map[api.QueueID]*api.QueueInfo{}}
			for _, q := range c.queues {
				snap.Queues[q.UID] = q
			}
			for _, j := range c.jobs {
				snap.Jobs[j.UID] = j
			}
			v := &voter{vote: c.vote}
			reg := framework.NewRegistry()
			reg.RegisterPlugin(v.Name(), func(conf.Arguments) (framework.Plugin, error) { return v, nil })
			cfg := &conf.SchedulerConfiguration{Actions: "enqueue, allocate", Tiers: []conf.Tier{{Plugins: []conf.PluginOption{{Name: v.Name()}}}}}
			ssn := framework.OpenSession(&frameworktest.Cache{Snap: snap}, cfg, reg, nil)

			informerPhases := map[string]schedulingv1beta1.PodGroupPhase{}
			for _, j := range c.jobs {
				informerPhases[j.Name] = j.PodGroup.Status.Phase
			}

			New().Execute(ssn)

			for _, j := range c.jobs {
				if j.PodGroup.Status.Phase != informerPhases[j.Name] {
					t.Errorf("PodGroup %s: the informer's object was changed to %q; only the session's copy may be", j.Name, j.PodGroup.Status.Phase)
				}
			}

			for name, want := range c.wantPhases {
				if got := ssn.Jobs[api.NewJobID("c1", name)].Status.Phase; got != want {
					t.Errorf("PodGroup %s: phase %q, want %q", name, got, want)
				}
			}
			if diff := cmp.Diff(c.wantEnqueued, v.enqueued); diff != "" {
				t.Errorf("JobEnqueued calls (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(c.wantAsked, v.asked); diff != "" {
				t.Errorf("JobEnqueueable calls (-want +got):\n%s", diff)
			}
		})
	}
}

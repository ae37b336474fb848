package preempt_test

import (
	"fmt"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/actions/preempt"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/conf"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework/frameworktest"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/plugins/conformance"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/plugins/gang"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/plugins/priority"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/testing/st"
)

// cluster is one 4-CPU node and the default queue; jobs are added with addJob.
type cluster struct{ ci *api.ClusterInfo }

func newCluster(nodeCPU string) *cluster {
	ci := &api.ClusterInfo{Jobs: map[api.JobID]*api.JobInfo{}, Nodes: map[string]*api.NodeInfo{}, Queues: map[api.QueueID]*api.QueueInfo{}}
	ci.Queues["default"] = api.NewQueueInfo(st.MakeQueue().Name("default").Weight(1).Obj())
	n := api.NewNodeInfo(st.MakeNode().Name("n0").Allocatable(st.Resources(nodeCPU, "", "pods", "110")).Obj())
	ci.Nodes[n.Name], ci.NodeList = n, []*api.NodeInfo{n}
	return &cluster{ci: ci}
}

// job adds a job of the given priority and minMember with pods each asking cpu; running pods
// are on n0. pod lets a test change each pod.
func (c *cluster) job(ns, name string, prio, minMember int32, running, pending int, cpu string, pod func(*st.PodWrapper)) *api.JobInfo {
	pg := st.MakePodGroup().Namespace(ns).Name(name).MinMember(minMember).Phase(schedulingv1beta1.PodGroupInqueue).Obj()
	if running > 0 {
		pg.Status.Phase = schedulingv1beta1.PodGroupRunning
	}
	job := api.NewJobInfo(api.NewJobID(ns, name))
	job.SetPodGroup(pg, "default")
	job.Priority = prio
	for i := 0; i < running+pending; i++ {
		w := st.MakePod().Namespace(ns).Name(fmt.Sprintf("%s-%d", name, i)).Group(name).Container(st.Resources(cpu, ""))
		if i < running {
			w.Node("n0").Phase(corev1.PodRunning)
		}
		if pod != nil {
			pod(w)
		}
		task := api.NewTaskInfo(w.Obj())
		job.AddTask(task)
		if i < running {
			c.ci.Nodes["n0"].AddTask(task)
		}
	}
	c.ci.Jobs[job.UID] = job
	return job
}

// defaultTier is priority, gang and conformance in one tier, as upstream's first.
var defaultTier = []conf.PluginOption{{Name: priority.PluginName}, {Name: gang.PluginName}, {Name: conformance.PluginName}}

// preemptOnce runs the action over the cluster with defaultTier, and returns what it evicted
// ("pod: reason") and the session.
func preemptOnce(t *testing.T, c *cluster) ([]string, *framework.Session) {
	t.Helper()
	return run(t, c, preempt.Name, defaultTier)
}

// run loads a configuration of the given actions and one tier of plugins against a registry
// that has preempt under both its names, runs it over the cluster, and returns what it
// evicted ("pod: reason", sorted) and the session.
func run(t *testing.T, c *cluster, actions string, tier []conf.PluginOption) ([]string, *framework.Session) {
	t.Helper()
	var evicted []string
	cache := &frameworktest.Cache{Snap: c.ci, OnEvict: func(task *api.TaskInfo, reason string) error {
		evicted = append(evicted, task.Name+": "+reason)
		return nil
	}}
	reg := framework.NewRegistry()
	reg.RegisterAction(preempt.New())
	reg.RegisterAlias(preempt.NewGang(), preempt.Name)
	reg.RegisterPlugin(priority.PluginName, priority.New)
	reg.RegisterPlugin(gang.PluginName, gang.New)
	reg.RegisterPlugin(conformance.PluginName, conformance.New)
	ssn := frameworktest.RunActions(t, cache, &conf.SchedulerConfiguration{Actions: actions, Tiers: []conf.Tier{{Plugins: tier}}}, reg)
	slices.Sort(evicted)
	return evicted, ssn
}

func TestPreempt(t *testing.T) {
	nonPreemptable := func(w *st.PodWrapper) { w.Annotation(schedulingv1beta1.PodPreemptable, "false") }
	never := func(w *st.PodWrapper) {
		p := corev1.PreemptNever
		w.Spec.PreemptionPolicy = &p
	}
	cases := []struct {
		name  string
		build func(*cluster)
		want  []string
	}{
		{"a higher-priority gang evicts only what it needs", func(c *cluster) {
			c.job("ns", "low", 1, 1, 4, 0, "1", nil)
			c.job("ns", "high", 10, 2, 0, 2, "1", nil)
		}, []string{"low-1: preempt", "low-2: preempt"}},
		{"the lowest-priority job goes first", func(c *cluster) {
			c.job("ns", "mid", 5, 1, 2, 0, "1", nil)
			c.job("ns", "low", 1, 1, 2, 0, "1", nil)
			c.job("ns", "high", 10, 1, 0, 1, "1", nil)
		}, []string{"low-0: preempt"}},
		{"equal priority evicts nothing", func(c *cluster) {
			c.job("ns", "low", 10, 1, 4, 0, "1", nil)
			c.job("ns", "high", 10, 2, 0, 2, "1", nil)
		}, nil},
		{"a gang at its minimum is never cut below it", func(c *cluster) {
			c.job("ns", "low", 1, 3, 4, 0, "1", nil)
			c.job("ns", "high", 10, 2, 0, 2, "1", nil)
		}, nil},
		{"non-preemptable pods are never victims", func(c *cluster) {
			c.job("ns", "low", 1, 1, 4, 0, "1", nonPreemptable)
			c.job("ns", "high", 10, 1, 0, 1, "1", nil)
		}, nil},
		{"kube-system pods are never victims", func(c *cluster) {
			c.job("kube-system", "low", 1, 1, 4, 0, "1", nil)
			c.job("kube-system", "high", 10, 1, 0, 1, "1", nil)
		}, nil},
		{"critical pods are never victims", func(c *cluster) {
			c.job("ns", "low", 1, 1, 4, 0, "1", func(w *st.PodWrapper) { w.PriorityClassName("system-node-critical") })
			c.job("ns", "high", 10, 1, 0, 1, "1", nil)
		}, nil},
		{"a preemptor that cannot fit evicts nothing", func(c *cluster) {
			c.job("ns", "low", 1, 1, 4, 0, "1", nil)
			c.job("ns", "high", 10, 1, 0, 1, "5", nil)
		}, nil},
		{"a gang that cannot fit whole evicts nothing", func(c *cluster) {
			c.job("ns", "low", 1, 1, 4, 0, "1", nil)
			c.job("ns", "high", 10, 3, 0, 3, "2", nil)
		}, nil},
		{"preemptionPolicy Never never preempts", func(c *cluster) {
			c.job("ns", "low", 1, 1, 4, 0, "1", nil)
			c.job("ns", "high", 10, 1, 0, 1, "1", never)
		}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := newCluster("4")
			tc.build(c)
			got, ssn := preemptOnce(t, c)
			if !slices.Equal(got, tc.want) {
				t.Errorf("evicted %q, want %q", got, tc.want)
			}
			for _, job := range ssn.Jobs {
				if job.Priority == 10 && len(tc.want) > 0 && job.TaskCount(api.Pipelined) != job.MinAvailable {
					t.Errorf("preemptor %s has %d pipelined tasks, want %d", job.UID, job.TaskCount(api.Pipelined), job.MinAvailable)
				}
				if job.Name == "low" && job.TaskCount(api.Releasing) != int32(len(got)) {
					t.Errorf("victims' job has %d Releasing tasks, want %d", job.TaskCount(api.Releasing), len(got))
				}
			}
		})
	}
}

// A configuration written for Volcano v1.15 names gangpreempt: it loads with nothing skipped
// and preempts, gang-aware, its victims' events naming the action as the file does.
func TestGangPreemptRunsPreempt(t *testing.T) {
	cases := []struct {
		name  string
		build func(*cluster)
		want  []string
	}{
		{"a higher-priority gang evicts what it needs", func(c *cluster) {
			c.job("ns", "low", 1, 1, 4, 0, "1", nil)
			c.job("ns", "high", 10, 2, 0, 2, "1", nil)
		}, []string{"low-1: gangpreempt", "low-2: gangpreempt"}},
		{"a gang that cannot fit whole evicts nothing", func(c *cluster) {
			c.job("ns", "low", 1, 1, 4, 0, "1", nil)
			c.job("ns", "high", 10, 3, 0, 3, "2", nil)
		}, nil},
		{"a victim gang is not cut below its minimum", func(c *cluster) {
			c.job("ns", "low", 1, 3, 4, 0, "1", nil)
			c.job("ns", "high", 10, 2, 0, 2, "1", nil)
		}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := newCluster("4")
			tc.build(c)
			if got, _ := run(t, c, preempt.GangName, defaultTier); !slices.Equal(got, tc.want) {
				t.Errorf("evicted %q, want %q", got, tc.want)
			}
		})
	}
}

// The second pass: a job's pending task evicts a lower-priority running task of the same job,
// and only a lower-priority one. gang's JobStarving and Preemptable are off: with them a job
// is starving only below its minimum, where gang lets none of its tasks go, so the pass
// evicts nothing while gang decides in its tier (as upstream's).
func TestPreemptWithinJob(t *testing.T) {
	off := false
	tier := []conf.PluginOption{{Name: priority.PluginName},
		{Name: gang.PluginName, EnabledPreemptable: &off, EnabledJobStarving: &off}, {Name: conformance.PluginName}}
	cases := []struct {
		name            string
		pendingPriority int32
		want            []string
	}{
		{"a higher-priority task evicts one of its job's lower-priority tasks", 10, []string{"mixed-3: preempt"}},
		{"a task of the same priority evicts nothing", 1, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := newCluster("4")
			c.job("ns", "mixed", 1, 1, 4, 1, "1", func(w *st.PodWrapper) {
				prio := int32(1)
				if w.Spec.NodeName == "" {
					prio = tc.pendingPriority
				}
				w.Priority(prio)
			})
			got, ssn := run(t, c, preempt.Name, tier)
			if !slices.Equal(got, tc.want) {
				t.Errorf("evicted %q, want %q", got, tc.want)
			}
			if job, want := ssn.Jobs["ns/mixed"], int32(len(tc.want)); job.TaskCount(api.Pipelined) != want {
				t.Errorf("%d pipelined tasks, want %d", job.TaskCount(api.Pipelined), want)
			}
		})
	}
}

package allocate

import (
	"sort"

	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/conf"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/testing/st"
)

// Building test clusters, and a cache that records binds.

const ns = "c1"

// fakeCache hands out one snapshot and records the binds it is asked for.
type fakeCache struct {
	snap  *api.ClusterInfo
	binds map[string]string // "<ns>/<pod>" -> node
	count int               // binds, for the benchmark (which does not keep the map)
}

func (c *fakeCache) Snapshot() *api.ClusterInfo { return c.snap }
func (c *fakeCache) Bind(t *api.TaskInfo) error {
	c.count++
	if c.binds != nil {
		c.binds[t.Key()] = t.NodeName
	}
	return nil
}
func (c *fakeCache) UpdateJobStatus(*api.JobInfo, bool)                  {}
func (c *fakeCache) UpdateQueueStatus(*api.QueueInfo, *api.Resource)     {}
func (c *fakeCache) RecordJobEvent(*api.JobInfo, string, string, string) {}
func (c *fakeCache) Evict(*api.TaskInfo, string) error                   { return nil }

var resources = st.Resources

func buildQueue(name string, priority int32, created int) *schedulingv1beta1.Queue {
	return st.MakeQueue().Name(name).Priority(priority).Created(created).Obj()
}

func buildPodGroup(name, queue string, minMember int32, phase schedulingv1beta1.PodGroupPhase, created int) *schedulingv1beta1.PodGroup {
	return st.MakePodGroup().Namespace(ns).Name(name).Created(created).Queue(queue).MinMember(minMember).Phase(phase).Obj()
}

// buildPod is a pending pod of the group requesting requests; change it with the with* helpers.
func buildPod(name, group string, requests corev1.ResourceList, changes ...func(*st.PodWrapper)) *corev1.Pod {
	w := st.MakePod().Namespace(ns).Name(name).Group(group).Container(requests)
	for _, change := range changes {
		change(w)
	}
	return w.Obj()
}

func withPriority(prio int32) func(*st.PodWrapper) {
	return func(w *st.PodWrapper) { w.Priority(prio) }
}

func withRole(role string) func(*st.PodWrapper) {
	return func(w *st.PodWrapper) { w.Annotation("volcano.sh/task-spec", role) }
}

func withNodeSelector(sel map[string]string) func(*st.PodWrapper) {
	return func(w *st.PodWrapper) { w.NodeSelector(sel) }
}

func withGate() func(*st.PodWrapper) {
	return func(w *st.PodWrapper) { w.Gated() }
}

// runningOn makes the pod run on the node; releasing makes it one being deleted.
func runningOn(node string, releasing bool) func(*st.PodWrapper) {
	return func(w *st.PodWrapper) {
		w.Node(node).Phase(corev1.PodRunning)
		if releasing {
			w.Terminating()
		}
	}
}

func buildNode(name string, allocatable corev1.ResourceList, labels map[string]string) *corev1.Node {
	return st.MakeNode().Name(name).Allocatable(allocatable).Capacity(allocatable).Labels(labels).Obj()
}

// buildCluster turns API objects into a snapshot, as the cache would.
func buildCluster(queues []*schedulingv1beta1.Queue, groups []*schedulingv1beta1.PodGroup, pods []*corev1.Pod, nodes []*corev1.Node) *api.ClusterInfo {
	ci := &api.ClusterInfo{Jobs: map[api.JobID]*api.JobInfo{}, Nodes: map[string]*api.NodeInfo{}, Queues: map[api.QueueID]*api.QueueInfo{}}
	for _, q := range queues {
		ci.Queues[api.QueueID(q.Name)] = api.NewQueueInfo(q)
	}
	for _, n := range nodes {
		ni := api.NewNodeInfo(n)
		ci.Nodes[n.Name] = ni
		ci.NodeList = append(ci.NodeList, ni)
	}
	sort.Slice(ci.NodeList, func(i, j int) bool { return ci.NodeList[i].Name < ci.NodeList[j].Name })
	for _, pg := range groups {
		job := api.NewJobInfo(api.NewJobID(pg.Namespace, pg.Name))
		job.SetPodGroup(pg, "default")
		ci.Jobs[job.UID] = job
	}
	for _, p := range pods {
		task := api.NewTaskInfo(p)
		if job := ci.Jobs[task.Job]; job != nil {
			job.AddTask(task)
		}
		if n := ci.Nodes[task.NodeName]; n != nil {
			n.AddTask(task)
		}
	}
	return ci
}

// openSession opens a session over the snapshot with the given plugins, one tier each
// (in order), and actions as configured.
func openSession(cache framework.Cache, actions string, actionArgs conf.Arguments, tiers ...[]framework.Plugin) *framework.Session {
	reg := framework.NewRegistry()
	cfg := &conf.SchedulerConfiguration{Actions: actions}
	if actionArgs != nil {
		cfg.Configurations = []conf.Configuration{{Name: Name, Arguments: actionArgs}}
	}
	for _, tier := range tiers {
		var opts []conf.PluginOption
		for _, p := range tier {
			reg.RegisterPlugin(p.Name(), func(conf.Arguments) (framework.Plugin, error) { return p, nil })
			opts = append(opts, conf.PluginOption{Name: p.Name()})
		}
		cfg.Tiers = append(cfg.Tiers, conf.Tier{Plugins: opts})
	}
	return framework.OpenSession(cache, cfg, reg)
}

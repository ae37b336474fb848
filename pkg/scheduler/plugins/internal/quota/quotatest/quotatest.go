// Package quotatest builds small clusters (nodes, queues, PodGroups, pods) and opens sessions
// over them with a fake cache that records PodGroup events, for the queue plugins' tests.
package quotatest

import (
	"sort"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/conf"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/testing/st"
)

// Namespace holds every PodGroup and pod the builders make.
const Namespace = "ns"

// List builds a ResourceList from "name=quantity" pairs, e.g. List("cpu=2", "memory=2Gi",
// "volcano.sh/vgpu-memory=8192"). It panics on a malformed pair: tests write them literally.
func List(pairs ...string) corev1.ResourceList {
	list := corev1.ResourceList{}
	for _, pair := range pairs {
		name, quantity, ok := strings.Cut(pair, "=")
		if !ok {
			panic("quotatest.List: want name=quantity, got " + pair)
		}
		list[corev1.ResourceName(name)] = resource.MustParse(quantity)
	}
	return list
}

// Node is a node with the given allocatable, which holds 110 pods unless it says otherwise.
func Node(name string, allocatable corev1.ResourceList) *corev1.Node {
	allocatable = allocatable.DeepCopy()
	if _, ok := allocatable[corev1.ResourcePods]; !ok {
		allocatable[corev1.ResourcePods] = resource.MustParse("110")
	}
	return st.MakeNode().Name(name).Allocatable(allocatable).Capacity(allocatable).Obj()
}

// Queue is an Open queue of weight 1; capability may be nil.
func Queue(name string, capability corev1.ResourceList) *schedulingv1beta1.Queue {
	return st.MakeQueue().Name(name).Weight(1).Capability(capability).Obj()
}

// PodGroup is a PodGroup in queue with the given phase; minResources may be nil.
func PodGroup(name, queue string, minMember int32, minResources corev1.ResourceList, phase schedulingv1beta1.PodGroupPhase) *schedulingv1beta1.PodGroup {
	return st.MakePodGroup().Namespace(Namespace).Name(name).Queue(queue).MinMember(minMember).MinResources(minResources).
		Phase(phase).Obj()
}

// Pod is a one-container pod of podGroup requesting requests: Running on node when node is
// set, Pending otherwise.
func Pod(name, podGroup, node string, requests corev1.ResourceList) *corev1.Pod {
	phase := corev1.PodPending
	if node != "" {
		phase = corev1.PodRunning
	}
	return st.MakePod().Namespace(Namespace).Name(name).Group(podGroup).Node(node).Phase(phase).
		Containers(corev1.Container{Name: "main", Resources: corev1.ResourceRequirements{Requests: requests, Limits: requests}}).Obj()
}

// Cluster is the API objects a session starts from.
type Cluster struct {
	Nodes     []*corev1.Node
	Queues    []*schedulingv1beta1.Queue
	PodGroups []*schedulingv1beta1.PodGroup
	Pods      []*corev1.Pod
}

// Event is a PodGroup event the session emitted.
type Event struct {
	PodGroup, Type, Reason, Message string
}

// Cache is a framework.Cache over a Cluster that records PodGroup events and binds nothing.
type Cache struct {
	Cluster Cluster
	Events  []Event
}

// Snapshot builds the session's cluster from the objects: tasks of pods with a node are
// accounted on that node.
func (c *Cache) Snapshot() *api.ClusterInfo {
	ci := &api.ClusterInfo{Jobs: map[api.JobID]*api.JobInfo{}, Nodes: map[string]*api.NodeInfo{}, Queues: map[api.QueueID]*api.QueueInfo{}}
	for _, n := range c.Cluster.Nodes {
		info := api.NewNodeInfo(n)
		ci.Nodes[n.Name] = info
		ci.NodeList = append(ci.NodeList, info)
	}
	sort.Slice(ci.NodeList, func(i, j int) bool { return ci.NodeList[i].Name < ci.NodeList[j].Name })
	for _, q := range c.Cluster.Queues {
		ci.Queues[api.QueueID(q.Name)] = api.NewQueueInfo(q)
	}
	for _, pg := range c.Cluster.PodGroups {
		job := api.NewJobInfo(api.NewJobID(pg.Namespace, pg.Name))
		job.SetPodGroup(pg, "default")
		ci.Jobs[job.UID] = job
	}
	for _, pod := range c.Cluster.Pods {
		task := api.NewTaskInfo(pod)
		if job := ci.Jobs[task.Job]; job != nil {
			job.AddTask(task)
		}
		if node := ci.Nodes[task.NodeName]; node != nil {
			node.AddTask(task)
		}
	}
	return ci
}

func (*Cache) Bind(*api.TaskInfo) error                        { return nil }
func (*Cache) Evict(*api.TaskInfo, string) error               { return nil }
func (*Cache) UpdateJobStatus(*api.JobInfo, bool)              {}
func (*Cache) UpdateQueueStatus(*api.QueueInfo, *api.Resource) {}
func (c *Cache) RecordJobEvent(job *api.JobInfo, eventType, reason, message string) {
	c.Events = append(c.Events, Event{PodGroup: job.Name, Type: eventType, Reason: reason, Message: message})
}

// OpenSession opens a session over cache with the given plugin entries, all in one tier, each
// built by the builder registered under its name.
func OpenSession(t *testing.T, cache *Cache, builders map[string]framework.PluginBuilder, plugins ...conf.PluginOption) *framework.Session {
	t.Helper()
	reg := framework.NewRegistry()
	for name, b := range builders {
		reg.RegisterPlugin(name, b)
	}
	cfg := &conf.SchedulerConfiguration{Actions: "enqueue, allocate", Tiers: []conf.Tier{{Plugins: plugins}}}
	return framework.OpenSession(cache, cfg, reg)
}

// Enqueue does what the enqueue action does to one job: admit it when it sets no
// minResources or the plugins vote it enqueueable, then tell them. It reports whether the job
// was admitted.
func Enqueue(ssn *framework.Session, job *api.JobInfo) bool {
	if job.PodGroup.Spec.MinResources != nil && !ssn.JobEnqueueable(job) {
		return false
	}
	ssn.JobEnqueued(job)
	job.Status.Phase = schedulingv1beta1.PodGroupInqueue
	return true
}

// Allocate places the task on the first node (by name) with room for it, when the plugins let
// its queue take it, in a statement of its own that is committed. It returns the node's
// name, or "" when the task was not placed.
func Allocate(ssn *framework.Session, task *api.TaskInfo) string {
	job := ssn.JobFor(task)
	if ssn.Allocatable(ssn.Queues[job.Queue], task) != nil {
		return ""
	}
	for _, node := range ssn.NodeList {
		if !task.InitResreq.LessEqual(node.Idle, api.MissingAsZero) {
			continue
		}
		stmt := ssn.NewStatement()
		if err := stmt.Allocate(task, node); err != nil {
			return ""
		}
		stmt.Commit()
		return node.Name
	}
	return ""
}

// Task returns the task of the named pod.
func Task(ssn *framework.Session, pod string) *api.TaskInfo {
	for _, job := range ssn.Jobs {
		for _, t := range job.Tasks {
			if t.Name == pod {
				return t
			}
		}
	}
	return nil
}

// Job returns the job of the named PodGroup.
func Job(ssn *framework.Session, podGroup string) *api.JobInfo {
	return ssn.Jobs[api.NewJobID(Namespace, podGroup)]
}

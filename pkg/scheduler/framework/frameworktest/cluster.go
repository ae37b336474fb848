package frameworktest

import (
	"sort"

	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
)

// Objects are the API objects a snapshot is built from.
type Objects struct {
	Nodes     []*corev1.Node
	Queues    []*schedulingv1beta1.Queue
	PodGroups []*schedulingv1beta1.PodGroup
	Pods      []*corev1.Pod
}

// ClusterInfo builds a snapshot of the objects as the cache would: the nodes listed by name,
// a job of each PodGroup (in queue "default" when it names none), and a task of each pod in
// its PodGroup's job and on its node, where those are among the objects.
func (o Objects) ClusterInfo() *api.ClusterInfo {
	ci := ClusterOf(nil)
	for _, q := range o.Queues {
		ci.Queues[api.QueueID(q.Name)] = api.NewQueueInfo(q)
	}
	for _, n := range o.Nodes {
		info := api.NewNodeInfo(n)
		ci.Nodes[n.Name] = info
		ci.NodeList = append(ci.NodeList, info)
	}
	sort.Slice(ci.NodeList, func(i, j int) bool { return ci.NodeList[i].Name < ci.NodeList[j].Name })
	for _, pg := range o.PodGroups {
		job := JobOf(pg)
		ci.Jobs[job.UID] = job
	}
	for _, pod := range o.Pods {
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

// ClusterOf is a snapshot of the nodes, listed in the order given, and the jobs; it has no
// queues.
func ClusterOf(nodes []*api.NodeInfo, jobs ...*api.JobInfo) *api.ClusterInfo {
	ci := &api.ClusterInfo{Jobs: map[api.JobID]*api.JobInfo{}, Nodes: map[string]*api.NodeInfo{}, Queues: map[api.QueueID]*api.QueueInfo{}}
	for _, n := range nodes {
		ci.Nodes[n.Name] = n
		ci.NodeList = append(ci.NodeList, n)
	}
	for _, j := range jobs {
		ci.Jobs[j.UID] = j
	}
	return ci
}

// JobOf is the job of the PodGroup (in queue "default" when it names none) with a task of
// each pod.
func JobOf(pg *schedulingv1beta1.PodGroup, pods ...*corev1.Pod) *api.JobInfo {
	job := api.NewJobInfo(api.NewJobID(pg.Namespace, pg.Name))
	job.SetPodGroup(pg, "default")
	for _, p := range pods {
		job.AddTask(api.NewTaskInfo(p))
	}
	return job
}

// NodeInfo is the node with the pods running on it (their node and phase are set so).
func NodeInfo(node *corev1.Node, running ...*corev1.Pod) *api.NodeInfo {
	info := api.NewNodeInfo(node)
	for _, p := range running {
		p.Spec.NodeName, p.Status.Phase = node.Name, corev1.PodRunning
		info.AddTask(api.NewTaskInfo(p))
	}
	return info
}

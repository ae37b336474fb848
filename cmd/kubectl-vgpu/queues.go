package main

import (
	"context"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"volcano.sh/apis/pkg/client/clientset/versioned"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/queuetree"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/vgpu"
)

// queueShare is one queue's vGPU share, a row of "queues"; -o json and -o yaml print it as
// is, so its field names are part of the plugin's interface.
type queueShare struct {
	Name string `json:"name"`
	// Parent is the queue it is listed under: spec.parent, "root" where that is empty or
	// where the chain of parents never reaches the root (Note says why); empty for the root.
	Parent      string `json:"parent"`
	Depth       int    `json:"depth"`
	State       string `json:"state"`
	Weight      int32  `json:"weight"`
	Reclaimable bool   `json:"reclaimable"`
	// Deserved, Capability and Guarantee are what the spec sets (spec.deserved,
	// spec.capability, spec.guarantee.resource); Allocated is the scheduler's status.allocated.
	Deserved   vgpuAmounts `json:"deserved"`
	Allocated  vgpuAmounts `json:"allocated"`
	Capability vgpuAmounts `json:"capability"`
	Guarantee  vgpuAmounts `json:"guarantee"`
	// OverShare names the dimensions (number, memory, cores) in which Allocated is more
	// than Deserved; a dimension the queue deserves nothing explicit in is never over.
	OverShare []string `json:"overShare"`
	// PodGroups counts the queue's PodGroups by phase, as the queue controller writes them.
	PodGroups podGroupCounts `json:"podGroups"`
	Note      string         `json:"note,omitempty"`
}

// vgpuAmounts are a resource list's vGPU resources by dimension (number, memory, cores),
// without the dimensions the list does not name. Memory is in vgpu-memory units (MiB where the
// device plugins keep the memory factor at 1): queues add up requests, which are made before
// any node's factor applies.
type vgpuAmounts map[string]int64

type podGroupCounts struct {
	Running int32 `json:"running"`
	Inqueue int32 `json:"inqueue"`
	Pending int32 `json:"pending"`
}

// listQueueShares lists the queue tree depth first, children in name order, each row after
// its parent. The tree is the scheduler's own reading of spec.parent (queuetree), so a
// queue the scheduler holds back as broken (a missing parent, a cycle) is listed under the
// root with the scheduler's reason, and a cycle ends the walk like any other fault.
func listQueueShares(ctx context.Context, client versioned.Interface) ([]queueShare, error) {
	list, err := client.SchedulingV1beta1().Queues().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, explain(err, "list", "queues", "")
	}
	queues := make(map[api.QueueID]*api.QueueInfo, len(list.Items))
	for i := range list.Items {
		q := api.NewQueueInfo(&list.Items[i])
		queues[q.UID] = q
	}
	tree := queuetree.Build(queues)
	var shares []queueShare
	var walk func(id api.QueueID, parent string, depth int)
	walk = func(id api.QueueID, parent string, depth int) {
		shares = append(shares, shareOf(id, queues[id], parent, depth))
		for _, child := range tree.Children(id) {
			walk(child, string(id), depth+1)
		}
	}
	walk(queuetree.Root, "", 0)
	for _, p := range tree.Problems() {
		s := shareOf(api.QueueID(p.Queue.Name), p.Queue, string(queuetree.Root), 1)
		s.Note = p.Message + "; listed under " + string(queuetree.Root)
		shares = append(shares, s)
	}
	return shares, nil
}

// shareOf is the row of queue id, which q holds; q is nil for a root queue that does not
// exist, which the scheduler creates when it starts.
func shareOf(id api.QueueID, q *api.QueueInfo, parent string, depth int) queueShare {
	s := queueShare{Name: string(id), Parent: parent, Depth: depth, OverShare: []string{}}
	if q == nil {
		s.Note = "no Queue object (the scheduler creates it when it starts)"
		return s
	}
	spec, status := q.Queue.Spec, q.Queue.Status
	s.State = string(status.State)
	s.Weight = q.Weight
	s.Reclaimable = spec.Reclaimable == nil || *spec.Reclaimable
	s.Deserved = amountsOf(spec.Deserved)
	s.Capability = amountsOf(spec.Capability)
	s.Guarantee = amountsOf(spec.Guarantee.Resource)
	s.Allocated = allocatedOf(status.Allocated)
	s.OverShare = overShare(s.Allocated, s.Deserved)
	s.PodGroups = podGroupCounts{Running: status.Running, Inqueue: status.Inqueue, Pending: status.Pending}
	return s
}

// queueDimensions are the vGPU resources a queue's lists may name, under the names the
// scheduler's queue plugins compare, with the word each is shown as, in the order shown.
var queueDimensions = []struct {
	word     string
	resource corev1.ResourceName
}{
	{"number", vgpu.DefaultCountResource},
	{"memory", vgpu.DefaultMemoryResource},
	{"cores", vgpu.DefaultCoresResource},
}

func amountsOf(list corev1.ResourceList) vgpuAmounts {
	a := vgpuAmounts{}
	for _, d := range queueDimensions {
		if q, ok := list[d.resource]; ok {
			a[d.word] = q.Value()
		}
	}
	return a
}

// allocatedOf reads status.allocated, where a resource left out means none allocated.
func allocatedOf(list corev1.ResourceList) vgpuAmounts {
	a := amountsOf(list)
	for _, d := range queueDimensions {
		if _, ok := a[d.word]; !ok {
			a[d.word] = 0
		}
	}
	return a
}

func overShare(allocated, deserved vgpuAmounts) []string {
	over := []string{}
	for _, d := range queueDimensions {
		if share, ok := deserved[d.word]; ok && allocated[d.word] > share {
			over = append(over, d.word)
		}
	}
	return over
}

// namesCores says whether any queue's spec names vgpu-cores; the tables leave the dimension
// out otherwise, as most clusters share GPUs by memory alone.
func namesCores(shares []queueShare) bool {
	for _, s := range shares {
		for _, a := range []vgpuAmounts{s.Deserved, s.Capability, s.Guarantee} {
			if _, ok := a["cores"]; ok {
				return true
			}
		}
	}
	return false
}

// formatAmounts writes a as number/memory[/cores], "-" for a dimension not named, and "-"
// alone when none is.
func formatAmounts(a vgpuAmounts, cores bool) string {
	var cells []string
	named := false
	for _, d := range queueDimensions {
		if d.word == "cores" && !cores {
			break
		}
		v, ok := a[d.word]
		if !ok {
			cells = append(cells, "-")
			continue
		}
		named = true
		cells = append(cells, strconv.FormatInt(v, 10))
	}
	if !named {
		return "-"
	}
	return strings.Join(cells, "/")
}

//go:build unix

package main

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/actions/allocate"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/conf"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/plugins/deviceshare"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/testing/st"
)

// BenchmarkCycleWithPodConstraints is BenchmarkCycle's lab-8 cycle over gpu-mix.yaml on 1,000
// nodes in 10 zones, with kube-scheduler's inter-pod filters, when no pod has constraints and
// when every second job's pods have "one per node" anti-affinity and a zone spread of skew 1
// over their job: what the filters cost the pods that use them, and the pods placed beside
// them (a placed pod's anti-affinity is read for every pod that may go to its node).
//
//	go test ./cmd/vc-scheduler/ -run '^$' -bench BenchmarkCycleWithPodConstraints -benchtime 1x
func BenchmarkCycleWithPodConstraints(b *testing.B) {
	const nodeCount, zones = 1000, 10
	w := benchWorkload(b, "gpu-mix.yaml")
	registry := newRegistryWith(allocate.Options{}, sources{devices: deviceshare.NewStaticShared(), interPod: interPodSource(b)})
	cfg, _, err := conf.Parse(lab8Seed(b), registry)
	if err != nil {
		b.Fatal(err)
	}
	for _, constrained := range []bool{false, true} {
		template := workloadCluster(w, nodeCount)
		for i, n := range template.NodeList {
			n.Node.Labels[corev1.LabelTopologyZone] = fmt.Sprintf("zone-%d", i%zones)
		}
		half := "none"
		if constrained {
			half = "half"
			constrainEverySecondJob(template)
		}
		b.Run(fmt.Sprintf("constraints=%s/nodes=%d/pods=%d", half, nodeCount, w.PodCount(nodeCount)), func(b *testing.B) {
			benchCycles(b, registry, cfg, template)
		})
	}
}

// constrainEverySecondJob gives the pods of every second job (by ID) required anti-affinity to
// their job's other pods on one node, and a zone spread of skew 1 over them.
func constrainEverySecondJob(ci *api.ClusterInfo) {
	jobs := slices.SortedFunc(maps.Values(ci.Jobs), func(a, b *api.JobInfo) int { return cmp.Compare(a.UID, b.UID) })
	for i, job := range jobs {
		if i%2 == 1 {
			continue
		}
		own := map[string]string{"job": fmt.Sprint(i)}
		for _, task := range job.Tasks {
			w := &st.PodWrapper{Pod: *task.Pod}
			w.Label("job", own["job"]).
				RequiredPodAntiAffinity(st.PodAffinityTerm(corev1.LabelHostname, own)).
				TopologySpread(st.SpreadConstraint(1, corev1.LabelTopologyZone, own))
			*task.Pod = w.Pod
		}
	}
}

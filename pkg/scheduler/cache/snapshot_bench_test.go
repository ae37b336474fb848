package cache

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/testing/st"
)

// BenchmarkSnapshot: the per-cycle copy at the scale of the performance targets, 1,000 nodes
// and 10,000 pods in gangs of 8, half of them running.
func BenchmarkSnapshot(b *testing.B) {
	env := newTestEnv(b, Options{})
	env.sc.onQueueSet(newQueue("default"))
	for i := range 1000 {
		env.sc.onNodeSet(st.Node(fmt.Sprintf("n%04d", i), st.Resources("64", "")).Obj())
	}
	for g := range 1250 {
		group := fmt.Sprintf("pg%04d", g)
		env.sc.onPodGroupSet(newPodGroup(group, "", 8))
		for i := range 8 {
			pod := st.Pod(fmt.Sprintf("%s-w-%d", group, i), "1", "").Group(group)
			if g%2 == 0 {
				pod.Node(fmt.Sprintf("n%04d", (g*8+i)%1000)).Phase(corev1.PodRunning)
			}
			env.sc.onPodAdd(pod.Obj())
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		if snap := env.sc.Snapshot(); len(snap.Jobs) != 1250 || len(snap.NodeList) != 1000 {
			b.Fatalf("snapshot has %d jobs and %d nodes", len(snap.Jobs), len(snap.NodeList))
		}
	}
}

package cache

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// BenchmarkSnapshot: the per-cycle copy at the scale of the performance targets, 1,000 nodes
// and 10,000 pods in gangs of 8, half of them running.
func BenchmarkSnapshot(b *testing.B) {
	env := newTestEnv(b, Options{})
	env.sc.onQueueSet(newQueue("default"))
	for i := range 1000 {
		env.sc.onNodeSet(newNode(fmt.Sprintf("n%04d", i), "64", nil))
	}
	for g := range 1250 {
		group := fmt.Sprintf("pg%04d", g)
		env.sc.onPodGroupSet(newPodGroup(group, "", 8))
		for i := range 8 {
			opts := []podOption{inGroup(group)}
			if g%2 == 0 {
				opts = append(opts, onNode(fmt.Sprintf("n%04d", (g*8+i)%1000)), inPhase(corev1.PodRunning))
			}
			env.sc.onPodAdd(newPod(fmt.Sprintf("%s-w-%d", group, i), "1", opts...))
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		if snap := env.sc.Snapshot(); len(snap.Jobs) != 1250 || len(snap.NodeList) != 1000 {
			b.Fatalf("snapshot has %d jobs and %d nodes", len(snap.Jobs), len(snap.NodeList))
		}
	}
}

package cache

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	toolscache "k8s.io/client-go/tools/cache"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/conf"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework"

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

// BenchmarkIdleCycle: a scheduler cycle over 5,000 nodes and 50,000 bound, running pods in
// gangs of 8 with nothing pending (volcano-sh/volcano #5819's scale), when nothing changed
// since the last cycle (skipped), when a kubelet's status heartbeat did (skipped: nothing the
// scheduler reads changed), and when one pod event arrived before each (a full cycle:
// snapshot, session, close).
func BenchmarkIdleCycle(b *testing.B) {
	env := newTestEnv(b, Options{})
	env.sc.onQueueSet(newQueue("default"))
	const nodes, gangs = 5000, 6250
	for i := range nodes {
		env.sc.onNodeSet(st.Node(fmt.Sprintf("n%04d", i), st.Resources("64", "")).Obj())
	}
	for g := range gangs {
		group := fmt.Sprintf("pg%04d", g)
		pg := newPodGroup(group, "", 8)
		pg.Status.Phase = schedulingv1beta1.PodGroupRunning
		pg.Status.Running = 8
		env.sc.onPodGroupSet(pg)
		for i := range 8 {
			env.sc.onPodAdd(st.Pod(fmt.Sprintf("%s-w-%d", group, i), "1", "").Group(group).
				Node(fmt.Sprintf("n%04d", (g*8+i)%nodes)).Phase(corev1.PodRunning).Obj())
		}
	}
	// A kubelet's status heartbeat, as the informer hands it over (trimmed), alternating
	// between two beats.
	trim := newTrimmer()
	beat := func(i int) any {
		n := st.Node("n0000", st.Resources("64", "")).Obj()
		n.ResourceVersion = fmt.Sprint(i + 2)
		n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastHeartbeatTime: st.At(i)}}
		obj, _ := trim.trim(n)
		return obj
	}
	beats := []any{beat(0), beat(1)}
	heartbeats := counted{toolscache.ResourceEventHandlerFuncs{UpdateFunc: func(_, n any) { env.sc.onNodeSet(n) }}, env.sc.changed}
	heartbeats.OnUpdate(nil, beats[0]) // n0000 as it beats
	cfg := &conf.SchedulerConfiguration{}
	s := scheduler.New(env.sc, func() *conf.SchedulerConfiguration { return cfg }, framework.NewRegistry(), nil, time.Hour)
	s.RunOnce()
	s.RunOnce() // the queues summed in the first; nothing owed
	for _, before := range []string{"nothing", "a node heartbeat", "one pod event"} {
		b.Run("before="+before, func(b *testing.B) {
			i := 0
			for b.Loop() {
				switch before {
				case "a node heartbeat":
					i++
					heartbeats.OnUpdate(beats[(i+1)%2], beats[i%2])
				case "one pod event":
					env.sc.changed()
				}
				s.RunOnce()
			}
		})
	}
}

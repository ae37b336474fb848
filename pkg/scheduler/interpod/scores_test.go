package interpod

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/testing/st"
)

// scoresOn returns one session's scores that weights switch on, once the namespaces are listed.
func scoresOn(t *testing.T, weights api.InterPodWeights) *Scores {
	t.Helper()
	factory := informers.NewSharedInformerFactory(fake.NewClientset(), 0)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	s := started(ctx, factory).InterPodScores(weights)
	factory.WaitForCacheSync(ctx.Done())
	if s == nil {
		return nil
	}
	return s.(*Scores)
}

// scored are the nodes' scores for the pod, every node a candidate.
func scored(t *testing.T, s *Scores, pod *corev1.Pod, nodes []*api.NodeInfo) []float64 {
	t.Helper()
	scores := make([]float64, len(nodes))
	if status := s.Score(context.Background(), pod, nodes, nodes, scores); status != nil {
		t.Fatalf("Score of %s: %+v", pod.Name, status)
	}
	return scores
}

var ps = map[string]string{"role": "ps"}

// A worker that prefers its parameter server's zone scores that zone's nodes 100 times the
// weight, the others 0; one that prefers to stay out of it, the other way round.
func TestPreferredAffinityToParameterServer(t *testing.T) {
	s := scoresOn(t, api.InterPodWeights{Affinity: 2})
	nodes := session(node("a", zone, "z1"), node("b", zone, "z1"), node("c", zone, "z2"))
	nodes[0].AddTask(api.NewTaskInfo(st.Pod("ps-0", "1", "").Label("role", "ps").Obj()))
	near := st.Pod("worker", "1", "").PreferredPodAffinity(50, st.PodAffinityTerm(zone, ps)).Obj()
	if got, want := scored(t, s, near, nodes), []float64{200, 200, 0}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("near the ps: %v, want %v", got, want)
	}
	away := st.Pod("worker", "1", "").PreferredPodAntiAffinity(50, st.PodAffinityTerm(zone, ps)).Obj()
	if got, want := scored(t, s, away, nodes), []float64{0, 0, 200}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("away from the ps: %v, want %v", got, want)
	}
}

// A placed pod whose preferred affinity selects the newcomer draws it, though the newcomer has
// no term of its own; a placed pod with only required anti-affinity scores nothing.
func TestPlacedPodsTermsScore(t *testing.T) {
	s := scoresOn(t, api.InterPodWeights{Affinity: 1})
	nodes := session(node("a", zone, "z1"), node("b", zone, "z2"))
	plain := st.Pod("web", "1", "").Label("app", "web").Obj()
	nodes[1].AddTask(api.NewTaskInfo(st.Pod("guard", "1", "").
		RequiredPodAntiAffinity(st.PodAffinityTerm(zone, map[string]string{"app": "web"})).Obj()))
	s.NodeChanged(nodes[1])
	if got := scored(t, s, plain, nodes); fmt.Sprint(got) != "[0 0]" {
		t.Errorf("beside required anti-affinity only: %v, want no score", got)
	}
	nodes[0].AddTask(api.NewTaskInfo(st.Pod("cache", "1", "").
		PreferredPodAffinity(10, st.PodAffinityTerm(zone, map[string]string{"app": "web"})).Obj()))
	s.NodeChanged(nodes[0])
	if got := scored(t, s, plain, nodes); fmt.Sprint(got) != "[100 0]" {
		t.Errorf("beside a pod that prefers it: %v, want [100 0]", got)
	}
}

// A ScheduleAnyway spread prefers the zone with fewer of the pods it selects, and each
// placement the session tells of counts for the next pod, as a gang's earlier pods do.
func TestScheduleAnywaySpreadPrefersTheEmptierZone(t *testing.T) {
	s := scoresOn(t, api.InterPodWeights{Spread: 2})
	nodes := session(node("a", zone, "z1"), node("b", zone, "z1"), node("c", zone, "z2"))
	c := st.SoftSpreadConstraint(1, zone, map[string]string{"app": "web"})
	for i := range 2 {
		nodes[0].AddTask(api.NewTaskInfo(web(i, corev1.TopologySpreadConstraint{}).DeepCopy()))
	}
	got := scored(t, s, web(9, c), nodes)
	if !(got[2] > got[0] && got[0] == got[1]) {
		t.Fatalf("2 pods in z1: %v, want z2's node ahead and z1's alike", got)
	}
	for i := 2; i < 5; i++ {
		nodes[2].AddTask(api.NewTaskInfo(web(i, c)))
		s.NodeChanged(nodes[2])
	}
	if got := scored(t, s, web(9, c), nodes); !(got[0] > got[2]) {
		t.Errorf("then 3 placed in z2: %v, want z1's nodes ahead", got)
	}
}

// Weights 0 turn each score off; with neither there are no scores at all.
func TestZeroWeights(t *testing.T) {
	if s := scoresOn(t, api.InterPodWeights{}); s != nil {
		t.Errorf("no weight: %v, want no scores", s)
	}
	nodes := session(node("a", zone, "z1"), node("b", zone, "z2"))
	nodes[0].AddTask(api.NewTaskInfo(st.Pod("ps-0", "1", "").Label("role", "ps").Obj()))
	both := st.Pod("worker", "1", "").Label("app", "web").
		PreferredPodAffinity(50, st.PodAffinityTerm(zone, ps)).
		TopologySpread(st.SoftSpreadConstraint(1, zone, map[string]string{"role": "ps"})).Obj()
	for _, tc := range []struct {
		weights api.InterPodWeights
		want    string
	}{
		{api.InterPodWeights{Affinity: 1}, "[100 0]"},
		{api.InterPodWeights{Spread: 1}, "[0 100]"},
		{api.InterPodWeights{Affinity: 1, Spread: 1}, "[100 100]"},
	} {
		if got := scored(t, scoresOn(t, tc.weights), both, nodes); fmt.Sprint(got) != tc.want {
			t.Errorf("%+v: %v, want %s", tc.weights, got, tc.want)
		}
	}
}

// A pod without preferred terms or ScheduleAnyway constraints, when no placed pod has scoring
// terms, is not scored: no plugin is built, no node's pods are listed.
func TestNoPreferencesCostNothing(t *testing.T) {
	s := scoresOn(t, api.InterPodWeights{Affinity: 2, Spread: 2})
	nodes := session(node("a", zone, "z1"), node("b", zone, "z2"))
	nodes[0].AddTask(api.NewTaskInfo(worker(0)))
	if got := scored(t, s, st.Pod("plain", "1", "").Label("job", "train").Obj(), nodes); fmt.Sprint(got) != "[0 0]" {
		t.Errorf("scores %v, want none", got)
	}
	if len(s.views) != 0 {
		t.Errorf("%d nodes viewed, want none", len(s.views))
	}
}

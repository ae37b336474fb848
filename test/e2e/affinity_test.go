//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
)

// labelled gives a pod labels.
func labelled(labels map[string]string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		if p.Labels == nil {
			p.Labels = map[string]string{}
		}
		maps.Copy(p.Labels, labels)
	}
}

// podTerm is a pod affinity term over topologyKey for pods with labels.
func podTerm(topologyKey string, labels map[string]string) corev1.PodAffinityTerm {
	return corev1.PodAffinityTerm{TopologyKey: topologyKey, LabelSelector: &metav1.LabelSelector{MatchLabels: labels}}
}

// antiAffinity keeps a pod off any node holding a pod with labels.
func antiAffinity(labels map[string]string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{podTerm(corev1.LabelHostname, labels)}}}
	}
}

// The filters and scores kube-scheduler's InterPodAffinity and PodTopologySpread decide, on
// kwok vGPU nodes in three zones under the chart's configuration (binpack, which would pile
// pods on the fullest node): an 8-pod gang with "one per node" anti-affinity lands on 8
// nodes; pods spread over zones with skew 1 keep it as each is added; a placed pod's
// anti-affinity keeps a newcomer off its node; preferred affinity pulls a worker onto its
// parameter server's empty node, away from the fuller nodes binpack prefers.
func TestAffinityAndSpreadOnVGPUNodes(t *testing.T) {
	e := newSchedulerEnv(t)
	ctx := context.Background()
	const zones, perZone = 3, 3
	zoneOf := map[string]string{}
	for z := range zones {
		for i := range perZone {
			name := fmt.Sprintf("z%d-%d", z, i)
			e.gpuNode(name, 2, 10, 24576, 0)
			e.labelNode(name, corev1.LabelTopologyZone, fmt.Sprintf("%s-z%d", e.ns, z))
			zoneOf[e.name+"-"+name] = fmt.Sprint(z)
		}
	}
	e.scheduler(chartConf(t))

	// One worker per node, the gang whole.
	workers := map[string]string{"app": "workers"}
	e.vgpuGangOfClass("workers", "", "", 8, 8, 1000, 0, labelled(workers), antiAffinity(workers))
	e.waitBound("workers-", 8, 60*time.Second)
	if nodes := e.podsPerNode("workers-"); len(nodes) != 8 {
		t.Errorf("workers on %d nodes, want 8: %v", len(nodes), nodes)
	}

	// Zone spread of skew 1, one pod at a time.
	spread := map[string]string{"app": "spread"}
	constraint := func(p *corev1.Pod) {
		p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone,
			WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: &metav1.LabelSelector{MatchLabels: spread}}}
	}
	for i := range 5 {
		name := fmt.Sprintf("spread%d", i)
		e.vgpuGangOfClass(name, "", "", 1, 1, 1000, 0, labelled(spread), constraint)
		podPhase(t, e.cs, e.ns, name+"-0", corev1.PodRunning, 60*time.Second)
		perZoneCount := map[string]int{}
		for node, n := range e.podsPerNode("spread") {
			perZoneCount[zoneOf[node]] += n
		}
		counts := make([]int, zones)
		for z := range zones {
			counts[z] = perZoneCount[fmt.Sprint(z)]
		}
		if skew := slices.Max(counts) - slices.Min(counts); skew > 1 {
			t.Errorf("after %d spread pods, per zone %v: skew %d, want at most 1", i+1, counts, skew)
		}
	}

	// A placed pod's anti-affinity repels a newcomer that may go only to its node.
	noisy := map[string]string{"team": "noisy"}
	e.vgpuGangOfClass("loner", "", "", 1, 1, 1000, 0, antiAffinity(noisy))
	loner := podPhase(t, e.cs, e.ns, "loner-0", corev1.PodRunning, 60*time.Second)
	onLonersNode := func(p *corev1.Pod) {
		p.Spec.NodeSelector = map[string]string{corev1.LabelHostname: loner.Spec.NodeName}
	}
	e.vgpuGangOfClass("noisy", "", "", 1, 1, 1000, 0, labelled(noisy), onLonersNode)
	const repelled = "didn't satisfy existing pods anti-affinity rules"
	pg := e.podGroup("noisy", 30*time.Second, "Unschedulable: "+repelled, func(pg *schedulingv1beta1.PodGroup) bool {
		c := condition(pg, schedulingv1beta1.PodGroupUnschedulableType)
		return c != nil && strings.Contains(c.Message, repelled)
	})
	t.Logf("PodGroup noisy: %s", condition(pg, schedulingv1beta1.PodGroupUnschedulableType).Message)
	if bound, _, err := e.boundPods(ctx, "noisy-"); err != nil || bound != 0 {
		t.Errorf("noisy: %d pods bound (%v), want none", bound, err)
	}

	// Preferred affinity: the worker follows its parameter server to an empty node.
	used := e.podsPerNode("")
	var empty string
	for node := range zoneOf {
		if used[node] == 0 {
			empty = node
			break
		}
	}
	if empty == "" {
		t.Fatalf("no empty node left: %v", used)
	}
	ps := map[string]string{"app": "ps"}
	e.vgpuGangOfClass("ps", "", "", 1, 1, 1000, 0, labelled(ps), func(p *corev1.Pod) {
		p.Spec.NodeSelector = map[string]string{corev1.LabelHostname: empty}
	})
	podPhase(t, e.cs, e.ns, "ps-0", corev1.PodRunning, 60*time.Second)
	e.vgpuGangOfClass("trainer", "", "", 1, 1, 1000, 0, func(p *corev1.Pod) {
		p.Spec.Affinity = &corev1.Affinity{PodAffinity: &corev1.PodAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{
			{Weight: 100, PodAffinityTerm: podTerm(corev1.LabelHostname, ps)}}}}
	})
	if pod := podPhase(t, e.cs, e.ns, "trainer-0", corev1.PodRunning, 60*time.Second); pod.Spec.NodeName != empty {
		t.Errorf("trainer-0 on %s, want %s beside its parameter server (pods per node: %v)", pod.Spec.NodeName, empty, e.podsPerNode(""))
	}
}

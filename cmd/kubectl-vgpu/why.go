package main

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	v1helper "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/vgpu"
)

// whyTarget is what "why" explains: a pod, or a PodGroup and its pods.
type whyTarget struct {
	podGroup bool
	name     string
}

// parseWhyTarget reads POD, pod/NAME or podgroup/NAME, with the kinds' kubectl spellings.
func parseWhyTarget(arg string) (whyTarget, error) {
	kind, name, typed := strings.Cut(arg, "/")
	if !typed {
		return whyTarget{name: arg}, nil
	}
	if name != "" {
		switch kind {
		case "pod", "pods", "po":
			return whyTarget{name: name}, nil
		case "podgroup", "podgroups", "pg":
			return whyTarget{podGroup: true, name: name}, nil
		}
	}
	return whyTarget{}, fmt.Errorf("why %q: want POD, pod/NAME or podgroup/NAME", arg)
}

// diagnosis is what "why" found about a PodGroup and the pods asked about.
type diagnosis struct {
	group *schedulingv1beta1.PodGroup
	// pods are the pod asked about, or the PodGroup's pods in name order.
	pods []corev1.Pod
	// events are the PodGroup's and the pods' scheduling Events, newest last; eventsUnread
	// says they could not be listed.
	events       []objectEvent
	eventsUnread bool
	// placements are the vGPUs of the pods that hold some, by pod name.
	placements map[string][]podVGPU
	// closest are, for each distinct request of the pending vGPU pods, the GPUs that came
	// closest.
	closest []closestGPUsFor
}

// closestGPUsFor is the GPUs that came closest to one container request of some pods.
type closestGPUsFor struct {
	pods    []string
	request vgpu.ContainerRequest
	gpus    []gpuFit
}

// explainWait prints why the target waits, or where it runs.
func explainWait(ctx context.Context, c clients, namespace string, target whyTarget, now time.Time, stdout, stderr io.Writer) error {
	d, err := findGroup(ctx, c, namespace, target)
	if err != nil {
		return err
	}
	var warnings []string
	if d.events, err = groupEvents(ctx, c, d); err != nil {
		d.eventsUnread = true
		warnings = append(warnings, "Events not shown: "+err.Error())
	}
	vgpuWarnings, err := d.measureVGPUs(ctx, c)
	if err != nil {
		return err
	}
	warn(stderr, append(warnings, vgpuWarnings...))
	return printDiagnosis(stdout, d, now)
}

// findGroup reads the target's PodGroup and pods.
func findGroup(ctx context.Context, c clients, namespace string, target whyTarget) (*diagnosis, error) {
	d := &diagnosis{}
	if target.podGroup {
		group, err := c.volcano.SchedulingV1beta1().PodGroups(namespace).Get(ctx, target.name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("podgroup %q not found in namespace %q", target.name, namespace)
		}
		if err != nil {
			return nil, explain(err, "get", "podgroups", namespace)
		}
		pods, err := listPods(ctx, c.kube, namespace)
		if err != nil {
			return nil, err
		}
		for _, pod := range pods {
			if pod.Annotations[schedulingv1beta1.KubeGroupNameAnnotationKey] == group.Name {
				d.pods = append(d.pods, pod)
			}
		}
		sort.Slice(d.pods, func(i, j int) bool { return d.pods[i].Name < d.pods[j].Name })
		d.group = group
		return d, nil
	}
	pod, err := c.kube.CoreV1().Pods(namespace).Get(ctx, target.name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("pod %q not found in namespace %q", target.name, namespace)
	}
	if err != nil {
		return nil, explain(err, "get", "pods", namespace)
	}
	name := pod.Annotations[schedulingv1beta1.KubeGroupNameAnnotationKey]
	if name == "" {
		return nil, fmt.Errorf("pod %s/%s has no PodGroup (annotation %s): Volcano gives one to the pods whose schedulerName is a Volcano scheduler's, and this pod's is %q",
			pod.Namespace, pod.Name, schedulingv1beta1.KubeGroupNameAnnotationKey, pod.Spec.SchedulerName)
	}
	group, err := c.volcano.SchedulingV1beta1().PodGroups(namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("pod %s/%s names PodGroup %q (annotation %s), which is not found in namespace %q: the pod is not scheduled until it exists",
			pod.Namespace, pod.Name, name, schedulingv1beta1.KubeGroupNameAnnotationKey, namespace)
	}
	if err != nil {
		return nil, explain(err, "get", "podgroups", namespace)
	}
	d.group, d.pods = group, []corev1.Pod{*pod}
	return d, nil
}

// groupEvents are the PodGroup's Events and those the pods' scheduler put on the pods (the
// kubelet's, about images and containers, say nothing of scheduling).
func groupEvents(ctx context.Context, c clients, d *diagnosis) ([]objectEvent, error) {
	g := d.group
	events, err := eventsAbout(ctx, c.kube, involved{kind: "PodGroup", namespace: g.Namespace, name: g.Name, uid: g.UID, word: "podgroup"}, nil)
	if err != nil {
		return nil, err
	}
	for i := range d.pods {
		pod := &d.pods[i]
		fromScheduler := func(e *corev1.Event) bool {
			return e.Source.Component == pod.Spec.SchedulerName || e.ReportingController == pod.Spec.SchedulerName
		}
		podEvents, err := eventsAbout(ctx, c.kube, involved{kind: "Pod", namespace: pod.Namespace, name: pod.Name, uid: pod.UID, word: "pod"}, fromScheduler)
		if err != nil {
			return nil, err
		}
		events = append(events, podEvents...)
	}
	return newestLast(events), nil
}

// measureVGPUs reads the vGPUs of the bound pods and, for the pending ones, measures every
// GPU against their requests on the ledger "nodes" prints (bookGPUs), which needs every pod.
func (d *diagnosis) measureVGPUs(ctx context.Context, c clients) ([]string, error) {
	nodes, warnings, err := listVGPUNodes(ctx, c.kube)
	if err != nil {
		return nil, err
	}
	byName := make(map[string]*vgpuNode, len(nodes))
	for _, n := range nodes {
		byName[n.name] = n
	}
	d.placements = map[string][]podVGPU{}
	requests := map[string][]vgpu.ContainerRequest{}
	pending := false
	for i := range d.pods {
		pod := &d.pods[i]
		rows, r, err := vgpusOf(pod, byName)
		if err != nil {
			warnings = append(warnings, err.Error())
			continue
		}
		if len(r) == 0 {
			continue
		}
		if len(nodes) == 0 {
			return nil, errNoVGPUNodes
		}
		if pod.Spec.NodeName != "" {
			d.placements[pod.Name] = rows
			continue
		}
		requests[pod.Name] = r
		pending = true
	}
	if !pending {
		return warnings, nil
	}
	all, err := listPods(ctx, c.kube, "")
	if err != nil {
		return nil, err
	}
	gpus, ledgerWarnings := bookGPUs(nodes, all)
	d.closest = closestForPending(d.pods, requests, gpus, byName)
	return append(warnings, ledgerWarnings...), nil
}

// closestForPending measures the GPUs against each distinct container request of the
// pending pods (requests holds theirs only); the pods of one task ask alike, and are listed
// together.
func closestForPending(pods []corev1.Pod, requests map[string][]vgpu.ContainerRequest, gpus []gpuBooking, nodes map[string]*vgpuNode) []closestGPUsFor {
	var out []closestGPUsFor
	seen := map[vgpu.ContainerRequest]int{}
	for i := range pods {
		pod := &pods[i]
		var eligible []gpuBooking
		if len(requests[pod.Name]) > 0 {
			eligible = gpusFor(pod, gpus, nodes)
		}
		for _, r := range requests[pod.Name] {
			if k, ok := seen[r]; ok {
				out[k].pods = append(out[k].pods, pod.Name)
				continue
			}
			seen[r] = len(out)
			out = append(out, closestGPUsFor{pods: []string{pod.Name}, request: r, gpus: closestGPUs(eligible, r)})
		}
	}
	return out
}

// gpusFor are the GPUs of the nodes the pod may run on, as far as its spec says: its node
// selector and required node affinity, and the nodes' NoSchedule and NoExecute taints it
// does not tolerate. A GPU elsewhere is no near miss.
func gpusFor(pod *corev1.Pod, gpus []gpuBooking, nodes map[string]*vgpuNode) []gpuBooking {
	affinity := nodeaffinity.GetRequiredNodeAffinity(pod)
	var out []gpuBooking
	for _, g := range gpus {
		n := nodes[g.Node]
		if n == nil || n.node == nil {
			continue
		}
		if ok, err := affinity.Match(n.node); err != nil || !ok {
			continue
		}
		_, untolerated := v1helper.FindMatchingUntoleratedTaint(klog.Background(), n.node.Spec.Taints, pod.Spec.Tolerations, func(t *corev1.Taint) bool {
			return t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute
		}, false)
		if !untolerated {
			out = append(out, g)
		}
	}
	return out
}

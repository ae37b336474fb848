package main

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/duration"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/vgpu"
)

// printDiagnosis writes, in the order a user reads them: the PodGroup and its conditions,
// each pod with its PodScheduled condition and where it runs, the last Events, then for each
// pending vGPU request the GPUs that came closest and what each lacks. now is the time the
// Events' ages count from.
func printDiagnosis(w io.Writer, d *diagnosis, now time.Time) error {
	g := d.group
	line := fmt.Sprintf("PodGroup %s/%s: %s in queue %s, minMember %d", g.Namespace, g.Name, orNone(string(g.Status.Phase)), g.Spec.Queue, g.Spec.MinMember)
	if g.Spec.MinResources != nil {
		line += ", minResources " + formatResources(*g.Spec.MinResources)
	}
	fmt.Fprintln(w, line)
	if len(g.Status.Conditions) == 0 {
		fmt.Fprintln(w, "  no conditions")
	} else {
		rows := [][]string{{"  TYPE", "STATUS", "REASON", "MESSAGE"}}
		for _, c := range g.Status.Conditions {
			rows = append(rows, []string{"  " + string(c.Type), string(c.Status), orNone(c.Reason), orNone(c.Message)})
		}
		if err := printTable(w, rows); err != nil {
			return err
		}
	}
	fmt.Fprintln(w)
	if len(d.pods) == 0 {
		fmt.Fprintln(w, "No pods in the PodGroup.")
	}
	for i := range d.pods {
		fmt.Fprintln(w, podLine(&d.pods[i]))
		for _, v := range d.placements[d.pods[i].Name] {
			fmt.Fprintf(w, "  %s: %s (index %s), %d MiB, %d cores\n", v.Container, v.GPU, indexText(v.Index), v.MemoryMiB, v.Cores)
		}
	}
	if !d.eventsUnread {
		fmt.Fprintln(w)
		if err := printEvents(w, d.events, now); err != nil {
			return err
		}
	}
	for _, c := range d.closest {
		fmt.Fprintf(w, "\nClosest GPUs for %s, container %s (%s):\n", strings.Join(c.pods, ", "), c.request.ContainerName, formatRequest(c.request))
		for _, f := range c.gpus {
			verdict := strings.Join(f.lacks, "; ")
			if len(f.lacks) == 0 {
				verdict = fmt.Sprintf("fits, %d MiB free, %d MiB asked", f.freeMiB, f.askedMiB)
			}
			fmt.Fprintf(w, "  %s on %s: %s\n", f.gpu.UUID, f.gpu.Node, verdict)
		}
	}
	return nil
}

// podLine is the pod's phase, node and PodScheduled condition, the scheduler's last word on it.
func podLine(pod *corev1.Pod) string {
	line := fmt.Sprintf("Pod %s/%s: %s", pod.Namespace, pod.Name, orNone(string(pod.Status.Phase)))
	if pod.Spec.NodeName != "" {
		line += " on " + pod.Spec.NodeName
	}
	for _, c := range pod.Status.Conditions {
		if c.Type != corev1.PodScheduled {
			continue
		}
		line += fmt.Sprintf(", PodScheduled %s", c.Status)
		if c.Reason != "" {
			line += " (" + c.Reason + ")"
		}
		if c.Message != "" {
			line += ": " + c.Message
		}
		return line
	}
	return line + ", no PodScheduled condition yet"
}

func printEvents(w io.Writer, events []objectEvent, now time.Time) error {
	if len(events) == 0 {
		_, err := fmt.Fprintln(w, "No scheduling Events.")
		return err
	}
	fmt.Fprintln(w, "Events, newest last:")
	rows := [][]string{{"  AGE", "TYPE", "REASON", "OBJECT", "MESSAGE"}}
	for _, e := range events {
		age := duration.HumanDuration(now.Sub(e.last))
		if e.count > 1 {
			age += fmt.Sprintf(" (x%d)", e.count)
		}
		rows = append(rows, []string{"  " + age, e.eventType, e.reason, e.object, e.message})
	}
	return printTable(w, rows)
}

// formatRequest says what one vGPU of r asks, in the units of the pod's own resources.
func formatRequest(r vgpu.ContainerRequest) string {
	memory := fmt.Sprintf("%d %s", r.Memory, vgpu.DefaultMemoryResource)
	if r.Memory == 0 {
		memory = fmt.Sprintf("%d%% of a GPU's memory", r.MemoryPercentage)
	}
	return fmt.Sprintf("%s, each %s, %d cores", plural(int(r.Count), "vGPU"), memory, r.Cores)
}

// formatResources writes a resource list in name order, as "cpu 8, memory 64Gi".
func formatResources(list corev1.ResourceList) string {
	names := make([]string, 0, len(list))
	for name := range list {
		names = append(names, string(name))
	}
	sort.Strings(names)
	parts := make([]string, len(names))
	for i, name := range names {
		q := list[corev1.ResourceName(name)]
		parts[i] = name + " " + q.String()
	}
	return strings.Join(parts, ", ")
}

package cache

import (
	"maps"
	"slices"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
)

// trimmer is the informers' transform: it makes each object as small as the scheduler can
// use before the informer stores it, which is most of a large cluster's cache.
type trimmer struct {
	mu sync.Mutex
	// requirements holds one copy of each containers' resource requirements seen, by
	// requirementsKey. The pods of a job, and mostly of a whole workload, ask the same, and
	// each decoded copy is two maps of quantities: about a kilobyte a container, an eighth
	// of the scheduler's heap at 50,000 pods. Informers' objects are never modified
	// (client-go's rule; nothing here writes a pod's resources), so the pods can share one.
	requirements map[string]corev1.ResourceRequirements
	// strings holds one copy of each pod annotation's key, and of each value short enough
	// to repeat (node, PodGroup, phase): annotations were a sixth of a cached pod, the same
	// few keys on every pod a quarter of that, and a gang's pods share their PodGroup and
	// often their node.
	strings map[string]string
}

// maxSharedRequirements and maxSharedStrings bound the copies kept. A cluster with more
// distinct ones starts over: pods keep what they share, later ones share anew.
const (
	maxSharedRequirements = 1024
	maxSharedStrings      = 1 << 16
)

// maxSharedResources: requirements naming more resources (limits and requests together)
// are the container's own. A kept copy outlives its pods until the next start-over, so a
// pod author who creates and deletes pods with long distinct lists must not be able to
// park them in the scheduler: with this bound all kept copies stay under about 12 MiB
// (names of up to 317 bytes).
const maxSharedResources = 16

// maxSharedValueLen: longer annotation values (a pod's device assignment) are its own.
const maxSharedValueLen = 64

func newTrimmer() *trimmer {
	return &trimmer{requirements: map[string]corev1.ResourceRequirements{}, strings: map[string]string{}}
}

// trim drops what the scheduler never reads: every object's managedFields (a PodGroup's,
// written by its controller and by us, is larger than the rest of it); a pod's volumes other
// than those the volume plugins read (schedulingVolumes) and its containers' commands,
// environment, mounts and probes (pods are only ever patched and bound, never written back
// whole), its containers' statuses, addresses and conditions other than PodScheduled; nodes'
// condition heartbeat times. Equal resource requirements of pods' containers, pods' equal
// annotation keys and short values, and nodes' image names (which nodeorder's image locality
// reads; most nodes list the same images) become one shared copy.
// A pod's namespace, labels, affinity and topology spread constraints stay whole:
// kube-scheduler's InterPodAffinity and PodTopologySpread read them, of the pod being placed
// and of every pod already placed.
func (t *trimmer) trim(obj any) (any, error) {
	if m, err := meta.Accessor(obj); err == nil {
		m.SetManagedFields(nil)
	}
	switch o := obj.(type) {
	case *corev1.Pod:
		o.Spec.Volumes = schedulingVolumes(o.Spec.Volumes)
		o.Annotations = t.shareAnnotations(o.Annotations)
		// Of the status, the scheduler reads the phase, the reason, the nominated node and
		// its own PodScheduled condition, which it patches by type.
		o.Status.ContainerStatuses, o.Status.InitContainerStatuses, o.Status.EphemeralContainerStatuses = nil, nil, nil
		o.Status.HostIPs, o.Status.PodIPs, o.Status.HostIP, o.Status.PodIP = nil, nil, "", ""
		o.Status.Conditions = slices.DeleteFunc(o.Status.Conditions, func(c corev1.PodCondition) bool { return c.Type != corev1.PodScheduled })
		for _, containers := range [][]corev1.Container{o.Spec.InitContainers, o.Spec.Containers} {
			for i := range containers {
				c := &containers[i]
				c.Command, c.Args, c.Env, c.EnvFrom, c.VolumeMounts, c.VolumeDevices = nil, nil, nil, nil, nil, nil
				c.LivenessProbe, c.ReadinessProbe, c.StartupProbe, c.Lifecycle = nil, nil, nil, nil
				t.shareRequirements(&c.Resources)
			}
		}
	case *corev1.Node:
		t.shareImageNames(o.Status.Images)
		// The kubelet rewrites its conditions' heartbeat times every few minutes with nothing
		// else changed; nobody here reads them (see counted.OnUpdate).
		for i := range o.Status.Conditions {
			o.Status.Conditions[i].LastHeartbeatTime = metav1.Time{}
		}
	}
	return obj, nil
}

// shareRequirements replaces r by the copy kept of equal requirements, or keeps r as that copy.
func (t *trimmer) shareRequirements(r *corev1.ResourceRequirements) {
	if n := len(r.Limits) + len(r.Requests); len(r.Claims) > 0 || n == 0 || n > maxSharedResources {
		return
	}
	key := requirementsKey(r)
	t.mu.Lock()
	defer t.mu.Unlock()
	if kept, ok := t.requirements[key]; ok {
		*r = kept
		return
	}
	if len(t.requirements) >= maxSharedRequirements {
		clear(t.requirements)
	}
	t.requirements[key] = *r
}

// requirementsKey spells the limits and then the requests, each sorted by resource name,
// with their quantities in canonical form: decoded quantities keep nothing else, so equal
// keys are requirements no reader can tell apart.
func requirementsKey(r *corev1.ResourceRequirements) string {
	var b strings.Builder
	for _, list := range []corev1.ResourceList{r.Limits, r.Requests} {
		for _, name := range slices.Sorted(maps.Keys(list)) {
			q := list[name]
			b.WriteString(string(name))
			b.WriteByte('=')
			b.WriteString(q.String())
			b.WriteByte(' ')
		}
		b.WriteByte(';')
	}
	return b.String()
}

// shareAnnotations rebuilds the annotations with the kept copies of their keys and short
// values.
func (t *trimmer) shareAnnotations(annotations map[string]string) map[string]string {
	if len(annotations) == 0 {
		return annotations
	}
	shared := make(map[string]string, len(annotations))
	t.mu.Lock()
	defer t.mu.Unlock()
	for k, v := range annotations {
		k = t.shareString(k)
		if len(v) <= maxSharedValueLen {
			v = t.shareString(v)
		}
		shared[k] = v
	}
	return shared
}

// shareImageNames replaces each image name by its kept copy.
func (t *trimmer) shareImageNames(images []corev1.ContainerImage) {
	if len(images) == 0 {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for i := range images {
		for j, name := range images[i].Names {
			images[i].Names[j] = t.shareString(name)
		}
	}
}

// shareString returns the kept copy of s, keeping s if there is none. Called under mu.
func (t *trimmer) shareString(s string) string {
	if kept, ok := t.strings[s]; ok {
		return kept
	}
	if len(t.strings) >= maxSharedStrings {
		clear(t.strings)
	}
	t.strings[s] = s
	return s
}

// schedulingVolumes are the pod's volumes that kube-scheduler's volume plugins read
// (api.SchedulingVolume: claims, and inline disks that count against attach limits or cannot
// be shared); nil, sharing nothing, when it has none, as most pods have only ConfigMaps,
// Secrets and projected tokens.
func schedulingVolumes(volumes []corev1.Volume) []corev1.Volume {
	var kept []corev1.Volume
	for i := range volumes {
		if api.SchedulingVolume(&volumes[i]) {
			kept = append(kept, volumes[i])
		}
	}
	return kept
}

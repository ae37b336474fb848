package consolidate_test

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework/frameworktest"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/plugins/deviceshare"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/testing/st"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/vgpu"
	"github.com/volcano-vgpu/volcano-vgpu/test/minresources"
)

// BenchmarkConsolidateFragmentedCluster is issue 52's benchmark, in process: 100 nodes of 8
// GPUs of 24 GiB (split 10) left fragmented by churn (every GPU holds 2 to 4 slices of 2 to 8
// GiB at random, most of them a Deployment's, a tenth bare pods and a tenth 2-pod gangs at
// their minimum), then 50 single-pod jobs of a whole GPU (24,576 MiB, 100 % of its cores).
// Cycles of the chart's configuration run, with and without consolidate, as a cluster would
// run them: an evicted pod is gone by the next cycle and its ReplicaSet's replacement waits
// as a new pod; a bound pod runs on the GPUs its assignment names. It reports the whole-GPU
// jobs bound, the pods moved per job bound against the fewest slices any GPU held at the
// start (a lower bound on one job's moves), the cycles until nothing more moves or binds, the
// mean cycle's wall time, and the GPUs ever over their memory, cores or split (must be 0),
// checked after every cycle. Replacements that find no room are counted too.
//
//	go test ./pkg/scheduler/actions/consolidate/ -run '^$' -bench BenchmarkConsolidateFragmentedCluster -benchtime 1x
func BenchmarkConsolidateFragmentedCluster(b *testing.B) {
	for _, actions := range []string{withConsolidate, "enqueue, allocate, backfill"} {
		name := map[bool]string{true: "consolidate", false: "without"}[actions == withConsolidate]
		b.Run(name, func(b *testing.B) {
			var r simResult
			for range b.N {
				r = runSim(b, actions, 100, 8, 50)
			}
			if r.over > 0 {
				b.Fatalf("%d GPUs over their memory, cores or split at some cycle", r.over)
			}
			b.ReportMetric(float64(r.bound), "jobs-bound")
			b.ReportMetric(r.movesPerJob(), "moves/job")
			b.ReportMetric(float64(r.fewest), "fewest-slices")
			b.ReportMetric(float64(r.cycles), "cycles")
			b.ReportMetric(float64(r.cycleTime.Milliseconds())/float64(max(r.cycles, 1)), "ms/cycle")
			b.ReportMetric(float64(r.stranded), "replacements-waiting")
			b.ReportMetric(float64(r.over), "gpus-over")
		})
	}
}

// simResult is what one simulated run did.
type simResult struct {
	bound, moved, cycles, over, stranded, fewest int
	cycleTime                                    time.Duration
}

func (r simResult) movesPerJob() float64 {
	if r.bound == 0 {
		return 0
	}
	return float64(r.moved) / float64(r.bound)
}

// sim is the API objects of a simulated cluster.
type sim struct {
	nodes     []*corev1.Node
	podGroups map[string]*schedulingv1beta1.PodGroup
	pods      map[string]*corev1.Pod
	gpus      map[string]gpuInfo
	created   int
}

type gpuInfo struct {
	node   string
	memory int32
}

const simGPUMiB = 24576

// newSim builds the fragmented cluster of nodes x gpus and the waiting whole-GPU jobs.
func newSim(b testing.TB, nodes, gpus, jobs int, rng *rand.Rand) (*sim, int) {
	s := &sim{podGroups: map[string]*schedulingv1beta1.PodGroup{}, pods: map[string]*corev1.Pod{}, gpus: map[string]gpuInfo{}}
	fewest := 1 << 30
	for n := range nodes {
		name := fmt.Sprintf("n%03d", n)
		devices := make([]vgpu.NodeDevice, gpus)
		for g := range devices {
			devices[g] = vgpu.NodeDevice{UUID: fmt.Sprintf("GPU-%03d%05d-0000-0000-0000-000000000000", n, g), Count: 10, Memory: simGPUMiB,
				Type: "NVIDIA-NVIDIA A10", Healthy: true, Mode: vgpu.ModeHAMiCore}
			s.gpus[devices[g].UUID] = gpuInfo{node: name, memory: simGPUMiB}
		}
		register, err := vgpu.EncodeNodeDevices(devices)
		if err != nil {
			b.Fatal(err)
		}
		allocatable := st.Resources("128", "1Ti", "pods", "110", string(vgpu.DefaultCountResource), fmt.Sprint(10*gpus),
			string(vgpu.DefaultMemoryResource), fmt.Sprint(simGPUMiB*gpus), string(vgpu.DefaultCoresResource), fmt.Sprint(100*gpus))
		s.nodes = append(s.nodes, st.MakeNode().Name(name).Annotation(vgpu.NodeDevicesAnnotation, register).
			Allocatable(allocatable).Capacity(allocatable).Obj())
		for _, d := range devices {
			slices := 2 + rng.IntN(3)
			fewest = min(fewest, slices)
			free := int32(simGPUMiB)
			for range slices {
				memory := int32(2048 * (1 + rng.IntN(4)))
				memory = min(memory, free-1024)
				free -= memory
				kind := rng.IntN(10)
				switch {
				case kind == 0:
					s.addRunning(b, "bare", bare, 1, memory, d.UUID)
				case kind == 1:
					s.addRunning(b, "gang", statefulSet, 1, memory, d.UUID)
				default:
					s.addRunning(b, "web", replicaSet, 1, memory, d.UUID)
				}
			}
		}
	}
	for range jobs {
		s.addPod(b, "whole", bare, 1, simGPUMiB, 100, "")
	}
	return s, fewest
}

// addRunning adds a running pod of memory MiB on the GPU (its own PodGroup, minMember min).
func (s *sim) addRunning(b testing.TB, prefix string, o owner, min int32, memory int32, gpu string) {
	s.addPod(b, prefix, o, min, memory, 0, gpu)
}

// addPod adds a pod of prefix-<n> in a PodGroup of its own (minMember min), asking 1 cpu,
// 1Gi and one vGPU of memory MiB and cores %: running on gpu, or pending when gpu is "".
func (s *sim) addPod(b testing.TB, prefix string, o owner, min int32, memory, cores int32, gpu string) {
	s.created++
	name := fmt.Sprintf("%s-%05d", prefix, s.created)
	asks := st.Resources("1", "1Gi", string(vgpu.DefaultCountResource), "1", string(vgpu.DefaultMemoryResource), fmt.Sprint(memory))
	if cores > 0 {
		asks[vgpu.DefaultCoresResource] = *resource.NewQuantity(int64(cores), resource.DecimalSI)
	}
	w := st.MakePod().Namespace("ns").Name(name).UID("uid-" + name).Group(name).SchedulerName("volcano").Created(s.created).
		Containers(corev1.Container{Name: "main", Resources: corev1.ResourceRequirements{Limits: asks, Requests: asks.DeepCopy()}})
	if o != bare {
		controller := true
		w.Owner(metav1.OwnerReference{APIVersion: "apps/v1", Kind: string(o), Name: prefix, UID: types.UID("owner-" + prefix), Controller: &controller})
	}
	pod := w.Obj()
	phase := schedulingv1beta1.PodGroupInqueue
	if gpu != "" {
		s.run(b, pod, gpu, memory)
		phase = schedulingv1beta1.PodGroupRunning
	}
	s.pods[name] = pod
	pg := st.MakePodGroup().Namespace("ns").Name(name).MinMember(min).Queue("a").
		MinResources(minresources.Of([]*corev1.Pod{pod}, int(min))).Phase(phase).Obj()
	pg.CreationTimestamp = st.At(s.created)
	s.podGroups[name] = pg
}

// run puts the pod on the GPU, as a bound pod with its assignment.
func (s *sim) run(b testing.TB, pod *corev1.Pod, gpu string, memory int32) {
	assignment, err := vgpu.PodDevices{{{UUID: gpu, Type: vgpu.DeviceTypeNVIDIA, UsedMemory: memory}}}.Encode()
	if err != nil {
		b.Fatal(err)
	}
	node := s.gpus[gpu].node
	pod.Spec.NodeName, pod.Status.Phase = node, corev1.PodRunning
	setAnnotations(pod, map[string]string{vgpu.AssignedNodeAnnotation: node, vgpu.AssignedDevicesAnnotation: assignment,
		vgpu.DevicesToAllocateAnnotation: "", vgpu.BindPhaseAnnotation: vgpu.BindPhaseSuccess})
}

func setAnnotations(pod *corev1.Pod, annotations map[string]string) {
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	for k, v := range annotations {
		pod.Annotations[k] = v
	}
}

// snapshot is the cluster as the cache would hand it to a session.
func (s *sim) snapshot() *api.ClusterInfo {
	objs := frameworktest.Objects{Nodes: s.nodes, Queues: []*schedulingv1beta1.Queue{st.MakeQueue().Name("a").Weight(1).Obj()}}
	objs.Queues[0].Status.State = schedulingv1beta1.QueueStateOpen
	for _, pg := range s.podGroups {
		objs.PodGroups = append(objs.PodGroups, pg)
	}
	for _, p := range s.pods {
		objs.Pods = append(objs.Pods, p)
	}
	ci := objs.ClusterInfo()
	for _, n := range ci.NodeList {
		n.Devices = map[string]api.Devices{deviceshare.PluginName: deviceshare.NewDeriver().Derive(n)}
	}
	return ci
}

// over counts the GPUs whose running pods book more than its memory, 100 cores or 10 slices.
func (s *sim) over(b testing.TB) int {
	type use struct{ memory, cores, slices int32 }
	used := map[string]use{}
	for _, p := range s.pods {
		if p.Spec.NodeName == "" {
			continue
		}
		pd, err := vgpu.DecodePodDevices(p.Annotations[vgpu.AssignedDevicesAnnotation])
		if err != nil {
			b.Fatalf("pod %s: %v", p.Name, err)
		}
		for _, c := range pd {
			for _, d := range c {
				u := used[d.UUID]
				used[d.UUID] = use{u.memory + d.UsedMemory, u.cores + d.UsedCores, u.slices + 1}
			}
		}
	}
	n := 0
	for uuid, u := range used {
		if u.memory > s.gpus[uuid].memory || u.cores > 100 || u.slices > 10 {
			n++
		}
	}
	return n
}

// runSim runs cycles of actions until one neither binds nor evicts.
func runSim(b testing.TB, actions string, nodes, gpus, jobs int) simResult {
	s, fewest := newSim(b, nodes, gpus, jobs, rand.New(rand.NewPCG(52, 5)))
	r := simResult{fewest: fewest}
	reg := registry()
	cfg := chartConf(b, reg, actions, "    maxMovesPerCycle: 32\n    maxMovesPerHour: 0\n")
	for r.cycles < 100 {
		var evicted []*api.TaskInfo
		cache := &frameworktest.Cache{Snap: s.snapshot(), OnEvict: func(t *api.TaskInfo, _ string) error {
			evicted = append(evicted, t)
			return nil
		}}
		start := time.Now()
		ssn := frameworktest.RunActions(b, cache, cfg, reg)
		framework.CloseSession(ssn)
		r.cycleTime += time.Since(start)
		r.cycles++
		for _, t := range cache.Bound {
			pod := s.pods[t.Name]
			setAnnotations(pod, t.BindAnnotations)
			pod.Spec.NodeName, pod.Status.Phase = t.NodeName, corev1.PodRunning
			if t.Name[:5] == "whole" {
				r.bound++
			}
		}
		for _, t := range evicted {
			pod := s.pods[t.Name]
			delete(s.pods, t.Name)
			delete(s.podGroups, t.Name)
			r.moved++
			// The ReplicaSet or StatefulSet makes a new pod of the same spec.
			memory := vgpuMemoryOf(pod)
			prefix := t.Name[:len(t.Name)-6]
			owner := owner(metav1.GetControllerOf(pod).Kind)
			s.addPod(b, prefix, owner, 1, memory, 0, "")
		}
		if n := s.over(b); n > r.over {
			r.over = n
		}
		if len(cache.Bound) == 0 && len(evicted) == 0 {
			break
		}
	}
	for _, p := range s.pods {
		if p.Spec.NodeName == "" && p.Name[:5] != "whole" {
			r.stranded++
		}
	}
	return r
}

func vgpuMemoryOf(pod *corev1.Pod) int32 {
	q := pod.Spec.Containers[0].Resources.Limits[vgpu.DefaultMemoryResource]
	return int32(q.Value())
}

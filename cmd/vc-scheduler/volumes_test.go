//go:build unix

package main

import (
	"context"
	"fmt"
	"maps"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"
	batchv1alpha1 "volcano.sh/apis/pkg/apis/batch/v1alpha1"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/actions/allocate"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework/frameworktest"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/plugins/deviceshare"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/testing/st"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/volumes"
	"github.com/volcano-vgpu/volcano-vgpu/test/workload"
)

// volumeGang is two nodes of 6 cpu and one 24 GiB GPU split 4, and gang train of 2 pods
// (minMember 2, minResources as Volcano's job controller sets them) of 4 cpu, 16 GiB and one
// 8000 MiB vGPU each: train-0 mounts claim data-0 of a WaitForFirstConsumer class, whose only
// PV is local to node-0000, and train-1 selects node-0001. On node-0001 runs, when
// releasing, a pod being deleted that holds 4 of its cpu. It returns the snapshot and the
// volume plugins' source, its informers synced.
func volumeGang(t *testing.T, releasing bool) (*api.ClusterInfo, *volumes.Source) {
	t.Helper()
	w := &workload.Workload{Name: "volumes", Node: workload.NodeShape{CPU: "6", Memory: "64Gi", Pods: 110, GPUs: 1,
		GPUModel: "NVIDIA A10", GPUMemoryMiB: 24576, Split: 4}}
	ci := nodeCluster(w, 2)
	job := w.Job("ns", "volcano", "train", workload.PodShape{Gang: 2, CPU: "4", Memory: "16Gi", VGPUs: 1, MemoryMiB: 8000})
	job.Pods[0].Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data-0"}}}}
	job.Pods[1].Spec.NodeSelector = map[string]string{corev1.LabelHostname: "node-0001"}
	addJob(ci, job)
	if releasing {
		leaving := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "leaving", UID: "uid-leaving",
			DeletionTimestamp: ptr.To(metav1.Now())},
			Spec: corev1.PodSpec{NodeName: "node-0001", Containers: []corev1.Container{{Name: "main",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")}}}}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning}}
		ci.Nodes["node-0001"].AddTask(api.NewTaskInfo(leaving))
	}
	return ci, startVolumes(t, wffcClass("local"), st.LocalPV("pv-a", "local", "node-0000", "10Gi"), dataClaim("data-0", "local"),
		dataClaim("data-probe", "local"))
}

// wffcClass is a StorageClass of local volumes: WaitForFirstConsumer, no provisioner.
func wffcClass(name string) *storagev1.StorageClass {
	return &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: name},
		Provisioner: "kubernetes.io/no-provisioner", VolumeBindingMode: ptr.To(storagev1.VolumeBindingWaitForFirstConsumer)}
}

// startVolumes is the volume plugins' source over a fake API server holding the objects, its
// informers synced.
func startVolumes(t *testing.T, objects ...runtime.Object) *volumes.Source {
	t.Helper()
	client := fake.NewClientset(objects...)
	factory := informers.NewSharedInformerFactory(client, 0)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	source := volumes.NewSource(client)
	source.Start(ctx, &frameworktest.ComponentCache{Factory: factory})
	if _, err := source.Volumes(api.VolumeChecks{Binding: true, Zone: true, Limits: true}, 600*time.Second); err != nil {
		t.Fatal(err)
	}
	for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			t.Fatalf("informer %v not synced", typ)
		}
	}
	return source
}

// dataClaim is a pending 10 GiB claim of class.
func dataClaim(name, class string) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName: ptr.To(class), Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("10Gi")}}},
		Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimPending}}
}

// pvAAvailable says whether pv-a, as VolumeBinding's assume cache holds it (the API server
// always has it available here), is free for another claim: a pod mounting data-probe fits
// node-0000 only if so.
func pvAAvailable(t *testing.T, source *volumes.Source, nodes []*api.NodeInfo) bool {
	t.Helper()
	v, err := source.Volumes(api.VolumeChecks{Binding: true, Zone: true, Limits: true}, 600*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	probe := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "probe", UID: "uid-probe"},
		Spec: corev1.PodSpec{Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data-probe"}}}}}}
	state, s := v.PreFilter(context.Background(), probe, nodes)
	if s != nil {
		t.Fatalf("PreFilter probe: %v", s)
	}
	for _, n := range nodes {
		if n.Name == "node-0000" {
			return v.Filter(context.Background(), state, n) == nil
		}
	}
	t.Fatal("no node-0000")
	return false
}

// A gang that is only pipelined (train-1 waits for the pod leaving node-0001) keeps its
// placements in the session, uncommitted: the PV its allocated pod reserved is given back in
// the assume cache when the session ends. A gang that is committed keeps its reservation past
// the session's end, for its bind to use; only the bind's step gives it back, once.
func TestUncommittedGangGivesBackItsVolumes(t *testing.T) {
	for _, pipelined := range []bool{true, false} {
		name := map[bool]string{true: "pipelined", false: "committed"}[pipelined]
		t.Run(name, func(t *testing.T) {
			ci, source := volumeGang(t, pipelined)
			registry := newRegistryWith(allocate.DefaultOptions(), sources{devices: deviceshare.NewStaticShared(), vols: source})
			cache := &frameworktest.Cache{Snap: ci}
			ssn := frameworktest.RunActions(t, cache, chartConf(t, registry), registry)
			job := ssn.Jobs["ns/train"]
			if pipelined && (job.TaskCount(api.Allocated) != 1 || job.TaskCount(api.Pipelined) != 1 || len(cache.Bound) != 0) {
				t.Fatalf("allocated %d, pipelined %d, bound %v; want train-0 allocated, train-1 pipelined, nothing bound",
					job.TaskCount(api.Allocated), job.TaskCount(api.Pipelined), cache.Binds())
			}
			if !pipelined && len(cache.Bound) != 2 {
				t.Fatalf("bound %v, want the whole gang", cache.Binds())
			}
			if pvAAvailable(t, source, ssn.NodeList) {
				t.Fatal("pv-a available in the assume cache while train-0 is placed on node-0000")
			}
			framework.CloseSession(ssn)
			if got := pvAAvailable(t, source, ssn.NodeList); got != pipelined {
				t.Fatalf("pv-a available after the session: %v, want %v", got, pipelined)
			}
			if pipelined {
				return
			}
			var step api.ReservingStep
			for _, task := range cache.Bound {
				for _, s := range task.PreBind {
					if r, ok := s.(api.ReservingStep); ok && task.Name == "train-0" {
						step = r
					}
				}
			}
			if step == nil {
				t.Fatal("train-0 was bound without the volume binding step")
			}
			step.Unreserve(context.Background()) // the binder drops the bind: the pod was deleted
			if !pvAAvailable(t, source, ssn.NodeList) {
				t.Error("pv-a still taken after the dropped bind's step gave it back")
			}
		})
	}
}

// Issue 47's per-pod claim case, under the chart's configuration: gang train of 2 pods of one
// role (volcano.sh/task-spec "worker", as a VolcanoJob's task makes them; minMember 2,
// minResources as Volcano's job controller sets them), each of 4 cpu, 16 GiB and one 8000 MiB
// vGPU and mounting a WaitForFirstConsumer claim of its own, data-<i> (a per-pod ephemeral
// volume's shape), whose only PV (the one of its class, local-<i>) is on the other pod's
// node: pv-0 on node-0001, pv-1 on node-0000. Both nodes have room for both pods. The gang is placed whole, each pod on its
// PV's node: allocate's per-role predicate error cache must not refuse train-1 a node for
// train-0's reason (before, the node that refused train-0's claim was skipped for train-1
// too, and the gang waited for ever).
func TestGangWithAClaimPerPodIsPlaced(t *testing.T) {
	w := &workload.Workload{Name: "volumes", Node: workload.NodeShape{CPU: "16", Memory: "64Gi", Pods: 110, GPUs: 1,
		GPUModel: "NVIDIA A10", GPUMemoryMiB: 24576, Split: 4}}
	ci := nodeCluster(w, 2)
	job := w.Job("ns", "volcano", "train", workload.PodShape{Gang: 2, CPU: "4", Memory: "16Gi", VGPUs: 1, MemoryMiB: 8000})
	for i, pod := range job.Pods {
		pod.Annotations[batchv1alpha1.TaskSpecKey] = "worker"
		pod.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: fmt.Sprintf("data-%d", i)}}}}
	}
	addJob(ci, job)
	source := startVolumes(t, wffcClass("local-0"), wffcClass("local-1"), st.LocalPV("pv-0", "local-0", "node-0001", "10Gi"),
		st.LocalPV("pv-1", "local-1", "node-0000", "10Gi"), dataClaim("data-0", "local-0"), dataClaim("data-1", "local-1"))
	registry := newRegistryWith(allocate.DefaultOptions(), sources{devices: deviceshare.NewStaticShared(), vols: source})
	cache := &frameworktest.Cache{Snap: ci}
	frameworktest.RunActions(t, cache, chartConf(t, registry), registry)
	if got, want := cache.Binds(), map[string]string{"ns/train-0": "node-0001", "ns/train-1": "node-0000"}; !maps.Equal(got, want) {
		t.Errorf("bound %v, want %v: each pod on its own PV's node", got, want)
	}
}

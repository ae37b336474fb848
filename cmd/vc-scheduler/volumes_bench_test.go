//go:build unix

package main

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/actions/allocate"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/conf"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework/frameworktest"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/plugins/deviceshare"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/volumes"
)

// BenchmarkCycleWithClaims is BenchmarkCycle's lab-8 cycle over gpu-mix.yaml on 1,000 nodes,
// with kube-scheduler's volume plugins on (the configuration's predicates, at upstream's
// defaults), when no pod has a volume and when every second pod mounts a claim of its own,
// bound to a CSI PV (a dataset or checkpoint volume), every node's CSINode allowing 64 such
// volumes (as a kubelet with a CSI driver reports): what deciding volumes costs the pods that
// have them, and that the others pay nothing.
//
//	go test ./cmd/vc-scheduler/ -run '^$' -bench BenchmarkCycleWithClaims -benchtime 3x
func BenchmarkCycleWithClaims(b *testing.B) {
	const nodeCount = 1000
	w := benchWorkload(b, "gpu-mix.yaml")
	for _, withClaims := range []bool{false, true} {
		template := workloadCluster(w, nodeCount)
		var objs []runtime.Object
		if withClaims {
			objs = mountClaims(template)
			for name := range template.Nodes {
				objs = append(objs, &storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: storagev1.CSINodeSpec{
					Drivers: []storagev1.CSINodeDriver{{Name: benchDriver, NodeID: name, Allocatable: &storagev1.VolumeNodeResources{Count: ptr.To[int32](64)}}}}})
			}
		}
		ctx, cancel := context.WithCancel(context.Background())
		client := fake.NewClientset(objs...)
		factory := informers.NewSharedInformerFactory(client, 0)
		source := volumes.NewSource(client)
		registry := newRegistryWith(allocate.Options{}, sources{devices: deviceshare.NewStaticShared(), vols: source, interPod: interPodSource(b)})
		source.Start(ctx, &frameworktest.ComponentCache{Factory: factory})
		cfg, _, err := conf.Parse(lab8Seed(b), registry)
		if err != nil {
			b.Fatal(err)
		}
		for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
			if !ok {
				b.Fatalf("informer %v not synced", typ)
			}
		}
		half := "none"
		if withClaims {
			half = "half"
		}
		b.Run(fmt.Sprintf("claims=%s/nodes=%d/pods=%d", half, nodeCount, w.PodCount(nodeCount)), func(b *testing.B) {
			benchCycles(b, registry, cfg, template)
		})
		cancel()
	}
}

// benchDriver is the CSI driver of the benchmark's volumes.
const benchDriver = "csi.example.com"

// mountClaims gives every second pod of the snapshot a claim of its own, and returns the
// claims with their bound CSI PVs.
func mountClaims(ci *api.ClusterInfo) []runtime.Object {
	var objs []runtime.Object
	i, noClass := 0, ""
	size := corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}
	for _, job := range ci.Jobs {
		for _, task := range job.Tasks {
			if i++; i%2 == 0 {
				continue
			}
			name, pod := "data-"+task.Name, task.Pod
			pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: "data",
				VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: name}}})
			objs = append(objs,
				&corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: name},
					Spec: corev1.PersistentVolumeSpec{Capacity: size, AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
						PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: benchDriver, VolumeHandle: name}},
						ClaimRef:               &corev1.ObjectReference{Namespace: pod.Namespace, Name: name}},
					Status: corev1.PersistentVolumeStatus{Phase: corev1.VolumeBound}},
				&corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: name,
					Annotations: map[string]string{"pv.kubernetes.io/bind-completed": "yes"}},
					Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
						StorageClassName: &noClass, VolumeName: name, Resources: corev1.VolumeResourceRequirements{Requests: size}},
					Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound}})
		}
	}
	return objs
}

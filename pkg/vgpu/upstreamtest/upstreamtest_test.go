package upstreamtest

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// The models read the examples of the reference descriptions as those describe.

func TestDecodeNodeDevicesModel(t *testing.T) {
	gpus, err := DecodeNodeDevices("GPU-8a9c,10,8192,NVIDIA-NVIDIA GeForce RTX 3070 Ti,true,hami-core:GPU-b,4,100,NVIDIA-X,false,mps:")
	if err != nil {
		t.Fatal(err)
	}
	want := []NodeGPU{
		{Index: 0, UUID: "GPU-8a9c", Count: 10, Devmem: 8192, Type: "NVIDIA-NVIDIA GeForce RTX 3070 Ti", Health: true, Mode: "hami-core"},
		{Index: 1, UUID: "GPU-b", Count: 4, Devmem: 100, Type: "NVIDIA-X", Health: false, Mode: "hami-core"},
	}
	if !reflect.DeepEqual(gpus, want) {
		t.Errorf("got %+v\nwant %+v", gpus, want)
	}
	if _, err := DecodeNodeDevices("GPU-a,10,8192,NVIDIA-X,true,hami-core:GPU-b,10,8192,NVIDIA-X,true:"); err == nil {
		t.Error("a five-field GPU must reject the whole node")
	}
}

func TestPodDevicesModel(t *testing.T) {
	value := "GPU-aaa,NVIDIA,2000,30:;GPU-bbb,NVIDIA,1000,0:GPU-ccc,NVIDIA,1000,0:"
	pd, err := DecodePodDevices(value)
	if err != nil {
		t.Fatal(err)
	}
	want := [][]Device{
		{{ID: "GPU-aaa", Type: "NVIDIA", UsedMem: 2000, UsedCores: 30}},
		{{ID: "GPU-bbb", Type: "NVIDIA", UsedMem: 1000}, {ID: "GPU-ccc", Type: "NVIDIA", UsedMem: 1000}},
	}
	if !reflect.DeepEqual(pd, want) {
		t.Fatalf("got %+v\nwant %+v", pd, want)
	}
	if got := EncodePodDevices(pd); got != value {
		t.Errorf("encoded %q, want %q", got, value)
	}
	if _, err := DecodePodDevices("GPU-aaa,NVIDIA,2000:"); err == nil {
		t.Error("a three-field device must be an error")
	}
}

func vgpuPod(name string, containers ...corev1.Container) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name), Annotations: map[string]string{}},
		Spec: corev1.PodSpec{NodeName: "n1", Containers: containers}}
}

func withCount(name string, n int64) corev1.Container {
	return corev1.Container{Name: name, Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{
		CountResource: *resource.NewQuantity(n, resource.DecimalSI)}}}
}

func assign(p *corev1.Pod, at, value string) *corev1.Pod {
	for k, v := range map[string]string{AssignedNodeKey: "n1", AssignedTimeKey: at, AssignedDevicesKey: value,
		DevicesToAllocateKey: value, BindPhaseKey: "allocating"} {
		p.Annotations[k] = v
	}
	return p
}

func TestPluginModel(t *testing.T) {
	t.Run("two containers: v1.11 serves them in turn", func(t *testing.T) {
		p := assign(vgpuPod("p", withCount("a", 1), withCount("b", 1)), "100", "GPU-a,NVIDIA,2000,30:;GPU-b,NVIDIA,1000,0:")
		s, err := PluginV1_11.Allocate([]*corev1.Pod{p}, "n1", 1, 2)
		if err != nil {
			t.Fatal(err)
		}
		want := Served{Pod: "ns/p", Container: "a", CacheDir: "uid-p_a", Preload: true, Env: map[string]string{
			"NVIDIA_VISIBLE_DEVICES": "GPU-a", "CUDA_DEVICE_MEMORY_LIMIT_0": "4000m", "CUDA_DEVICE_SM_LIMIT": "30"}}
		if !reflect.DeepEqual(s, want) {
			t.Errorf("served %+v\nwant %+v", s, want)
		}
		if got := p.Annotations[DevicesToAllocateKey]; got != ";GPU-b,NVIDIA,1000,0:" {
			t.Errorf("left %q", got)
		}
		if s, err = PluginV1_11.Allocate([]*corev1.Pod{p}, "n1", 1, 2); err != nil || s.Container != "b" {
			t.Fatalf("second call served %+v, %v", s, err)
		}
		if p.Annotations[BindPhaseKey] != "success" || p.Annotations[AssignedTimeKey] != Released {
			t.Errorf("annotations at the end %v", p.Annotations)
		}
	})
	t.Run("two containers: v1.12 finds no pod", func(t *testing.T) {
		p := assign(vgpuPod("p", withCount("a", 1), withCount("b", 1)), "100", "GPU-a,NVIDIA,2000,30:;GPU-b,NVIDIA,1000,0:")
		if _, err := PluginV1_12.Allocate([]*corev1.Pod{p}, "n1", 1, 1); !errors.Is(err, ErrNoPod) {
			t.Errorf("error %v, want %v", err, ErrNoPod)
		}
	})
	t.Run("oldest pod first", func(t *testing.T) {
		newer := assign(vgpuPod("newer", withCount("a", 1)), "200", "GPU-a,NVIDIA,1,0:")
		older := assign(vgpuPod("older", withCount("a", 1)), "100", "GPU-b,NVIDIA,1,0:")
		s, err := PluginV1_11.Allocate([]*corev1.Pod{newer, older}, "n1", 1, 1)
		if err != nil || s.Pod != "ns/older" {
			t.Errorf("served %+v, %v; want ns/older", s, err)
		}
	})
	t.Run("count mismatch fails the pod", func(t *testing.T) {
		p := assign(vgpuPod("p", withCount("a", 2)), "100", "GPU-a,NVIDIA,1,0:")
		if _, err := PluginV1_11.Allocate([]*corev1.Pod{p}, "n1", 2, 1); err == nil || !strings.Contains(err.Error(), "not matched") {
			t.Errorf("error %v", err)
		}
		if p.Annotations[BindPhaseKey] != "failed" {
			t.Errorf("bind phase %q, want failed", p.Annotations[BindPhaseKey])
		}
	})
}

func TestSchedulerModelHandshake(t *testing.T) {
	now := time.Date(2026, 5, 9, 9, 0, 0, 0, time.UTC)
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{
		RegisterKey:  "GPU-a,10,8192,NVIDIA-X,true,hami-core:",
		HandshakeKey: "Reported 2026-05-09 08:59:00 +0000 UTC",
	}}}
	view := SchedulerV1_13.ReadNode(node, now, time.UTC)
	if len(view.GPUs) != 1 || view.HandshakeWrite != "Requesting_2026.05.09 09:00:00" {
		t.Fatalf("view %+v", view)
	}
	ApplyHandshake(node, view)
	if view := SchedulerV1_13.ReadNode(node, now.Add(60*time.Second), time.UTC); len(view.GPUs) != 1 || view.HandshakeWrite != "" {
		t.Errorf("60 s after its request: %+v", view)
	}
	view = SchedulerV1_13.ReadNode(node, now.Add(61*time.Second), time.UTC)
	if view.GPUs != nil || view.HandshakeWrite != "Deleted_2026.05.09 09:01:01" {
		t.Errorf("61 s after its request: %+v", view)
	}
	ApplyHandshake(node, view)
	if view := SchedulerV1_13.ReadNode(node, now.Add(time.Hour), time.UTC); view.GPUs != nil {
		t.Errorf("deleted: %+v", view)
	}
	// The later releases ignore the handshake and want allocatable instead.
	if view := SchedulerV1_16.ReadNode(node, now, time.UTC); view.GPUs != nil || !strings.Contains(view.Why, "allocatable") {
		t.Errorf("v1.16 without allocatable: %+v", view)
	}
}

func TestGoldenNodesParse(t *testing.T) {
	nodes := Nodes()
	if len(nodes) != len(goldenFiles) {
		t.Fatalf("%d golden nodes, want %d", len(nodes), len(goldenFiles))
	}
	for _, g := range nodes {
		if _, err := DecodeNodeDevices(g.Node.Annotations[RegisterKey]); err != nil {
			t.Errorf("%s: %v", g.File, err)
		}
		if !strings.HasPrefix(g.Node.Annotations[HandshakeKey], "Reported ") {
			t.Errorf("%s: handshake %q", g.File, g.Node.Annotations[HandshakeKey])
		}
	}
}

func TestGoldenPodsParse(t *testing.T) {
	for _, g := range Pods() {
		booked, err := Booked([]*corev1.Pod{g.Pod})
		if err != nil || len(booked) == 0 {
			t.Errorf("%s: booked %v, %v", g.File, booked, err)
		}
	}
}

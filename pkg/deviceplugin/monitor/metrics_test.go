package monitor

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/deviceplugin/monitor/monitortest"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/deviceplugin/nvml"
)

type fakeHost struct {
	gpus []nvml.Usage
	err  error
}

func (f fakeHost) Usage() ([]nvml.Usage, error) { return f.gpus, f.err }

// pods maps pod UIDs to namespace/name; a UID not listed is a pod that no
// longer exists on the node.
func podLookup(pods map[string][2]string) PodLookup {
	return func(uid string) (string, string, bool) {
		p, ok := pods[uid]
		return p[0], p[1], ok
	}
}

const (
	uidTrainer = "11111111-aaaa-4bbb-8ccc-000000000001"
	uidInfer   = "22222222-aaaa-4bbb-8ccc-000000000002"
	uidGone    = "33333333-aaaa-4bbb-8ccc-000000000003"
	uidPartial = "44444444-aaaa-4bbb-8ccc-000000000004"
	uidWaiting = "55555555-aaaa-4bbb-8ccc-000000000005"

	gpu0 = "GPU-3ae1f14c-6470-2558-8b35-d51fb6d090f1"
	gpu1 = "GPU-00000000-0000-0000-0000-000000000001"
	gpu2 = "GPU-00000000-0000-0000-0000-000000000002"
)

// metricsRoot builds a cache root with containers of every kind the
// collector must tell apart.
func metricsRoot(t *testing.T) string {
	t.Helper()
	root := t.TempDir()

	// The H200 measurement in the v1 layout, with a last kernel time.
	writeFile(t, filepath.Join(root, uidTrainer+"_main", "a.cache"), monitortest.H200(monitortest.V1).Bytes())

	// A v0 region with two GPUs: no last kernel time in that layout.
	infer := monitortest.H200(monitortest.V0)
	infer.Devices = append(infer.Devices, monitortest.Device{UUID: gpu1, Limit: 1 << 30, SMLimit: 100})
	infer.Slots[3] = monitortest.Slot{
		PID: 7, HostPID: 4007, Status: 1,
		Used:   map[int]monitortest.Memory{0: {Data: 100, Total: 100}, 1: {Context: 5, Module: 6, Data: 7, Offset: 8, Total: 26}},
		SMUtil: map[int]uint64{1: 12},
	}
	writeFile(t, filepath.Join(root, uidInfer+"_worker", "b.cache"), infer.Bytes())

	// The pod is gone; its directory is still there.
	writeFile(t, filepath.Join(root, uidGone+"_main", "c.cache"), monitortest.H200(monitortest.V1).Bytes())

	// Device 0 not set up yet (no UUID), device 1 ready.
	partial := monitortest.Region{
		Layout: monitortest.V1, Major: 1, Minor: 2,
		Devices: []monitortest.Device{{UUID: "", Limit: 1 << 30}, {UUID: gpu2, Limit: 2 << 30, SMLimit: 50}},
		Slots: map[int]monitortest.Slot{0: {PID: 9, HostPID: 909, Status: 1,
			Used: map[int]monitortest.Memory{1: {Context: 1 << 20, Data: 3 << 20, Total: 4 << 20}}, SMUtil: map[int]uint64{1: 50}}},
		LastKernel: 1_764_633_640,
	}
	writeFile(t, filepath.Join(root, uidPartial+"_sidecar", "d.cache"), partial.Bytes())

	// No CUDA process yet, and a directory that is not a container's.
	for _, dir := range []string{uidWaiting + "_idle", "lost+found"} {
		if err := os.MkdirAll(filepath.Join(root, dir), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

var metricsPods = podLookup(map[string][2]string{
	uidTrainer: {"default", "trainer-0"},
	uidInfer:   {"ml", "infer-1"},
	uidPartial: {"ml", "partial"},
	uidWaiting: {"ml", "idle"},
})

func TestCollectorGolden(t *testing.T) {
	host := fakeHost{gpus: []nvml.Usage{
		{Index: 0, UUID: gpu0, MemoryUsedBytes: 2_160_066_560, UtilizationPercent: 37},
		{Index: 1, UUID: gpu1, MemoryUsedBytes: 0, UtilizationPercent: 0},
	}}
	c := NewCollector(metricsRoot(t), host, metricsPods)
	// 42 s after the trainer's last kernel, 2 s after the partial one's.
	c.now = func() time.Time { return time.Unix(1_764_633_642, 900_000_000) }

	const want = `
# HELP Device_last_kernel_of_container Seconds since the container last launched a kernel on this vGPU.
# TYPE Device_last_kernel_of_container gauge
Device_last_kernel_of_container{ctrname="main",deviceuuid="GPU-3ae1f14c-6470-2558-8b35-d51fb6d090f1",podname="trainer-0",podnamespace="default",vdeviceid="0",zone="vGPU"} 42
Device_last_kernel_of_container{ctrname="sidecar",deviceuuid="GPU-00000000-0000-0000-0000-000000000002",podname="partial",podnamespace="ml",vdeviceid="1",zone="vGPU"} 2
# HELP Device_memory_desc_of_container Device memory the container's processes hold on this vGPU, in bytes, with its breakdown in bytes as labels.
# TYPE Device_memory_desc_of_container counter
Device_memory_desc_of_container{context="543162368",ctrname="worker",data="1073741924",deviceuuid="GPU-3ae1f14c-6470-2558-8b35-d51fb6d090f1",module="0",offset="0",podname="infer-1",podnamespace="ml",vdeviceid="0",zone="vGPU"} 1616904292
Device_memory_desc_of_container{context="1048576",ctrname="sidecar",data="3145728",deviceuuid="GPU-00000000-0000-0000-0000-000000000002",module="0",offset="0",podname="partial",podnamespace="ml",vdeviceid="1",zone="vGPU"} 4194304
Device_memory_desc_of_container{context="5",ctrname="worker",data="7",deviceuuid="GPU-00000000-0000-0000-0000-000000000001",module="6",offset="8",podname="infer-1",podnamespace="ml",vdeviceid="1",zone="vGPU"} 26
Device_memory_desc_of_container{context="543162368",ctrname="main",data="1073741824",deviceuuid="GPU-3ae1f14c-6470-2558-8b35-d51fb6d090f1",module="0",offset="0",podname="trainer-0",podnamespace="default",vdeviceid="0",zone="vGPU"} 1616904192
# HELP Device_utilization_desc_of_container SM utilisation of the container's processes on this vGPU, in percent.
# TYPE Device_utilization_desc_of_container gauge
Device_utilization_desc_of_container{ctrname="main",deviceuuid="GPU-3ae1f14c-6470-2558-8b35-d51fb6d090f1",podname="trainer-0",podnamespace="default",vdeviceid="0",zone="vGPU"} 37
Device_utilization_desc_of_container{ctrname="sidecar",deviceuuid="GPU-00000000-0000-0000-0000-000000000002",podname="partial",podnamespace="ml",vdeviceid="1",zone="vGPU"} 50
Device_utilization_desc_of_container{ctrname="worker",deviceuuid="GPU-00000000-0000-0000-0000-000000000001",podname="infer-1",podnamespace="ml",vdeviceid="1",zone="vGPU"} 12
Device_utilization_desc_of_container{ctrname="worker",deviceuuid="GPU-3ae1f14c-6470-2558-8b35-d51fb6d090f1",podname="infer-1",podnamespace="ml",vdeviceid="0",zone="vGPU"} 37
# HELP HostCoreUtilization Utilisation of the GPU by all processes of the node, in percent.
# TYPE HostCoreUtilization gauge
HostCoreUtilization{deviceidx="0",deviceuuid="GPU-3ae1f14c-6470-2558-8b35-d51fb6d090f1",zone="vGPU"} 37
HostCoreUtilization{deviceidx="1",deviceuuid="GPU-00000000-0000-0000-0000-000000000001",zone="vGPU"} 0
# HELP HostGPUMemoryUsage Device memory in use on the GPU by all processes of the node, in bytes.
# TYPE HostGPUMemoryUsage gauge
HostGPUMemoryUsage{deviceidx="0",deviceuuid="GPU-3ae1f14c-6470-2558-8b35-d51fb6d090f1",zone="vGPU"} 2.16006656e+09
HostGPUMemoryUsage{deviceidx="1",deviceuuid="GPU-00000000-0000-0000-0000-000000000001",zone="vGPU"} 0
# HELP vGPU_device_memory_limit_in_bytes Device memory limit of the container on this vGPU, in bytes; 0 means none.
# TYPE vGPU_device_memory_limit_in_bytes gauge
vGPU_device_memory_limit_in_bytes{ctrname="main",deviceuuid="GPU-3ae1f14c-6470-2558-8b35-d51fb6d090f1",podname="trainer-0",podnamespace="default",vdeviceid="0",zone="vGPU"} 2.097152e+09
vGPU_device_memory_limit_in_bytes{ctrname="sidecar",deviceuuid="GPU-00000000-0000-0000-0000-000000000002",podname="partial",podnamespace="ml",vdeviceid="1",zone="vGPU"} 2.147483648e+09
vGPU_device_memory_limit_in_bytes{ctrname="worker",deviceuuid="GPU-00000000-0000-0000-0000-000000000001",podname="infer-1",podnamespace="ml",vdeviceid="1",zone="vGPU"} 1.073741824e+09
vGPU_device_memory_limit_in_bytes{ctrname="worker",deviceuuid="GPU-3ae1f14c-6470-2558-8b35-d51fb6d090f1",podname="infer-1",podnamespace="ml",vdeviceid="0",zone="vGPU"} 2.097152e+09
# HELP vGPU_device_memory_usage_in_bytes Device memory the container's processes hold on this vGPU, as HAMi-core counts it, in bytes.
# TYPE vGPU_device_memory_usage_in_bytes gauge
vGPU_device_memory_usage_in_bytes{ctrname="main",deviceuuid="GPU-3ae1f14c-6470-2558-8b35-d51fb6d090f1",podname="trainer-0",podnamespace="default",vdeviceid="0",zone="vGPU"} 1.616904192e+09
vGPU_device_memory_usage_in_bytes{ctrname="sidecar",deviceuuid="GPU-00000000-0000-0000-0000-000000000002",podname="partial",podnamespace="ml",vdeviceid="1",zone="vGPU"} 4.194304e+06
vGPU_device_memory_usage_in_bytes{ctrname="worker",deviceuuid="GPU-00000000-0000-0000-0000-000000000001",podname="infer-1",podnamespace="ml",vdeviceid="1",zone="vGPU"} 26
vGPU_device_memory_usage_in_bytes{ctrname="worker",deviceuuid="GPU-3ae1f14c-6470-2558-8b35-d51fb6d090f1",podname="infer-1",podnamespace="ml",vdeviceid="0",zone="vGPU"} 1.616904292e+09
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want)); err != nil {
		t.Error(err)
	}
}

func TestCollectorPartialFailures(t *testing.T) {
	tests := []struct {
		name string
		host HostGPUReader
		root func(t *testing.T) string
		want int
	}{
		{
			name: "host read fails after one GPU: that GPU and all containers are served",
			host: fakeHost{gpus: []nvml.Usage{{Index: 0, UUID: gpu0}}, err: errors.New("GPU 1: Unknown Error")},
			root: metricsRoot,
			// 2 host series + the 18 container series of the golden test.
			want: 2 + 18,
		},
		{
			name: "no host reader: containers only",
			root: metricsRoot,
			want: 18,
		},
		{
			name: "cache root not created yet",
			host: fakeHost{gpus: []nvml.Usage{{Index: 0, UUID: gpu0}}},
			root: func(t *testing.T) string { return filepath.Join(t.TempDir(), "vgpu", "containers") },
			want: 2,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := NewCollector(tt.root(t), tt.host, metricsPods)
			c.now = func() time.Time { return time.Unix(1_764_633_642, 0) }
			if got := testutil.CollectAndCount(c); got != tt.want {
				t.Errorf("%d series, want %d", got, tt.want)
			}
		})
	}
}

func TestCollectorDropsGonePods(t *testing.T) {
	root := metricsRoot(t)
	c := NewCollector(root, nil, podLookup(map[string][2]string{uidTrainer: {"default", "trainer-0"}}))
	c.now = func() time.Time { return time.Unix(1_764_633_642, 0) }
	// The trainer alone: usage, limit, detail, utilisation, last kernel.
	if got := testutil.CollectAndCount(c); got != 5 {
		t.Errorf("%d series, want 5 (one container of one pod)", got)
	}
	c.pods = podLookup(nil)
	if got := testutil.CollectAndCount(c); got != 0 {
		t.Errorf("%d series after every pod is gone, want 0", got)
	}
}

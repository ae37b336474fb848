package monitor

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/deviceplugin/nvml"
)

// A GPU's health series says 1 while it is healthy and 0 with the reason once it is not; each
// GPU included has an XID series from the start, and XIDs count where they happened.
func TestHealthAndXIDMetrics(t *testing.T) {
	gpus := []nvml.GPU{{Index: 0, UUID: gpu0, Healthy: true}, {Index: 1, UUID: gpu1, UnhealthyReason: "XID 79"}}
	health := NewHealthCollector(func() []nvml.GPU { return gpus })
	want := `# HELP vgpu_device_plugin_gpu_healthy 1 while the GPU is advertised to the kubelet as healthy, 0 once a critical XID or an NVML failure made it unhealthy (until the plugin restarts); reason says why.
# TYPE vgpu_device_plugin_gpu_healthy gauge
vgpu_device_plugin_gpu_healthy{deviceidx="0",deviceuuid="` + gpu0 + `",reason=""} 1
vgpu_device_plugin_gpu_healthy{deviceidx="1",deviceuuid="` + gpu1 + `",reason="XID 79"} 0
`
	if err := testutil.CollectAndCompare(health, strings.NewReader(want)); err != nil {
		t.Error(err)
	}

	xids := NewXIDCounter()
	xids.Include(gpus)
	xids.Seen(gpu1, 79)
	xids.Seen(gpu1, 43)
	xids.Seen("", 48)
	want = `# HELP vgpu_device_plugin_xid_errors_total XID events NVML reported for the GPU since the plugin started, critical or not; deviceuuid is empty for events NVML could not place.
# TYPE vgpu_device_plugin_xid_errors_total counter
vgpu_device_plugin_xid_errors_total{deviceuuid=""} 1
vgpu_device_plugin_xid_errors_total{deviceuuid="` + gpu0 + `"} 0
vgpu_device_plugin_xid_errors_total{deviceuuid="` + gpu1 + `"} 2
`
	if err := testutil.CollectAndCompare(xids.Collector(), strings.NewReader(want)); err != nil {
		t.Error(err)
	}
}

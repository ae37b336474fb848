package metrics

import (
	"math"
	"os"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
)

// queueMetricNames are upstream's queue metric names, written out so that a renamed metric
// fails the golden comparison instead of being filtered away.
var queueMetricNames = []string{
	"volcano_queue_allocated_milli_cpu", "volcano_queue_allocated_memory_bytes", "volcano_queue_allocated_scalar_resources",
	"volcano_queue_request_milli_cpu", "volcano_queue_request_memory_bytes", "volcano_queue_request_scalar_resources",
	"volcano_queue_deserved_milli_cpu", "volcano_queue_deserved_memory_bytes", "volcano_queue_deserved_scalar_resources",
	"volcano_queue_capacity_milli_cpu", "volcano_queue_capacity_memory_bytes", "volcano_queue_capacity_scalar_resources",
	"volcano_queue_real_capacity_milli_cpu", "volcano_queue_real_capacity_memory_bytes", "volcano_queue_real_capacity_scalar_resources",
	"volcano_queue_share", "volcano_queue_weight", "volcano_queue_overused",
}

const gi = 1 << 30

func vgpuMemory(milli float64) map[corev1.ResourceName]float64 {
	return map[corev1.ResourceName]float64{"volcano.sh/vgpu-memory": milli}
}

// gpuQueue has a vGPU dimension in every amount; batchQueue has none, caps cpu only and is
// past its deserved share.
func gpuQueue() QueueFigures {
	return QueueFigures{
		Name:         "gpu",
		Allocated:    &api.Resource{MilliCPU: 1000, Memory: 1 * gi, ScalarResources: vgpuMemory(3000e3)},
		Request:      &api.Resource{MilliCPU: 2000, Memory: 2 * gi, ScalarResources: vgpuMemory(6000e3)},
		Deserved:     &api.Resource{MilliCPU: 4000, Memory: 4 * gi, ScalarResources: vgpuMemory(8000e3)},
		Capacity:     &api.Resource{MilliCPU: math.MaxFloat64, Memory: math.MaxFloat64, ScalarResources: vgpuMemory(8000e3)},
		RealCapacity: &api.Resource{MilliCPU: 8000, Memory: 8 * gi, ScalarResources: vgpuMemory(8192e3)},
		Share:        0.375,
		Weight:       2,
	}
}

func batchQueue() QueueFigures {
	return QueueFigures{
		Name:         "batch",
		Allocated:    &api.Resource{MilliCPU: 3000, Memory: 3 * gi},
		Request:      &api.Resource{MilliCPU: 3000, Memory: 3 * gi},
		Deserved:     &api.Resource{MilliCPU: 2000, Memory: 2 * gi},
		Capacity:     &api.Resource{MilliCPU: 4000, Memory: math.MaxFloat64},
		RealCapacity: &api.Resource{MilliCPU: 4000, Memory: 8 * gi},
		Share:        1.5,
		Weight:       1,
		Overused:     true,
	}
}

func TestQueueMetricsGolden(t *testing.T) {
	m, reg := registered(t)
	golden, err := os.Open("testdata/queues.golden")
	if err != nil {
		t.Fatal(err)
	}
	defer golden.Close()
	m.ReportQueues([]QueueFigures{gpuQueue(), batchQueue()})
	if err := testutil.GatherAndCompare(reg, golden, queueMetricNames...); err != nil {
		t.Error(err)
	}
}

// TestQueueSeriesFollowReports: a queue missing from a report loses all its series, and so
// does a resource a queue no longer has; what remains keeps its (new) values.
func TestQueueSeriesFollowReports(t *testing.T) {
	m, reg := registered(t)
	m.ReportQueues([]QueueFigures{gpuQueue(), batchQueue()})

	gpu := gpuQueue()
	gpu.Allocated = &api.Resource{MilliCPU: 500, Memory: 1 * gi} // its vGPU pod ended
	gpu.Share = 0.125
	m.ReportQueues([]QueueFigures{gpu}) // batch was deleted

	want := `
# HELP volcano_queue_allocated_milli_cpu Resources held by the queue's placed tasks: cpu in millicores
# TYPE volcano_queue_allocated_milli_cpu gauge
volcano_queue_allocated_milli_cpu{queue_name="gpu"} 500
# HELP volcano_queue_request_scalar_resources Resources requested by the queue's placed and pending tasks: each other resource in milli-units
# TYPE volcano_queue_request_scalar_resources gauge
volcano_queue_request_scalar_resources{queue_name="gpu",resource="volcano.sh/vgpu-memory"} 6000000
# HELP volcano_queue_share Largest ratio of allocated to deserved over the queue's resources
# TYPE volcano_queue_share gauge
volcano_queue_share{queue_name="gpu"} 0.125
# HELP volcano_queue_overused 1 when the queue holds its deserved share in every resource, else 0
# TYPE volcano_queue_overused gauge
volcano_queue_overused{queue_name="gpu"} 0
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want),
		"volcano_queue_allocated_milli_cpu", "volcano_queue_allocated_scalar_resources",
		"volcano_queue_request_scalar_resources", "volcano_queue_share", "volcano_queue_overused"); err != nil {
		t.Error(err)
	}
	if n, err := testutil.GatherAndCount(reg, queueMetricNames...); err != nil || n != 17 {
		t.Errorf("%d queue series after the second report (err %v), want 17: gpu's 18 less its allocated vGPU memory", n, err)
	}

	m.ReportQueues(nil)
	if n, err := testutil.GatherAndCount(reg, queueMetricNames...); err != nil || n != 0 {
		t.Errorf("%d queue series after an empty report (err %v), want 0", n, err)
	}
}

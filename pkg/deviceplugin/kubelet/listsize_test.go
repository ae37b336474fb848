package kubelet

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/deviceplugin/nvml"
)

// realSize builds r's list for gpus, every device unhealthy, and measures it.
func realSize(r resource, gpus []nvml.GPU) int {
	sick := make([]nvml.GPU, len(gpus))
	for i, g := range gpus {
		g.Healthy = false
		sick[i] = g
	}
	return proto.Size(&pluginapi.ListAndWatchResponse{Devices: r.devices(sick)})
}

func TestCountAndCoresListSizesMatchTheRealLists(t *testing.T) {
	for _, gpus := range [][]nvml.GPU{gpusOf(), gpusOf(1), gpusOf(h200MiB, 80000, 1)} {
		for _, split := range []int32{1, 9, 10, 11, 250} {
			if got, want := CountListSize(split, gpus), realSize(countResource("", split, nil), gpus); got != want {
				t.Errorf("%d GPUs, split %d: computed %d bytes, the real list has %d", len(gpus), split, got, want)
			}
		}
		for _, scaling := range []float64{0.01, 0.29, 1, 3.5, 12} {
			if got, want := CoresListSize(scaling, gpus), realSize(coresResource("", coresPerGPU(scaling), nil), gpus); got != want {
				t.Errorf("%d GPUs, core scaling %g: computed %d bytes, the real list has %d", len(gpus), scaling, got, want)
			}
		}
	}
}

func TestCheckCountList(t *testing.T) {
	eight := gpusOf(1, 1, 1, 1, 1, 1, 1, 1)
	if err := CheckCountList(10, eight); err != nil {
		t.Errorf("split 10 on 8 GPUs: %v", err)
	}
	// A split count of millions, a typo away from 10: gigabytes of device list.
	err := CheckCountList(10_000_000, eight)
	var tooLarge *ListTooLargeError
	if !errors.As(err, &tooLarge) {
		t.Fatalf("split 10000000 on 8 GPUs: %v, want a *ListTooLargeError", err)
	}
	if tooLarge.List != ListCount || tooLarge.GPUs != 8 || tooLarge.Bytes <= MessageLimit {
		t.Errorf("error %+v", tooLarge)
	}
	fit := int32(tooLarge.Fit)
	if CountListSize(fit, eight) > MessageLimit || CountListSize(fit+1, eight) <= MessageLimit {
		t.Errorf("largest split %d: %d bytes, %d at %d; want the last that fits %d", fit,
			CountListSize(fit, eight), CountListSize(fit+1, eight), fit+1, MessageLimit)
	}
	if err := CheckCountList(fit, eight); err != nil {
		t.Errorf("the advised split %d is refused: %v", fit, err)
	}
}

func TestCheckCoresList(t *testing.T) {
	eight := gpusOf(1, 1, 1, 1, 1, 1, 1, 1)
	if err := CheckCoresList(1, eight); err != nil {
		t.Errorf("scaling 1 on 8 GPUs: %v", err)
	}
	for _, scaling := range []float64{1e4, 1e300, math.MaxFloat64} {
		err := CheckCoresList(scaling, eight)
		var tooLarge *ListTooLargeError
		if !errors.As(err, &tooLarge) || tooLarge.List != ListCores {
			t.Fatalf("scaling %g on 8 GPUs: %v, want a cores *ListTooLargeError", scaling, err)
		}
		fit := float64(tooLarge.Fit) / 100
		if err := CheckCoresList(fit, eight); err != nil {
			t.Errorf("the advised scaling %g is refused: %v", fit, err)
		}
		if err := CheckCoresList(fit+0.01, eight); err == nil {
			t.Errorf("scaling %g fits too, so %g is not the largest", fit+0.01, fit)
		}
	}
}

func TestLargestFitting(t *testing.T) {
	for _, limit := range []int{0, 1, 7, math.MaxInt32 - 1, math.MaxInt32} {
		if got := largestFitting(func(n int) bool { return n <= limit }); got != limit {
			t.Errorf("largestFitting(n <= %d) = %d", limit, got)
		}
	}
}

func TestCoresPerGPUCapped(t *testing.T) {
	for _, scaling := range []float64{1e300, math.Inf(1), math.NaN(), float64(math.MaxInt32)} {
		if got := coresPerGPU(scaling); got != math.MaxInt32 {
			t.Errorf("coresPerGPU(%g) = %d, want it capped at %d", scaling, got, math.MaxInt32)
		}
	}
}

// TestPercentageList: the memory percentage list is measured like the others, fits for any
// real node, and is refused (with no value to advise) only for more GPUs than a node has.
func TestPercentageList(t *testing.T) {
	eight := gpusOf(1, 1, 1, 1, 1, 1, 1, 1)
	if got, want := PercentageListSize(eight), realSize(percentageResource("", nil), eight); got != want {
		t.Errorf("computed %d bytes, the real list has %d", got, want)
	}
	if err := CheckPercentageList(eight); err != nil {
		t.Errorf("8 GPUs: %v", err)
	}
	many := make([]nvml.GPU, 2000)
	for i := range many {
		many[i] = nvml.GPU{UUID: fmt.Sprintf("GPU-%08d-0000-0000-0000-000000000000", i), Healthy: true}
	}
	var tooLarge *ListTooLargeError
	if err := CheckPercentageList(many); !errors.As(err, &tooLarge) || tooLarge.List != ListPercentage || tooLarge.Fit != 0 {
		t.Fatalf("2000 GPUs: %v, want a memory percentage *ListTooLargeError", err)
	}
	r := testResources(1)
	if err := r.checkListSizes(many); err == nil || !strings.Contains(err.Error(), "volcano.sh/vgpu-memory-percentage: the memory percentage device list of 2000 GPUs") {
		t.Errorf("checkListSizes: %v, want the percentage list named", err)
	}
}

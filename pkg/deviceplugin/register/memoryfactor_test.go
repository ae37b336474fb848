package register

import (
	"encoding/json"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/vgpu"
)

// TestPublishesTheMemoryFactor: the node carries the factor in force (chosen by the plugin or
// configured), with the device list in the same PATCH; it is written again when someone
// removes it, and not otherwise.
func TestPublishesTheMemoryFactor(t *testing.T) {
	cfg := defaultConfig()
	cfg.Device.GPUMemoryFactor = 5
	h := newHarness(t, cfg, twoGPUs(), emptyNode())
	h.startCache(t)
	h.pass(t)
	if got := h.r.Patches(); got != 1 {
		t.Fatalf("first pass: %d PATCHes, want 1", got)
	}
	if got := h.stored(t)[vgpu.NodeMemoryFactorAnnotation]; got != "5" {
		t.Fatalf("%s = %q, want 5", vgpu.NodeMemoryFactorAnnotation, got)
	}
	h.pass(t)
	if got := h.r.Patches(); got != 1 {
		t.Fatalf("%d PATCHes with nothing changed, want still 1", got)
	}

	body, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]*string{vgpu.NodeMemoryFactorAnnotation: nil}}})
	if _, err := h.client.CoreV1().Nodes().Patch(h.ctx, nodeName, types.MergePatchType, body, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	h.pass(t)
	if got, patches := h.stored(t)[vgpu.NodeMemoryFactorAnnotation], h.r.Patches(); got != "5" || patches != 2 {
		t.Errorf("after its removal: %s = %q after %d PATCHes, want 5 after 2", vgpu.NodeMemoryFactorAnnotation, got, patches)
	}
}

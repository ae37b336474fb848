package register

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	corelisters "k8s.io/client-go/listers/core/v1"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/deviceplugin/nvml"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/deviceplugin/settings"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/vgpu"
)

const nodeName = "gpu-node-1"

var start = time.Date(2026, 9, 1, 12, 0, 0, 0, time.UTC)

// fakeGPUs is a GPULister whose answer tests change.
type fakeGPUs struct {
	mu   sync.Mutex
	gpus []nvml.GPU
	err  error
}

func (f *fakeGPUs) Devices() ([]nvml.GPU, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]nvml.GPU(nil), f.gpus...), f.err
}

func (f *fakeGPUs) set(gpus []nvml.GPU, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.gpus, f.err = gpus, err
}

func (f *fakeGPUs) setHealth(uuid string, healthy bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := range f.gpus {
		if f.gpus[i].UUID == uuid {
			f.gpus[i].Healthy = healthy
		}
	}
}

func h200(index, minor int, uuid string) nvml.GPU {
	return nvml.GPU{Index: index, Minor: minor, UUID: uuid, Name: "NVIDIA H200", MemoryMiB: 143771, Healthy: true}
}

const (
	uuidA = "GPU-3ae1f14c-6470-2558-8b35-d51fb6d090f1"
	uuidB = "GPU-7c2d9e01-1111-2222-3333-444455556666"
	uuidC = "GPU-0d5e6f70-aaaa-bbbb-cccc-ddddeeeeffff"
)

func twoGPUs() []nvml.GPU { return []nvml.GPU{h200(0, 0, uuidA), h200(1, 1, uuidB)} }

// published is the device annotation for twoGPUs under the default config.
const published = uuidA + ",10,143771,NVIDIA-NVIDIA H200,true,hami-core:" +
	uuidB + ",10,143771,NVIDIA-NVIDIA H200,true,hami-core:"

func defaultConfig() settings.Config {
	c, err := settings.Resolve(nodeName, vgpu.DefaultNvidiaConfig(), nil, vgpu.NodeConfigFile{})
	if err != nil {
		panic(err)
	}
	c.Device.GPUMemoryFactor = 1 // as the command settles it for two H200s at factor 1
	return c
}

type harness struct {
	r      *Registrar
	client *fake.Clientset
	clock  *testingclock.FakeClock
	gpus   *fakeGPUs
	ctx    context.Context
	cancel context.CancelFunc
}

// newHarness builds a Registrar (--legacy-handshake off, the default) over
// a fake API server holding objects; startCache starts its node cache (not
// its loop).
func newHarness(t *testing.T, cfg settings.Config, gpus []nvml.GPU, objects ...runtime.Object) *harness {
	t.Helper()
	return newHarnessWith(t, false, cfg, gpus, objects...)
}

// newLegacyHarness is newHarness with --legacy-handshake on.
func newLegacyHarness(t *testing.T, cfg settings.Config, gpus []nvml.GPU, objects ...runtime.Object) *harness {
	t.Helper()
	return newHarnessWith(t, true, cfg, gpus, objects...)
}

func newHarnessWith(t *testing.T, legacy bool, cfg settings.Config, gpus []nvml.GPU, objects ...runtime.Object) *harness {
	t.Helper()
	h := &harness{
		client: fake.NewClientset(objects...),
		clock:  testingclock.NewFakeClock(start),
		gpus:   &fakeGPUs{gpus: gpus},
	}
	h.r = New(Options{Client: h.client, Config: cfg, GPUs: h.gpus, Clock: h.clock, LegacyHandshake: legacy})
	h.ctx, h.cancel = context.WithCancel(context.Background())
	t.Cleanup(h.cancel)
	return h
}

func (h *harness) startCache(t *testing.T) {
	t.Helper()
	h.r.informers.Start(h.ctx.Done())
	if !cache.WaitForCacheSync(h.ctx.Done(), h.r.synced) {
		t.Fatal("node cache did not sync")
	}
}

func emptyNode() *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodeName}}
}

// stored returns the node's annotations as the API server holds them,
// without recording an API action.
func (h *harness) stored(t *testing.T) map[string]string {
	t.Helper()
	obj, err := h.client.Tracker().Get(corev1.SchemeGroupVersion.WithResource("nodes"), "", nodeName)
	if err != nil {
		t.Fatal(err)
	}
	return obj.(*corev1.Node).Annotations
}

// waitForCache waits until the Registrar's cache shows what the API server
// holds, as it does in a running plugin by the time the next pass starts.
func (h *harness) waitForCache(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		want := h.stored(t)
		node, err := h.r.nodes.Get(nodeName)
		if err == nil && cmp.Equal(want, node.Annotations) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("cache still shows %v, API server %v", node, want)
		}
		time.Sleep(time.Millisecond)
	}
}

// pass runs one reconcile on an up-to-date cache.
func (h *harness) pass(t *testing.T) time.Duration {
	t.Helper()
	h.waitForCache(t)
	return h.r.reconcile(h.ctx)
}

// setHandshake writes the handshake as a scheduler would; nil removes it.
func (h *harness) setHandshake(t *testing.T, value *string) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]*string{vgpu.NodeHandshakeAnnotation: value}}})
	if _, err := h.client.CoreV1().Nodes().Patch(h.ctx, nodeName, types.MergePatchType, body, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

func TestPatchesOnlyWhatChanged(t *testing.T) {
	for _, legacy := range []bool{false, true} {
		t.Run(fmt.Sprintf("legacy handshake %t", legacy), func(t *testing.T) {
			testPatchesOnlyWhatChanged(t, legacy)
		})
	}
}

func testPatchesOnlyWhatChanged(t *testing.T, legacy bool) {
	h := newHarnessWith(t, legacy, defaultConfig(), twoGPUs(), emptyNode())
	h.startCache(t)

	if wait := h.pass(t); wait != resyncPeriod {
		t.Errorf("first pass waits %v, want %v", wait, resyncPeriod)
	}
	if got := h.r.Patches(); got != 1 {
		t.Fatalf("first pass: %d PATCHes, want 1", got)
	}
	want := map[string]string{vgpu.NodeDevicesAnnotation: published, vgpu.NodeMemoryFactorAnnotation: "1"}
	if legacy {
		want[vgpu.NodeHandshakeAnnotation] = vgpu.FormatReported(start)
	}
	if diff := cmp.Diff(want, h.stored(t)); diff != "" {
		t.Fatalf("annotations after the first pass (-want +got):\n%s", diff)
	}

	// Nothing changes for ten minutes: no PATCH at all, however often
	// the loop runs.
	for i := 0; i < 40; i++ {
		if wait := h.pass(t); wait != resyncPeriod {
			t.Fatalf("pass %d waits %v, want %v", i, wait, resyncPeriod)
		}
		h.clock.Step(15 * time.Second)
	}
	if got := h.r.Patches(); got != 1 {
		t.Errorf("%d PATCHes after ten quiet minutes, want still 1", got)
	}

	// Only the API calls a single-node cache makes, and one PATCH.
	for _, action := range h.client.Actions() {
		switch a := action.(type) {
		case k8stesting.ListActionImpl:
			if got := a.GetListRestrictions().Fields.String(); got != "metadata.name="+nodeName {
				t.Errorf("list nodes with field selector %q, want only this node", got)
			}
		case k8stesting.WatchActionImpl:
			if got := a.GetWatchRestrictions().Fields.String(); got != "metadata.name="+nodeName {
				t.Errorf("watch nodes with field selector %q, want only this node", got)
			}
		case k8stesting.PatchActionImpl:
		default:
			t.Errorf("unexpected API call %s %s", action.GetVerb(), action.GetResource().Resource)
		}
	}
}

func TestHealthChangePatchesAtOnce(t *testing.T) {
	h := newLegacyHarness(t, defaultConfig(), twoGPUs(), emptyNode())
	h.startCache(t)
	h.pass(t)
	h.clock.Step(2 * time.Second)

	h.gpus.setHealth(uuidB, false)
	h.pass(t)
	if got := h.r.Patches(); got != 2 {
		t.Fatalf("%d PATCHes, want 2: the health change is published at once", got)
	}
	want := map[string]string{
		vgpu.NodeDevicesAnnotation: uuidA + ",10,143771,NVIDIA-NVIDIA H200,true,hami-core:" +
			uuidB + ",10,143771,NVIDIA-NVIDIA H200,false,hami-core:",
		vgpu.NodeMemoryFactorAnnotation: "1",
		// The scheduler asked nothing, so the handshake is left alone.
		vgpu.NodeHandshakeAnnotation: vgpu.FormatReported(start),
	}
	if diff := cmp.Diff(want, h.stored(t)); diff != "" {
		t.Errorf("annotations (-want +got):\n%s", diff)
	}
}

func TestStaleCacheDoesNotRepeatPatch(t *testing.T) {
	h := newHarness(t, defaultConfig(), twoGPUs(), emptyNode())
	// A cache that never sees any write: every pass reads the node as it
	// was before the first PATCH.
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	if err := indexer.Add(emptyNode()); err != nil {
		t.Fatal(err)
	}
	h.r.nodes = corelisters.NewNodeLister(indexer)

	h.r.reconcile(h.ctx)
	h.r.reconcile(h.ctx)
	h.clock.Step(resyncPeriod - time.Second)
	h.r.reconcile(h.ctx)
	if got := h.r.Patches(); got != 1 {
		t.Fatalf("%d PATCHes, want 1: passes before the cache shows the write must not repeat it", got)
	}
	// Someone else changes the node: the cache is believed at once.
	changed := emptyNode()
	changed.Annotations = map[string]string{vgpu.NodeHandshakeAnnotation: vgpu.FormatDeleted(start)}
	if err := indexer.Update(changed); err != nil {
		t.Fatal(err)
	}
	h.r.reconcile(h.ctx)
	if got := h.r.Patches(); got != 2 {
		t.Fatalf("%d PATCHes, want 2 after the node changed", got)
	}
	// A cache that shows the old values for a whole resync period is
	// believed again: the values may really have been written back.
	h.r.reconcile(h.ctx)
	if got := h.r.Patches(); got != 2 {
		t.Fatalf("%d PATCHes, want still 2", got)
	}
	h.clock.Step(resyncPeriod)
	h.r.reconcile(h.ctx)
	if got := h.r.Patches(); got != 3 {
		t.Errorf("%d PATCHes, want 3 once the cache is believed again", got)
	}
}

func TestDeviceOrderIsStable(t *testing.T) {
	// NVML index order differs from minor order; the list follows the
	// minor number, then the index.
	gpus := []nvml.GPU{h200(0, 2, uuidC), h200(2, 0, uuidA), h200(1, 1, uuidB)}
	h := newHarness(t, defaultConfig(), gpus, emptyNode())
	h.startCache(t)
	h.pass(t)
	wantOrder := []string{uuidA, uuidB, uuidC}
	if got := uuidsOf(t, h.stored(t)[vgpu.NodeDevicesAnnotation]); !cmp.Equal(got, wantOrder) {
		t.Fatalf("order %v, want %v", got, wantOrder)
	}
	for _, order := range [][]int{{2, 1, 0}, {1, 0, 2}} {
		reordered := []nvml.GPU{gpus[order[0]], gpus[order[1]], gpus[order[2]]}
		h.gpus.set(reordered, nil)
		h.pass(t)
	}
	if got := h.r.Patches(); got != 1 {
		t.Errorf("%d PATCHes, want 1: the same GPUs in another order are no change", got)
	}
}

func uuidsOf(t *testing.T, value string) []string {
	t.Helper()
	devices, err := vgpu.DecodeNodeDevices(value)
	if err != nil {
		t.Fatal(err)
	}
	var uuids []string
	for _, d := range devices {
		uuids = append(uuids, d.UUID)
	}
	return uuids
}

func TestPublishedFieldsFollowConfig(t *testing.T) {
	device := vgpu.DefaultNvidiaConfig()
	device.GPUMemoryFactor = 1024
	nodeFile := vgpu.NodeConfigFile{NodeConfig: []vgpu.NodeConfig{{
		Name: nodeName, OperatingMode: vgpu.ModeMIG, DeviceSplitCount: 4, DeviceMemoryScaling: 2,
		FilterDevices: &vgpu.FilterDevices{UUID: []string{uuidC}, Index: []int{0}},
	}}}
	cfg, err := settings.Resolve(nodeName, device, nil, nodeFile)
	if err != nil {
		t.Fatal(err)
	}
	gpus := []nvml.GPU{h200(0, 0, uuidA), h200(1, 1, uuidB), h200(2, 2, uuidC)}
	gpus[1].Name = "NVIDIA A100-SXM4-80GB"
	gpus[1].MemoryMiB = 81920
	h := newHarness(t, cfg, gpus, emptyNode())
	h.startCache(t)
	h.pass(t)
	// GPU index 0 and uuidC are filtered out; 81920 MiB x 2 / 1024 = 160.
	want := uuidB + ",4,160,NVIDIA-NVIDIA A100-SXM4-80GB,true,mig:"
	if got := h.stored(t)[vgpu.NodeDevicesAnnotation]; got != want {
		t.Errorf("published %q, want %q", got, want)
	}
}

func TestHandshakeAnswers(t *testing.T) {
	tests := []struct {
		name string
		// after is how long after the first PATCH the scheduler writes.
		after time.Duration
		value *string
		// wantWait is how long the Registrar waits before answering.
		wantWait time.Duration
	}{
		{name: "request just after our answer waits out the spacing", after: time.Second,
			value: ptr(vgpu.FormatRequesting(start.Add(time.Second))), wantWait: 29 * time.Second},
		{name: "request long after our answer is answered at once", after: 45 * time.Second,
			value: ptr(vgpu.FormatRequesting(start.Add(45 * time.Second)))},
		{name: "deletion long after our answer is answered at once", after: 90 * time.Second,
			value: ptr(vgpu.FormatDeleted(start.Add(90 * time.Second)))},
		{name: "deletion just after our answer waits out the spacing", after: time.Second,
			value: ptr(vgpu.FormatDeleted(start.Add(time.Second))), wantWait: 29 * time.Second},
		{name: "removed handshake is rewritten at once", after: time.Second},
		{name: "unreadable request is replaced at once", after: time.Second, value: ptr("Requesting_soon")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newLegacyHarness(t, defaultConfig(), twoGPUs(), emptyNode())
			h.startCache(t)
			h.pass(t)
			h.clock.Step(tt.after)
			h.setHandshake(t, tt.value)

			wait := h.pass(t)
			if tt.wantWait > 0 {
				if got := h.r.Patches(); got != 1 {
					t.Fatalf("answered after %v, want to wait %v", tt.after, tt.wantWait)
				}
				if wait != tt.wantWait {
					t.Fatalf("next pass in %v, want %v", wait, tt.wantWait)
				}
				h.clock.Step(wait)
				h.pass(t)
			}
			if got := h.r.Patches(); got != 2 {
				t.Fatalf("%d PATCHes, want 2: the handshake answered", got)
			}
			answered := start.Add(tt.after + tt.wantWait)
			want := map[string]string{
				vgpu.NodeDevicesAnnotation:      published,
				vgpu.NodeMemoryFactorAnnotation: "1",
				vgpu.NodeHandshakeAnnotation:    vgpu.FormatReported(answered),
			}
			if diff := cmp.Diff(want, h.stored(t)); diff != "" {
				t.Errorf("annotations (-want +got):\n%s", diff)
			}
		})
	}
}

// TestHandshakeWithOldScheduler runs the plugin against a scheduler of the
// handshake era (Volcano <= 1.14.2, 1.15.0) for ten minutes: the scheduler
// answers every report with a request at once and drops the node when a
// request goes unanswered for 60 s. The node must never be dropped, and
// the plugin must PATCH no more than once per 30 s.
func TestHandshakeWithOldScheduler(t *testing.T) {
	h := newLegacyHarness(t, defaultConfig(), twoGPUs(), emptyNode())
	h.startCache(t)
	const seconds = 600
	for i := 0; i <= seconds; i++ {
		h.pass(t)
		h.waitForCache(t)
		handshake, err := vgpu.ParseHandshake(h.stored(t)[vgpu.NodeHandshakeAnnotation])
		if err != nil {
			t.Fatal(err)
		}
		now := h.clock.Now()
		switch handshake.State {
		case vgpu.HandshakeReported:
			h.setHandshake(t, ptr(vgpu.FormatRequesting(now)))
		case vgpu.HandshakeRequesting:
			if age := now.Sub(handshake.Time); age > vgpu.HandshakeTimeout {
				t.Fatalf("at %v a request is %v old: the scheduler drops the node", now.Sub(start), age)
			}
		case vgpu.HandshakeDeleted:
			t.Fatalf("at %v the handshake says deleted", now.Sub(start))
		}
		h.clock.Step(time.Second)
	}
	if got, limit := h.r.Patches(), uint64(1+seconds/30); got > limit {
		t.Errorf("%d PATCHes in %d s, want at most %d (one per 30 s)", got, seconds, limit)
	}
}

func TestRetriesAfterErrors(t *testing.T) {
	t.Run("node not found", func(t *testing.T) {
		h := newHarness(t, defaultConfig(), twoGPUs())
		h.startCache(t)
		if wait := h.r.reconcile(h.ctx); wait != retryPeriod {
			t.Errorf("waits %v, want %v", wait, retryPeriod)
		}
		if got := h.r.Patches(); got != 0 {
			t.Errorf("%d PATCHes, want 0", got)
		}
	})
	t.Run("PATCH fails, then succeeds", func(t *testing.T) {
		h := newLegacyHarness(t, defaultConfig(), twoGPUs(), emptyNode())
		var fail atomic.Bool
		fail.Store(true)
		h.client.PrependReactor("patch", "nodes", func(k8stesting.Action) (bool, runtime.Object, error) {
			if fail.Load() {
				return true, nil, errors.New("apiserver unavailable")
			}
			return false, nil, nil
		})
		h.startCache(t)
		if wait := h.pass(t); wait != retryPeriod {
			t.Errorf("after a failed PATCH waits %v, want %v", wait, retryPeriod)
		}
		fail.Store(false)
		h.clock.Step(retryPeriod)
		if wait := h.pass(t); wait != resyncPeriod {
			t.Errorf("after a good PATCH waits %v, want %v", wait, resyncPeriod)
		}
		if got := h.stored(t)[vgpu.NodeDevicesAnnotation]; got != published {
			t.Errorf("published %q, want %q", got, published)
		}
		// The handshake was written by the second, successful PATCH.
		if got, want := h.stored(t)[vgpu.NodeHandshakeAnnotation], vgpu.FormatReported(start.Add(retryPeriod)); got != want {
			t.Errorf("handshake %q, want %q", got, want)
		}
	})
	t.Run("no GPU readable: the published list is kept", func(t *testing.T) {
		node := emptyNode()
		node.Annotations = map[string]string{vgpu.NodeDevicesAnnotation: published, vgpu.NodeHandshakeAnnotation: vgpu.FormatReported(start)}
		h := newLegacyHarness(t, defaultConfig(), nil, node)
		h.gpus.set(nil, errors.New("NVML: driver not loaded"))
		h.startCache(t)
		if wait := h.pass(t); wait != retryPeriod {
			t.Errorf("waits %v, want %v", wait, retryPeriod)
		}
		if got := h.r.Patches(); got != 0 {
			t.Errorf("%d PATCHes, want 0", got)
		}
	})
	t.Run("some GPUs unreadable: the others are published, and retried soon", func(t *testing.T) {
		h := newHarness(t, defaultConfig(), nil, emptyNode())
		h.gpus.set([]nvml.GPU{h200(1, 1, uuidB)}, errors.New("GPU 0 left out: get memory info: Unknown Error"))
		h.startCache(t)
		if wait := h.pass(t); wait != retryPeriod {
			t.Errorf("waits %v, want %v", wait, retryPeriod)
		}
		if got, want := h.stored(t)[vgpu.NodeDevicesAnnotation], uuidB+",10,143771,NVIDIA-NVIDIA H200,true,hami-core:"; got != want {
			t.Errorf("published %q, want %q", got, want)
		}
	})
}

// TestRun drives the real loop: the first pass at start, a health change
// published on Trigger without any time passing, and a scheduler's request
// answered when the timer fires.
func TestRun(t *testing.T) {
	h := newLegacyHarness(t, defaultConfig(), twoGPUs(), emptyNode())
	done := make(chan error, 1)
	go func() { done <- h.r.Run(h.ctx) }()
	waitFor(t, "first PATCH", func() bool { return h.r.Patches() == 1 })

	h.waitForCache(t)
	h.gpus.setHealth(uuidA, false)
	h.r.Trigger()
	waitFor(t, "health PATCH", func() bool { return h.r.Patches() == 2 })
	if got := h.stored(t)[vgpu.NodeDevicesAnnotation]; !strings.Contains(got, uuidA+",10,143771,NVIDIA-NVIDIA H200,false,") {
		t.Errorf("published %q, want %s unhealthy", got, uuidA)
	}

	h.waitForCache(t)
	h.setHandshake(t, ptr(vgpu.FormatRequesting(start)))
	h.waitForCache(t)
	waitFor(t, "loop waiting on its timer", h.clock.HasWaiters)
	h.clock.Step(HandshakeSpacing - time.Second)
	time.Sleep(50 * time.Millisecond)
	if got := h.r.Patches(); got != 2 {
		t.Fatalf("%d PATCHes before the spacing elapsed, want 2", got)
	}
	waitFor(t, "loop waiting on its timer", h.clock.HasWaiters)
	h.clock.Step(time.Second)
	waitFor(t, "handshake answered", func() bool {
		handshake, err := vgpu.ParseHandshake(h.stored(t)[vgpu.NodeHandshakeAnnotation])
		return err == nil && handshake.State == vgpu.HandshakeReported
	})
	if got := h.r.Patches(); got != 3 {
		t.Errorf("%d PATCHes, want 3", got)
	}
	h.cancel()
	if err := <-done; err != nil {
		t.Errorf("Run returned %v after its context ended, want nil", err)
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestHandshakeAnswer(t *testing.T) {
	last := start
	tests := []struct {
		name       string
		value      *string
		lastAnswer time.Time
		now        time.Time
		wantNeeded bool
		wantWait   time.Duration
	}{
		{name: "missing", now: start, lastAnswer: last, wantNeeded: true},
		{name: "our report stays however old", value: ptr(vgpu.FormatReported(start)), lastAnswer: last, now: start.Add(time.Hour)},
		{name: "upstream plugin's report", value: ptr("Reported 2026-05-09 17:11:16.12 +0800 CST m=+30.2"), lastAnswer: last, now: start},
		{name: "request, spacing not elapsed", value: ptr(vgpu.FormatRequesting(start.Add(10 * time.Second))),
			lastAnswer: last, now: start.Add(12 * time.Second), wantNeeded: true, wantWait: 18 * time.Second},
		{name: "request, spacing elapsed", value: ptr(vgpu.FormatRequesting(start.Add(10 * time.Second))),
			lastAnswer: last, now: start.Add(30 * time.Second), wantNeeded: true},
		{name: "request, never answered by this process", value: ptr(vgpu.FormatRequesting(start)),
			now: start, wantNeeded: true},
		{name: "deleted, spacing not elapsed", value: ptr(vgpu.FormatDeleted(start)), lastAnswer: last, now: start.Add(time.Second),
			wantNeeded: true, wantWait: 29 * time.Second},
		{name: "deleted, spacing elapsed", value: ptr(vgpu.FormatDeleted(start.Add(70 * time.Second))), lastAnswer: last,
			now: start.Add(70 * time.Second), wantNeeded: true},
		{name: "deleted, never answered by this process", value: ptr(vgpu.FormatDeleted(start)), now: start, wantNeeded: true},
		{name: "garbage request", value: ptr("Requesting_"), lastAnswer: last, now: start, wantNeeded: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			value, present := "", tt.value != nil
			if present {
				value = *tt.value
			}
			needed, wait := handshakeAnswer(value, present, tt.lastAnswer, tt.now)
			if needed != tt.wantNeeded || wait != tt.wantWait {
				t.Errorf("= (%v, %v), want (%v, %v)", needed, wait, tt.wantNeeded, tt.wantWait)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

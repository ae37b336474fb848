package nvml

import (
	"context"
	"strings"
	"testing"
	"time"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
)

// watch starts WatchHealth on f and returns the channel of its reports
// and the channel WatchHealth's result arrives on.
func watch(t *testing.T, f *Fake) (<-chan HealthEvent, <-chan error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	reports := make(chan HealthEvent, 16)
	done := make(chan error, 1)
	go func() { done <- f.WatchHealth(ctx, func(e HealthEvent) { reports <- e }) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Error("WatchHealth did not return after its context was cancelled")
		}
	})
	return reports, done
}

func nextReport(t *testing.T, reports <-chan HealthEvent) HealthEvent {
	t.Helper()
	select {
	case e := <-reports:
		return e
	case <-time.After(5 * time.Second):
		t.Fatal("no health report within 5s")
		return HealthEvent{}
	}
}

func newWatchedFake(t *testing.T, spec string, opts Options) *Fake {
	t.Helper()
	opts.EventWait = 10 * time.Millisecond
	f, err := NewFake(spec, "node-a", opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Init(); err != nil {
		t.Fatal(err)
	}
	return f
}

func TestCriticalXIDMarksGPUUnhealthy(t *testing.T) {
	f := newWatchedFake(t, "2xNVIDIA H200:143771", Options{})
	reports, _ := watch(t, f)
	sick := FakeUUID("node-a", 1)

	// 43 (the application's own fault) is ignored; 79 (fallen off the bus)
	// is not. Events arrive in order, so the first report must be the 79.
	for _, xid := range []uint64{43, 79, 48} {
		if err := f.InjectXID(sick, xid); err != nil {
			t.Fatal(err)
		}
	}
	got := nextReport(t, reports)
	if want := (HealthEvent{UUID: sick, Healthy: false, Reason: "XID 79"}); got != want {
		t.Errorf("report = %+v, want %+v", got, want)
	}

	// Health only goes one way, and one report per GPU is enough.
	select {
	case e := <-reports:
		t.Errorf("unexpected second report %+v", e)
	case <-time.After(100 * time.Millisecond):
	}

	gpus, err := f.Devices()
	if err != nil {
		t.Fatal(err)
	}
	if !gpus[0].Healthy || gpus[1].Healthy || gpus[1].UnhealthyReason != "XID 79" {
		t.Errorf("Devices after XID 79 on GPU 1 = %+v", gpus)
	}
}

func TestIgnoredXIDsFromPolicy(t *testing.T) {
	policy, err := XIDPolicyFromEnv(func(k string) string {
		return map[string]string{EnvDisableHealthChecks: "79"}[k]
	})
	if err != nil {
		t.Fatal(err)
	}
	f := newWatchedFake(t, "1xT4:15360", Options{XIDs: &policy})
	reports, _ := watch(t, f)
	uuid := FakeUUID("node-a", 0)
	for _, xid := range []uint64{79, 13, 94} {
		if err := f.InjectXID(uuid, xid); err != nil {
			t.Fatal(err)
		}
	}
	if got := nextReport(t, reports); got.Reason != "XID 94" {
		t.Errorf("first report %+v, want the one for XID 94", got)
	}
}

func TestWaitFailureMarksAllGPUsUnhealthy(t *testing.T) {
	f := newWatchedFake(t, "2xT4:15360", Options{})
	reports, _ := watch(t, f)
	if err := f.FailNextWait(gonvml.ERROR_UNKNOWN); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for i := 0; i < 2; i++ {
		e := nextReport(t, reports)
		if e.Healthy || !strings.Contains(e.Reason, "waiting for NVML events failed") {
			t.Errorf("report %+v, want unhealthy because the wait failed", e)
		}
		seen[e.UUID] = true
	}
	if !seen[FakeUUID("node-a", 0)] || !seen[FakeUUID("node-a", 1)] {
		t.Errorf("reports cover %v, want both GPUs", seen)
	}
}

func TestEventRegistrationFailureMarksGPUUnhealthy(t *testing.T) {
	f := newWatchedFake(t, "2xT4:15360", Options{})
	f.devices[0].GetSupportedEventTypesFunc = func() (uint64, gonvml.Return) { return 0, gonvml.ERROR_NOT_SUPPORTED }
	f.devices[1].RegisterEventsFunc = func(uint64, gonvml.EventSet) gonvml.Return { return gonvml.ERROR_GPU_IS_LOST }
	reports, _ := watch(t, f)
	e := nextReport(t, reports)
	if e.UUID != FakeUUID("node-a", 1) || !strings.Contains(e.Reason, "ERROR_GPU_IS_LOST") {
		t.Errorf("report %+v, want GPU 1 unhealthy naming ERROR_GPU_IS_LOST", e)
	}
	// GPU 0 merely cannot report events: it stays healthy.
	gpus, _ := f.Devices()
	if !gpus[0].Healthy {
		t.Errorf("GPU 0 = %+v, want healthy", gpus[0])
	}
}

func TestHealthChecksDisabled(t *testing.T) {
	policy, _ := XIDPolicyFromEnv(func(k string) string {
		return map[string]string{EnvDisableHealthChecks: "all"}[k]
	})
	f := newWatchedFake(t, "1xT4:15360", Options{XIDs: &policy})
	err := f.WatchHealth(context.Background(), func(e HealthEvent) { t.Errorf("unexpected report %+v", e) })
	if err != nil {
		t.Errorf("WatchHealth with checks disabled: %v, want nil", err)
	}
}

func TestOnlyOneWatcher(t *testing.T) {
	f := newWatchedFake(t, "1xT4:15360", Options{})
	reports, _ := watch(t, f)
	// Wait until the first watcher is running: a critical XID gets reported.
	if err := f.InjectXID(FakeUUID("node-a", 0), 79); err != nil {
		t.Fatal(err)
	}
	nextReport(t, reports)
	err := f.WatchHealth(context.Background(), nil)
	if err == nil || !strings.Contains(err.Error(), "already being watched") {
		t.Errorf("second WatchHealth: %v, want an error saying health is already watched", err)
	}
}

func TestInjectXIDUnknownGPU(t *testing.T) {
	f := newWatchedFake(t, "1xT4:15360", Options{})
	if err := f.InjectXID("GPU-nope", 79); err == nil || !strings.Contains(err.Error(), `"GPU-nope"`) {
		t.Errorf("InjectXID on an unknown GPU: %v, want an error naming it", err)
	}
}

// Every XID event reaches Options.XIDSeen with its GPU, those the policy ignores too: the
// device plugin's metrics count them all.
func TestEveryXIDIsSeen(t *testing.T) {
	type seen struct {
		uuid string
		xid  uint64
	}
	got := make(chan seen, 10)
	f := newWatchedFake(t, "2xT4:15360", Options{XIDSeen: func(uuid string, xid uint64) { got <- seen{uuid, xid} }})
	reports, _ := watch(t, f)
	gpu := FakeUUID("node-a", 1)
	for _, xid := range []uint64{43, 79} {
		if err := f.InjectXID(gpu, xid); err != nil {
			t.Fatal(err)
		}
	}
	nextReport(t, reports)
	for _, want := range []seen{{gpu, 43}, {gpu, 79}} {
		select {
		case s := <-got:
			if s != want {
				t.Errorf("XIDSeen got %+v, want %+v", s, want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("XIDSeen was not told of %+v", want)
		}
	}
}

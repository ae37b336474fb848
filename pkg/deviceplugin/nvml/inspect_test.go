package nvml

import (
	"strings"
	"testing"
)

func TestInspect(t *testing.T) {
	f := newTestFake(t, "1xNVIDIA H200:143771,1xTesla T4:15360")
	f.markUnhealthy(FakeUUID("node-a", 1), "XID 79")
	if err := f.SetUsage(FakeUUID("node-a", 0), 3000<<20, 42); err != nil {
		t.Fatal(err)
	}
	out, err := Inspect(f)
	if err != nil {
		t.Fatalf("Inspect: %v", err)
	}
	for _, want := range []string{
		"driver fake, NVML fake, CUDA 13.0",
		"2 GPU(s)",
		"INDEX",
		FakeUUID("node-a", 0) + "  NVIDIA H200  143771       3000       42%",
		"unhealthy: XID 79",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("Inspect output does not contain %q:\n%s", want, out)
		}
	}
}

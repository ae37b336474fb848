package vgpu

import (
	"math"
	"strconv"
	"testing"
	"time"
)

func TestAssignedTimeReleasedIsMaxUint64(t *testing.T) {
	if AssignedTimeReleased != strconv.FormatUint(math.MaxUint64, 10) {
		t.Fatalf("AssignedTimeReleased = %q", AssignedTimeReleased)
	}
	if got, err := ParseUnixSeconds(AssignedTimeReleased); err != nil || got != math.MaxUint64 {
		t.Fatalf("ParseUnixSeconds(released) = %d, %v", got, err)
	}
}

func TestUnixSeconds(t *testing.T) {
	at := time.Unix(1778317876, 500)
	value := FormatUnixSeconds(at)
	if value != "1778317876" {
		t.Fatalf("FormatUnixSeconds = %q", value)
	}
	if got, err := ParseUnixSeconds(value); err != nil || got != 1778317876 {
		t.Fatalf("ParseUnixSeconds(%q) = %d, %v", value, got, err)
	}
	for _, bad := range []string{"", "-1", "+1", "1.5", "18446744073709551616"} {
		if got, err := ParseUnixSeconds(bad); err == nil {
			t.Errorf("ParseUnixSeconds(%q) = %d, want an error", bad, got)
		}
	}
}

func TestDeviceTypeForModel(t *testing.T) {
	if got := DeviceTypeForModel("NVIDIA H200"); got != "NVIDIA-NVIDIA H200" {
		t.Fatalf("DeviceTypeForModel = %q", got)
	}
}

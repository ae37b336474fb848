package vgpu

import (
	"testing"
	"time"
)

func TestNodeLockValue(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	if got, want := NodeLockValue(at), "2026-01-02T03:04:05Z"; got != want {
		t.Errorf("NodeLockValue = %q, want %q", got, want)
	}
}

func TestNodeLockHeld(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		value string
		want  bool
	}{
		{NodeLockValue(now.Add(-time.Minute)), true},
		{NodeLockValue(now.Add(-NodeLockExpiry + time.Second)), true},
		{NodeLockValue(now.Add(-NodeLockExpiry)), false},
		{"2026-01-02T02:59:05Z", false},
		{"not a time", false},
		{"", false},
	}
	for _, tt := range tests {
		if got := NodeLockHeld(tt.value, now); got != tt.want {
			t.Errorf("NodeLockHeld(%q) = %v, want %v", tt.value, got, tt.want)
		}
	}
}

// Both halves release a lock with this patch: it removes the lock only while it holds the
// value its sender took or read.
func TestNodeLockReleasePatch(t *testing.T) {
	got := string(NodeLockReleasePatch("2026-01-02T03:04:05Z"))
	want := `[{"op":"test","path":"/metadata/annotations/hamivgpu","value":"2026-01-02T03:04:05Z"},{"op":"remove","path":"/metadata/annotations/hamivgpu"}]`
	if got != want {
		t.Errorf("NodeLockReleasePatch:\n got %s\nwant %s", got, want)
	}
}

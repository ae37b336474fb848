package vgpu

import (
	"reflect"
	"testing"
)

// TestMemoryAndPercentageBothSet: a container that sets both the memory and the memory
// percentage resource gets its memory; the percentage is ignored, not refused (as upstream),
// so it books the same on every GPU (docs/bad-input.md).
func TestMemoryAndPercentageBothSet(t *testing.T) {
	got, err := PodRequests(pod(container("main", []string{number + "=1", memory + "=1000", percentage + "=50"}, nil)), DefaultResourceNames())
	if err != nil {
		t.Fatal(err)
	}
	want := []ContainerRequest{{ContainerName: "main", Count: 1, Memory: 1000, MemoryPercentage: 50}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("PodRequests = %+v, want %+v", got, want)
	}
	if m := got[0].MemoryOn(30000); m != 1000 {
		t.Errorf("books %d units on a GPU of 30000, want the 1000 asked, not 50%%", m)
	}
}

package nodesearch

import (
	"fmt"
	"testing"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
)

// Pods that no plugin tells apart spread over equal nodes, as upstream's random pick spreads
// them, and each pod's pick is the same every time.
func TestTieKeySpreadsAndRepeats(t *testing.T) {
	nodes := []string{"rig01", "rig02"}
	wins := map[string]int{}
	for i := range 200 {
		uid := api.TaskID(fmt.Sprintf("5f0c7a3e-0000-4000-8000-%012d", i))
		pick := func() string {
			if tieKey(uid, nodes[0]) < tieKey(uid, nodes[1]) {
				return nodes[0]
			}
			return nodes[1]
		}
		first := pick()
		if again := pick(); again != first {
			t.Fatalf("pod %s: picked %s, then %s", uid, first, again)
		}
		wins[first]++
	}
	if wins["rig01"] < 70 || wins["rig02"] < 70 {
		t.Errorf("200 pods split %v over two equal nodes, want each to get a fair share", wins)
	}
	if tieKey("ab", "c") == tieKey("a", "bc") {
		t.Errorf("the pod's UID and the node's name run together")
	}
}

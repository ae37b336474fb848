package queuetree

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/testing/st"
)

// queues builds the queues from name -> spec.parent.
func queues(parents map[string]string) map[api.QueueID]*api.QueueInfo {
	out := map[api.QueueID]*api.QueueInfo{}
	for name, parent := range parents {
		q := st.MakeQueue().Name(name).Obj()
		q.Spec.Parent = parent
		out[api.QueueID(name)] = api.NewQueueInfo(q)
	}
	return out
}

func TestTree(t *testing.T) {
	tree := Build(queues(map[string]string{
		"root": "ignored", "org": "", "team-a": "org", "team-b": "org", "default": "",
		"orphan": "gone", "below-orphan": "orphan",
		"x": "y", "y": "x", "self": "self",
	}))

	if got, want := tree.Ancestors("team-a"), []api.QueueID{"org", "root"}; !cmp.Equal(got, want) {
		t.Errorf("ancestors of team-a %v, want %v", got, want)
	}
	if got := tree.Ancestors("root"); got != nil {
		t.Errorf("the root has ancestors %v", got)
	}
	if got, want := tree.Children("root"), []api.QueueID{"default", "org"}; !cmp.Equal(got, want) {
		t.Errorf("children of root %v, want %v", got, want)
	}

	refusals := map[api.QueueID]string{
		"team-a":       "",
		"default":      "",
		"root":         "can not submit job to root queue",
		"org":          "can only submit job to leaf queue, queue `org` has 2 child queues",
		"orphan":       "queue `orphan` is not in the queue hierarchy: queue orphan names parent queue gone, which does not exist",
		"below-orphan": "queue `below-orphan` is not in the queue hierarchy: queue orphan names parent queue gone, which does not exist",
		"x":            "queue `x` is not in the queue hierarchy: spec.parent forms a cycle: x -> y -> x",
		"self":         "queue `self` is not in the queue hierarchy: spec.parent forms a cycle: self -> self",
	}
	for q, want := range refusals {
		if got := tree.LeafRefusal(q); got != want {
			t.Errorf("refusal of %s: %q, want %q", q, got, want)
		}
	}

	var broken []string
	for _, p := range tree.Problems() {
		broken = append(broken, p.Queue.Name+":"+p.Reason)
	}
	want := []string{"below-orphan:ParentQueueNotFound", "orphan:ParentQueueNotFound", "self:QueueHierarchyCycle",
		"x:QueueHierarchyCycle", "y:QueueHierarchyCycle"}
	if !cmp.Equal(broken, want) {
		t.Errorf("problems %v, want %v", broken, want)
	}
	if tree.InTree("x") || !tree.InTree("team-b") || tree.Ancestors("orphan") != nil {
		t.Errorf("a broken queue counts as in the tree, or a good one does not")
	}
}

// TestMissingRoot: without a root queue object the tree still hangs every queue under it.
func TestMissingRoot(t *testing.T) {
	tree := Build(queues(map[string]string{"team": ""}))
	if got, want := tree.Ancestors("team"), []api.QueueID{Root}; !cmp.Equal(got, want) || len(tree.Problems()) > 0 {
		t.Errorf("ancestors %v (want %v), problems %v", got, want, tree.Problems())
	}
}

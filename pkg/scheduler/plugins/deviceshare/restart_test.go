package deviceshare

import (
	"context"
	"os"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	kubefake "k8s.io/client-go/kubernetes/fake"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
	vcfake "volcano.sh/apis/pkg/client/clientset/versioned/fake"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/actions/allocate"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/cache"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/conf"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/plugins/gang"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/plugins/predicates"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/testing/st"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/vgpu"
)

// TestMain turns off client-go's watch-list streaming: volcano.sh/apis' fake clientset never
// ends its initial list with the bookmark a watch-list reflector waits for.
func TestMain(m *testing.M) {
	if err := os.Setenv("KUBE_FEATURE_WatchListClient", "false"); err != nil {
		panic(err)
	}
	os.Exit(m.Run())
}

// startCache starts a scheduler cache, with the deviceshare deriver, over the clientsets,
// as vc-scheduler does at start-up, and waits for its informers.
func startCache(t *testing.T, kube *kubefake.Clientset, vc *vcfake.Clientset) *cache.SchedulerCache {
	t.Helper()
	sc, err := cache.New(context.Background(), cache.Options{}, kube, vc)
	if err != nil {
		t.Fatal(err)
	}
	sc.AddDeviceDeriver(NewDeriver())
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	sc.Run(ctx)
	syncCtx, done := context.WithTimeout(ctx, 30*time.Second)
	defer done()
	if !sc.WaitForCacheSync(syncCtx) {
		t.Fatal("cache did not sync")
	}
	return sc
}

// TestRestartRebuildsLedger: a scheduler that starts over the pods an earlier one bound
// derives the same GPU ledger from their annotations, and so never books a taken slot again.
func TestRestartRebuildsLedger(t *testing.T) {
	node := gpuNode("n1", 0, gpus(2, 2, 30000, h200))
	// Kubelet's count is deliberately above the GPUs' slots, so that only the ledger can
	// keep the new pods off the taken slots.
	node.Status.Allocatable[resCount] = resource.MustParse("100")
	objects := []runtime.Object{node,
		// Bound by the previous scheduler: GPU 0 full, one slot of GPU 1 taken.
		runningWith(pod("old-0", "old"), "n1", dev(0, "1000", "0")),
		runningWith(pod("old-1", "old"), "n1", dev(0, "2000", "0")),
		runningWith(pod("old-2", "old"), "n1", dev(1, "4000", "0")),
		pod("new-0", "pg", vgpuCtr("main", 1, 1000, 0)),
		pod("new-1", "pg", vgpuCtr("main", 1, 1000, 0)),
	}
	kube := kubefake.NewClientset(objects...)
	vc := vcfake.NewSimpleClientset( //nolint:staticcheck // NewClientset cannot store cluster-scoped Queues
		st.MakePodGroup().Namespace(testNS).Name("pg").MinMember(1).Queue("default").Phase(schedulingv1beta1.PodGroupInqueue).Obj())

	const want = "0:2/3000/0 1:1/4000/0"
	first := startCache(t, kube, vc)
	if got := usageOf(ledgerOf(first.Snapshot().Nodes["n1"])); got != want {
		t.Fatalf("first cache's ledger %s, want %s", got, want)
	}
	restarted := startCache(t, kube, vc)
	if got := usageOf(ledgerOf(restarted.Snapshot().Nodes["n1"])); got != want {
		t.Fatalf("restarted cache's ledger %s, want %s", got, want)
	}

	cfg := &conf.SchedulerConfiguration{Actions: "allocate", Tiers: []conf.Tier{
		{Plugins: []conf.PluginOption{{Name: gang.PluginName}}},
		{Plugins: []conf.PluginOption{{Name: predicates.PluginName}, {Name: PluginName, Arguments: conf.Arguments{VGPUEnableArg: true}}}},
	}}
	reg := registry(map[string]framework.PluginBuilder{gang.PluginName: gang.New, predicates.PluginName: predicates.New})
	ssn := framework.OpenSession(restarted, cfg, reg, nil)
	allocate.New().Execute(ssn)
	framework.CloseSession(ssn)

	var placed []string
	for _, task := range ssn.Jobs["ns/pg"].Tasks {
		if task.Status == api.Binding {
			placed = append(placed, task.Name+" "+task.BindAnnotations[vgpu.AssignedDevicesAnnotation])
		}
	}
	if len(placed) != 1 || placed[0] != "new-0 "+dev(1, "1000", "0") {
		t.Errorf("placed %q, want only new-0 on the free slot of GPU 1", placed)
	}
	// The cache counts the placement it accepted at once, in the ledger of the next session.
	if got := usageOf(ledgerOf(restarted.Snapshot().Nodes["n1"])); got != "0:2/3000/0 1:2/5000/0" {
		t.Errorf("after the bind, the cache's ledger is %s", got)
	}
}

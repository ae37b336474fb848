package devicewatch

import (
	"context"
	"fmt"
	"os"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	apiwatch "k8s.io/apimachinery/pkg/watch"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/testing/st"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/vgpu"
)

// TestMain turns off client-go's watch-list streaming, which the fake clientset does not
// end with the bookmark a watch-list reflector waits for.
func TestMain(m *testing.M) {
	if err := os.Setenv("KUBE_FEATURE_WatchListClient", "false"); err != nil {
		panic(err)
	}
	os.Exit(m.Run())
}

var slices = Key{Namespace: "gpu-system", Name: "gpu-slices"}

// sliceNames are resource names other than the shipped ones.
var sliceNames = vgpu.ResourceNames{
	Count: "example.com/gpu-slices", Memory: "example.com/gpu-slice-memory",
	Cores: "example.com/gpu-slice-cores", MemoryPercentage: "example.com/gpu-slice-memory-percentage",
}

// sliceYAML is device-config.yaml renaming the resources to names, with one MIG model.
func sliceYAML(names vgpu.ResourceNames) string {
	return fmt.Sprintf(`nvidia:
  resourceCountName: %s
  resourceMemoryName: %s
  resourceCoreName: %s
  resourceMemoryPercentageName: %s
  knownMigGeometries:
  - models: ["A30"]
    allowedGeometries:
    - group: group1
      geometries:
      - {name: 1g.6gb, memory: 6144, count: 4}
`, names.Count, names.Memory, names.Cores, names.MemoryPercentage)
}

func configMap(key Key, resourceVersion, data string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name, ResourceVersion: resourceVersion},
		Data:       map[string]string{vgpu.DeviceConfigKey: data},
	}
}

// changeCounter counts OnChange calls.
type changeCounter struct {
	mu sync.Mutex
	n  int
}

func (c *changeCounter) inc() { c.mu.Lock(); c.n++; c.mu.Unlock() }

func (c *changeCounter) take() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.n
	c.n = 0
	return n
}

// await waits for one OnChange call, and fails the test on more.
func (c *changeCounter) await(t *testing.T, what string) {
	t.Helper()
	eventually(t, "OnChange is called for "+what, func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.n > 0
	})
	if got := c.take(); got != 1 {
		t.Errorf("OnChange called %d times for %s, want once", got, what)
	}
}

// eventually waits for cond, failing the test after a few seconds.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
	}
}

// testSource is a Source whose watches end with the test.
type testSource struct {
	*Source
	ctx context.Context
}

// Use selects key, as cmd/vc-scheduler does for the ConfigMap its configuration names.
func (s *testSource) Use(key Key) vgpu.NvidiaConfig { return s.Select(s.ctx, key) }

// newTestSource is a Source over a fake clientset holding objects.
func newTestSource(t *testing.T, objects ...runtime.Object) (*testSource, *kubefake.Clientset, *st.EventLog, *changeCounter) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	client := kubefake.NewClientset(objects...)
	events, changes := &st.EventLog{}, &changeCounter{}
	s := &testSource{Source: NewSource(client, events), ctx: ctx}
	s.OnChange(changes.inc)
	return s, client, events, changes
}

// TestWatchesOnlyItsConfigMap: a Source lists and watches the ConfigMap it is asked for by
// name in its namespace, never ConfigMaps at large, and only once asked.
func TestWatchesOnlyItsConfigMap(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	client := kubefake.NewClientset()
	var mu sync.Mutex
	var seen []string
	record := func(action k8stesting.Action) (bool, runtime.Object, error) {
		var fields string
		switch a := action.(type) {
		case k8stesting.ListAction:
			fields = a.GetListRestrictions().Fields.String()
		case k8stesting.WatchAction:
			fields = a.GetWatchRestrictions().Fields.String()
		}
		mu.Lock()
		seen = append(seen, fmt.Sprintf("%s %s %s", action.GetVerb(), action.GetNamespace(), fields))
		mu.Unlock()
		return false, nil, nil
	}
	client.PrependReactor("*", "configmaps", record)
	client.PrependWatchReactor("configmaps", func(action k8stesting.Action) (bool, apiwatch.Interface, error) {
		_, _, _ = record(action)
		return false, nil, nil
	})
	s := NewSource(client, nil)
	time.Sleep(50 * time.Millisecond)
	mu.Lock()
	if len(seen) != 0 {
		t.Errorf("calls before any lookup: %q", seen)
	}
	mu.Unlock()

	s.Select(ctx, slices)
	eventually(t, "the watch starts", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(seen) >= 2
	})
	mu.Lock()
	defer mu.Unlock()
	for _, call := range seen {
		if !strings.HasSuffix(call, " gpu-system metadata.name=gpu-slices") {
			t.Errorf("call %q, want only list and watch of gpu-system/gpu-slices", call)
		}
	}
}

// TestMissingConfigMapServesDefaults: without the ConfigMap the shipped defaults are in
// force, for the plugin and the deriver alike, and nothing is reported.
func TestMissingConfigMapServesDefaults(t *testing.T) {
	s, _, events, changes := newTestSource(t)
	want := vgpu.DefaultNvidiaConfig()
	if got := s.InUse(); !reflect.DeepEqual(got, want) {
		t.Errorf("InUse before any session = %+v, want the defaults", got)
	}
	if got := s.Use(slices); !reflect.DeepEqual(got, want) {
		t.Errorf("Use = %+v, want the defaults", got)
	}
	if got := s.InUse(); !reflect.DeepEqual(got, want) {
		t.Errorf("InUse = %+v, want the defaults", got)
	}
	if got := changes.take(); got != 1 {
		t.Errorf("OnChange called %d times, want once (another ConfigMap in use)", got)
	}
	if got := events.Take(); got != nil {
		t.Errorf("events %q, want none", got)
	}
}

// TestConfigMapFollowed: the names and MIG geometries of the ConfigMap are served from its
// first read on; an update, and the ConfigMap's deletion, apply and tell OnChange while it
// is in use; the deriver follows the ConfigMap the plugin used last.
func TestConfigMapFollowed(t *testing.T) {
	ctx := context.Background()
	s, client, events, changes := newTestSource(t, configMap(slices, "1", sliceYAML(sliceNames)))

	c := s.Use(slices)
	if got := c.ResourceNames(); got != sliceNames {
		t.Fatalf("names %+v, want %+v", got, sliceNames)
	}
	if groups, ok := c.MIGGeometriesFor("NVIDIA-NVIDIA A30"); !ok || len(groups) != 1 || groups[0].Geometries[0].Name != "1g.6gb" {
		t.Errorf("MIG geometries for A30: %+v, %v; want the ConfigMap's", groups, ok)
	}
	if got := s.InUse().ResourceNames(); got != sliceNames {
		t.Errorf("InUse names %+v, want the ConfigMap's in use", got)
	}
	if got := changes.take(); got != 1 {
		t.Errorf("OnChange called %d times for the first Use, want 1", got)
	}
	if got := s.Use(slices).ResourceNames(); got != sliceNames || changes.take() != 0 {
		t.Errorf("a second Use changed something: names %+v", got)
	}

	renamed := sliceNames
	renamed.Count = "example.com/gpu-shares"
	if _, err := client.CoreV1().ConfigMaps(slices.Namespace).Update(ctx, configMap(slices, "2", sliceYAML(renamed)), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	changes.await(t, "the update")
	if got := s.InUse().ResourceNames(); got != renamed {
		t.Errorf("names after the update %+v, want %+v", got, renamed)
	}

	// Back to the default ConfigMap, which does not exist: the defaults, and a change.
	if got := s.Use(DefaultKey()).ResourceNames(); got != vgpu.DefaultResourceNames() {
		t.Errorf("default ConfigMap names %+v, want the shipped ones", got)
	}
	if got := changes.take(); got != 1 {
		t.Errorf("OnChange called %d times when the default ConfigMap came into use, want 1", got)
	}
	// A ConfigMap not in use changes without telling.
	if _, err := client.CoreV1().ConfigMaps(slices.Namespace).Update(ctx, configMap(slices, "3", sliceYAML(sliceNames)), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the update applies", func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.resolved[slices].config.ResourceNames() == sliceNames
	})
	if got := changes.take(); got != 0 {
		t.Errorf("OnChange called %d times for a ConfigMap not in use", got)
	}
	if got := s.Use(slices).ResourceNames(); got != sliceNames || changes.take() != 1 {
		t.Errorf("Use = %+v; want the update, and one OnChange for the ConfigMap coming into use", got)
	}

	if err := client.CoreV1().ConfigMaps(slices.Namespace).Delete(ctx, slices.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	changes.await(t, "the deletion")
	if got := s.InUse().ResourceNames(); got != vgpu.DefaultResourceNames() {
		t.Errorf("names after the deletion %+v, want the defaults", got)
	}
	if got := events.Take(); got != nil {
		t.Errorf("events %q, want none", got)
	}
}

// TestMalformedConfigMapKeepsLastGood: a ConfigMap that does not parse leaves the last good
// configuration in force (the defaults when there was none) and is reported once per
// resourceVersion, on the ConfigMap, naming it and the field.
func TestMalformedConfigMapKeepsLastGood(t *testing.T) {
	ctx := context.Background()
	bad := strings.Replace(sliceYAML(sliceNames), "example.com/gpu-slices", "gpu slices", 1)
	s, client, events, changes := newTestSource(t, configMap(slices, "1", bad))

	if got := s.Use(slices).ResourceNames(); got != vgpu.DefaultResourceNames() {
		t.Errorf("names %+v, want the defaults: no good configuration yet", got)
	}
	if got := changes.take(); got != 1 {
		t.Errorf("OnChange called %d times for the first Use, want 1", got)
	}
	got := events.Take()
	if len(got) != 1 || !strings.HasPrefix(got[0], "ConfigMap gpu-system/gpu-slices Warning "+InvalidReason+": ConfigMap gpu-system/gpu-slices: ") ||
		!strings.Contains(got[0], "nvidia.resourceCountName") {
		t.Errorf("events %q, want one Warning on the ConfigMap naming it and the field", got)
	}

	if _, err := client.CoreV1().ConfigMaps(slices.Namespace).Update(ctx, configMap(slices, "2", sliceYAML(sliceNames)), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	changes.await(t, "the fix")
	if got := s.InUse().ResourceNames(); got != sliceNames {
		t.Errorf("names after the fix %+v, want %+v", got, sliceNames)
	}

	noKey := configMap(slices, "3", "")
	noKey.Data = map[string]string{"config.yaml": sliceYAML(sliceNames)}
	if _, err := client.CoreV1().ConfigMaps(slices.Namespace).Update(ctx, noKey, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the bad update is reported", func() bool { return len(events.Take()) == 1 })
	if got := s.InUse().ResourceNames(); got != sliceNames {
		t.Errorf("names %+v after a bad update, want the last good ones", got)
	}
	if got := changes.take(); got != 0 {
		t.Errorf("OnChange called %d times for a rejected update", got)
	}

	// The same resourceVersion again (a relist) is not reported twice.
	s.resolve(s.resolved[slices])
	if got := events.Take(); got != nil {
		t.Errorf("the same resourceVersion reported again: %q", got)
	}
}

// TestStatic: a static Source serves its configuration for every ConfigMap and calls nothing.
func TestStatic(t *testing.T) {
	c := vgpu.DefaultNvidiaConfig()
	c.ResourceCountName = sliceNames.Count
	s := Static(c)
	s.OnChange(func() { t.Error("OnChange called") })
	if got := s.Select(context.Background(), slices); !reflect.DeepEqual(got, c) {
		t.Errorf("Select = %+v, want %+v", got, c)
	}
	if got := s.InUse(); !reflect.DeepEqual(got, c) {
		t.Errorf("InUse = %+v, want %+v", got, c)
	}
}

// TestFallbackNamespace: for the default ConfigMap the Source resolves as the device plugin
// does: kube-system's when it exists, else volcano-system's, and it follows the deletion of
// kube-system's to volcano-system's.
func TestFallbackNamespace(t *testing.T) {
	fallback := Key{Namespace: vgpu.FallbackConfigNamespace, Name: vgpu.DeviceConfigMapName}
	s, client, _, changes := newTestSource(t, configMap(fallback, "1", sliceYAML(sliceNames)))
	if got := s.Use(DefaultKey()).ResourceNames(); got != sliceNames {
		t.Errorf("names %+v, want volcano-system's %+v", got, sliceNames)
	}
	changes.take()
	renamed := sliceNames
	renamed.Count = "example.com/kube-system-slices"
	ctx := context.Background()
	if _, err := client.CoreV1().ConfigMaps(vgpu.DefaultConfigNamespace).Create(ctx, configMap(DefaultKey(), "2", sliceYAML(renamed)), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	changes.await(t, "kube-system's ConfigMap appearing")
	if got := s.InUse().ResourceNames(); got != renamed {
		t.Errorf("names %+v, want kube-system's %+v", got, renamed)
	}
	if err := client.CoreV1().ConfigMaps(vgpu.DefaultConfigNamespace).Delete(ctx, DefaultKey().Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	changes.await(t, "kube-system's ConfigMap deleted")
	if got := s.InUse().ResourceNames(); got != sliceNames {
		t.Errorf("names %+v, want volcano-system's again", got)
	}
}

package upstreamtest

import (
	"embed"
	"fmt"
	"path"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

//go:embed testdata/*.yaml
var goldens embed.FS

// GoldenNode is a Node as an upstream device plugin release leaves it.
type GoldenNode struct {
	// Plugin is the release that wrote it.
	Plugin PluginRelease
	// File is the golden file's name under testdata/.
	File string
	// MemoryFactor is the gpuMemoryFactor the plugin ran with: MiB per vgpu-memory unit.
	MemoryFactor int32
	Node         *corev1.Node
}

// goldenFiles are the golden Nodes, by the release that wrote them.
var goldenFiles = []struct {
	plugin PluginRelease
	file   string
	factor int32
}{
	{PluginV1_11, "node-plugin-v1.11.yaml", 1},
	{PluginV1_12, "node-plugin-v1.12.yaml", 2},
	{PluginV1_12, "node-plugin-v1.12-mig.yaml", 1},
}

// Nodes returns fresh copies of the golden Nodes. It panics on a golden file that does not
// parse: that is a broken test tree, not a test result.
func Nodes() []GoldenNode {
	nodes := make([]GoldenNode, 0, len(goldenFiles))
	for _, g := range goldenFiles {
		data, err := goldens.ReadFile(path.Join("testdata", g.file))
		if err != nil {
			panic(err)
		}
		var node corev1.Node
		if err := yaml.UnmarshalStrict(data, &node); err != nil {
			panic(fmt.Sprintf("golden %s: %v", g.file, err))
		}
		nodes = append(nodes, GoldenNode{Plugin: g.plugin, File: g.file, MemoryFactor: g.factor, Node: &node})
	}
	return nodes
}

// GoldenPod is a Pod as an upstream scheduler release leaves it once it has placed the pod.
type GoldenPod struct {
	// Scheduler is the release that wrote it.
	Scheduler string
	File      string
	Pod       *corev1.Pod
}

// Pods returns fresh copies of the golden Pods; see Nodes.
func Pods() []GoldenPod {
	files := []struct{ scheduler, file string }{{SchedulerV1_13.Name, "pod-scheduler-v1.13.yaml"}}
	pods := make([]GoldenPod, 0, len(files))
	for _, g := range files {
		data, err := goldens.ReadFile(path.Join("testdata", g.file))
		if err != nil {
			panic(err)
		}
		var pod corev1.Pod
		if err := yaml.UnmarshalStrict(data, &pod); err != nil {
			panic(fmt.Sprintf("golden %s: %v", g.file, err))
		}
		pods = append(pods, GoldenPod{Scheduler: g.scheduler, File: g.file, Pod: &pod})
	}
	return pods
}

// Package binpack prefers the nodes that the task fills most, so that whole nodes stay free
// for large tasks. For each weighted resource the task requests, the node's share in use
// once the task is placed, (used + request) / allocatable, is averaged with the resources'
// weights and scaled to 0–100 × binpack.weight. A node the task would overfill in any of
// those resources scores 0.
package binpack

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/conf"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework"
)

// PluginName is the plugin's name in volcano-scheduler.conf.
const PluginName = "binpack"

// Arguments, upstream's names. Weights are whole numbers, 0 or more.
const (
	// Weight scales the plugin's score; default 1.
	Weight = "binpack.weight"
	// CPUWeight and MemoryWeight weigh cpu and memory; default 1.
	CPUWeight    = "binpack.cpu"
	MemoryWeight = "binpack.memory"
	// Resources lists further resources, comma-separated, e.g. "volcano.sh/vgpu-memory".
	// Each is weighed by ResourceWeightPrefix + its name (default 1). cpu and memory there
	// are left to their own weights.
	Resources            = "binpack.resources"
	ResourceWeightPrefix = "binpack.resources."
)

// ArgumentKeys are the arguments New reads: the weights, the list of further resources and
// a weight for each of them.
var ArgumentKeys = conf.ArgumentKeys{Weight, CPUWeight, MemoryWeight, Resources, ResourceWeightPrefix + "*"}

// MaxNodeScore is the score of a node the task fills exactly, before binpack.weight.
const MaxNodeScore = 100

// weightedResource is one resource that counts, with a weight above 0.
type weightedResource struct {
	name   corev1.ResourceName
	weight float64
}

type binpackPlugin struct {
	weight    float64
	resources []weightedResource
}

// New builds the plugin from its arguments. A weight that is not a whole number, or is
// negative, is an error naming the argument.
func New(args conf.Arguments) (framework.Plugin, error) {
	weight, err := readWeight(args, Weight)
	if err != nil {
		return nil, err
	}
	p := &binpackPlugin{weight: float64(weight)}
	if err := p.addResource(args, corev1.ResourceCPU, CPUWeight); err != nil {
		return nil, err
	}
	if err := p.addResource(args, corev1.ResourceMemory, MemoryWeight); err != nil {
		return nil, err
	}
	var list string
	if err := args.GetString(&list, Resources); err != nil {
		return nil, err
	}
	seen := map[corev1.ResourceName]bool{corev1.ResourceCPU: true, corev1.ResourceMemory: true}
	for _, item := range strings.Split(list, ",") {
		name := corev1.ResourceName(strings.TrimSpace(item))
		if name == "" || seen[name] {
			continue
		}
		seen[name] = true
		if err := p.addResource(args, name, ResourceWeightPrefix+string(name)); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// addResource reads the resource's weight from key (default 1) and keeps it if above 0.
func (p *binpackPlugin) addResource(args conf.Arguments, name corev1.ResourceName, key string) error {
	w, err := readWeight(args, key)
	if err != nil {
		return err
	}
	if w > 0 {
		p.resources = append(p.resources, weightedResource{name: name, weight: float64(w)})
	}
	return nil
}

// readWeight reads a weight that defaults to 1.
func readWeight(args conf.Arguments, key string) (int, error) {
	w := 1
	if err := args.GetInt(&w, key); err != nil {
		return 0, err
	}
	if w < 0 {
		return 0, conf.InvalidArgument(key, w, fmt.Sprintf("weight %d is negative", w))
	}
	return w, nil
}

func (p *binpackPlugin) Name() string { return PluginName }

// OnSessionOpen registers the score unless it would be 0 everywhere.
func (p *binpackPlugin) OnSessionOpen(ssn *framework.Session) {
	if p.weight == 0 || len(p.resources) == 0 {
		return
	}
	ssn.AddNodeOrderFn(PluginName, p.score)
}

func (p *binpackPlugin) OnSessionClose(*framework.Session) {}

// score is Σ w_r × (used_r + request_r) / allocatable_r over the weighted resources the task
// requests, divided by Σ w_r, × 100 × binpack.weight; 0 when one of them overflows or the
// task requests none of them.
func (p *binpackPlugin) score(task *api.TaskInfo, node *api.NodeInfo) (float64, error) {
	var sum, weights float64
	for _, r := range p.resources {
		request := task.Resreq.Get(r.name)
		if request < api.Tolerance {
			continue
		}
		allocatable := node.Allocatable.Get(r.name)
		used := node.Used.Get(r.name) + request
		if used-allocatable >= api.Tolerance {
			return 0, nil
		}
		sum += r.weight * used / allocatable
		weights += r.weight
	}
	if weights == 0 {
		return 0, nil
	}
	return sum / weights * MaxNodeScore * p.weight, nil
}

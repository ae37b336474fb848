package predicates

import (
	"fmt"
	"math"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/conf"
)

// Upstream's arguments of the proportional check, under its names.
const (
	// ProportionalEnable switches the check on; default false, as upstream.
	ProportionalEnable = "predicate.ProportionalEnable"
	// ProportionalResources lists the resources whose idle amount holds cpu and memory back,
	// comma-separated: "nvidia.com/gpu" or "volcano.sh/vgpu-number".
	ProportionalResources = "predicate.resources"
	// ProportionalRatePrefix + <resource> + CPURateSuffix (or MemoryRateSuffix) is the rate
	// of one listed resource: cores, or GB of 10^9 bytes, kept per idle unit; default 1.
	ProportionalRatePrefix = ProportionalResources + "."
	CPURateSuffix          = ".cpu"
	MemoryRateSuffix       = ".memory"
)

// ProportionalReason is upstream's reason for a node that would keep too little cpu or
// memory for its idle amount of resource.
func ProportionalReason(resource corev1.ResourceName) string {
	return fmt.Sprintf("proportional of resource %s check failed", resource)
}

// bytesPerGB: upstream multiplies a memory rate by 10^6 per milli-unit of the resource, so
// that a rate is in GB (10^9 bytes), not GiB, per unit.
const bytesPerGB = 1e9

// reserve is what a node keeps back per milli-unit of one listed resource it has idle.
type reserve struct {
	resource corev1.ResourceName
	// milliCPU is millicores per milli-unit, which is the rate in cores per unit; memory is
	// bytes per milli-unit.
	milliCPU, memory float64
	verdict          *api.Status
}

// proportional are the reserves of the listed resources, in the order of the list; nil when
// the check is off.
type proportional []reserve

// readProportional reads the check's arguments. They are read, and a malformed one refused,
// whether or not the check is on, as every other switch's; the reserves are kept only when
// it is on. Refused: a list with an empty item, cpu or memory in the list (they are what the
// rates keep), a rate that is not a finite number of 0 or more, and a rate key that names
// no listed resource or neither .cpu nor .memory (its value would never be read).
func readProportional(args conf.Arguments) (proportional, error) {
	on := false
	if err := args.GetBool(&on, ProportionalEnable); err != nil {
		return nil, err
	}
	var list string
	if err := args.GetString(&list, ProportionalResources); err != nil {
		return nil, err
	}
	var reserves proportional
	if strings.TrimSpace(list) != "" {
		for _, item := range strings.Split(list, ",") {
			name := corev1.ResourceName(strings.TrimSpace(item))
			switch {
			case name == "":
				return nil, conf.InvalidArgument(ProportionalResources, list,
					fmt.Sprintf("%q has an empty resource name: want names separated by single commas", list))
			case name == corev1.ResourceCPU || name == corev1.ResourceMemory:
				return nil, conf.InvalidArgument(ProportionalResources, list,
					fmt.Sprintf("%q lists %s, which the rates keep free: list scalar resources such as nvidia.com/gpu", list, name))
			case slices.ContainsFunc(reserves, func(r reserve) bool { return r.resource == name }):
				continue
			}
			cpu, err := readRate(args, ProportionalRatePrefix+string(name)+CPURateSuffix)
			if err != nil {
				return nil, err
			}
			memory, err := readRate(args, ProportionalRatePrefix+string(name)+MemoryRateSuffix)
			if err != nil {
				return nil, err
			}
			reserves = append(reserves, reserve{resource: name, milliCPU: cpu, memory: memory * bytesPerGB / 1000,
				verdict: &api.Status{Code: api.UnschedulableAndUnresolvable, Reasons: []string{ProportionalReason(name)}, Plugin: PluginName}})
		}
	}
	if err := checkRateKeys(args, reserves); err != nil {
		return nil, err
	}
	if !on {
		return nil, nil
	}
	return reserves, nil
}

// readRate reads a rate that defaults to 1. Upstream takes a negative one for 1 without a
// word; here it is refused, which loading reports before the plugin runs with 1 there.
func readRate(args conf.Arguments, key string) (float64, error) {
	rate := 1.0
	if err := args.GetFloat64(&rate, key); err != nil {
		return 0, err
	}
	if math.IsNaN(rate) || math.IsInf(rate, 0) || rate < 0 {
		return 0, conf.InvalidArgument(key, rate, fmt.Sprintf("rate %v: want a number of 0 or more", rate))
	}
	return rate, nil
}

// checkRateKeys refuses a key under ProportionalRatePrefix that is not a rate of a listed
// resource (a misspelt suffix, a resource left out of the list), in key order.
func checkRateKeys(args conf.Arguments, reserves proportional) error {
	var stray []string
	for key := range args {
		if strings.HasPrefix(key, ProportionalRatePrefix) && !reserves.hasRateKey(key) {
			stray = append(stray, key)
		}
	}
	if len(stray) == 0 {
		return nil
	}
	slices.Sort(stray)
	return conf.InvalidArgument(stray[0], args[stray[0]], fmt.Sprintf("not the %s or %s rate of a resource %s lists",
		CPURateSuffix, MemoryRateSuffix, ProportionalResources))
}

func (p proportional) hasRateKey(key string) bool {
	for _, r := range p {
		stem := ProportionalRatePrefix + string(r.resource)
		if key == stem+CPURateSuffix || key == stem+MemoryRateSuffix {
			return true
		}
	}
	return false
}

// check refuses a node that, once task is placed, would keep less cpu or memory than the
// reserve of its idle amount of some listed resource, the first such in list order. A task
// that requests any listed resource goes anywhere (it is what the reserve is kept for), and
// a node without a listed resource keeps nothing back for it. Amounts are the node's Idle
// and the task's Resreq, as upstream's; a shortfall under api.Tolerance does not count.
// same says whether check answers tasks requesting a and b alike: it reads their cpu, memory
// and listed resources.
func (p proportional) same(a, b *api.Resource) bool {
	if len(p) == 0 {
		return true
	}
	if a.MilliCPU != b.MilliCPU || a.Memory != b.Memory {
		return false
	}
	for _, r := range p {
		if a.ScalarResources[r.resource] != b.ScalarResources[r.resource] {
			return false
		}
	}
	return true
}

func (p proportional) check(task *api.TaskInfo, node *api.NodeInfo) *api.Status {
	for _, r := range p {
		if task.Resreq.ScalarResources[r.resource] > 0 {
			return nil
		}
	}
	for _, r := range p {
		idle, found := node.Idle.ScalarResources[r.resource]
		if !found {
			continue
		}
		if idle*r.milliCPU-(node.Idle.MilliCPU-task.Resreq.MilliCPU) >= api.Tolerance ||
			idle*r.memory-(node.Idle.Memory-task.Resreq.Memory) >= api.Tolerance {
			return r.verdict
		}
	}
	return nil
}

package deviceshare

import (
	"fmt"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/conf"
)

// Arguments, upstream's names.
const (
	// VGPUEnableArg turns vGPU scheduling on; default false, as upstream.
	VGPUEnableArg = "deviceshare.VGPUEnable"
	// SchedulePolicyArg is "binpack" (fill the fullest GPUs and nodes first), "spread" (the
	// emptiest first) or empty (GPUs in index order, no node preference).
	SchedulePolicyArg = "deviceshare.SchedulePolicy"
	// ScheduleWeightArg multiplies the device score in node ordering; a whole number, 0 or
	// more. Left out while a policy is set, it is 1: see defaultScheduleWeight.
	ScheduleWeightArg = "deviceshare.ScheduleWeight"
	// NodeLockEnableArg makes each vGPU pod's bind take the node lock first (upstream's
	// protocol, vgpu.NodeLockAnnotation): needed by upstream's device plugin, which serves the
	// oldest pending pod of its node; ours tells pods apart without it. Default false.
	NodeLockEnableArg = "deviceshare.NodeLockEnable"
	// KnownGeometriesCMNameArg and KnownGeometriesCMNamespaceArg name the device ConfigMap.
	// They are accepted and checked; the ConfigMap is not read yet, so upstream's shipped
	// defaults (vgpu.DefaultResourceNames) are in force.
	KnownGeometriesCMNameArg      = "deviceshare.KnownGeometriesCMName"
	KnownGeometriesCMNamespaceArg = "deviceshare.KnownGeometriesCMNamespace"
)

// Policy values of SchedulePolicyArg.
const (
	PolicyBinpack = "binpack"
	PolicySpread  = "spread"
)

// defaultScheduleWeight is the weight when a policy is set and ScheduleWeightArg is not.
// Upstream's default of 0 drops the device score from node ordering, so a configured binpack
// or spread silently decides nothing between nodes. Here it then weighs as much as any other
// score plugin at its default weight of 1: the policy always decides between nodes the other
// plugins find equal, and counts against their preferences otherwise. Writing
// ScheduleWeightArg: 0 restores upstream's behaviour.
const defaultScheduleWeight = 1

// policy orders a node's GPUs and scores the node.
type policy int

const (
	policyNone policy = iota
	policyBinpack
	policySpread
)

// arguments are the plugin's parsed arguments.
type arguments struct {
	vgpuEnable bool
	policy     policy
	// weight multiplies the device score; 0 means the score is not used.
	weight float64
	// nodeLock: vGPU pods are bound under the node lock.
	nodeLock bool
}

// parseArguments reads and checks the plugin's arguments; an error names the argument.
func parseArguments(args conf.Arguments) (arguments, error) {
	var a arguments
	if err := args.GetBool(&a.vgpuEnable, VGPUEnableArg); err != nil {
		return arguments{}, err
	}
	var policyName string
	if err := args.GetString(&policyName, SchedulePolicyArg); err != nil {
		return arguments{}, err
	}
	switch policyName {
	case "":
		a.policy = policyNone
	case PolicyBinpack:
		a.policy = policyBinpack
	case PolicySpread:
		a.policy = policySpread
	default:
		return arguments{}, fmt.Errorf("argument %q: policy %q: want %q, %q or nothing", SchedulePolicyArg, policyName, PolicyBinpack, PolicySpread)
	}
	weight := defaultScheduleWeight
	if err := args.GetInt(&weight, ScheduleWeightArg); err != nil {
		return arguments{}, err
	}
	if weight < 0 {
		return arguments{}, fmt.Errorf("argument %q: weight %d is negative", ScheduleWeightArg, weight)
	}
	if a.policy != policyNone {
		a.weight = float64(weight)
	}
	if err := args.GetBool(&a.nodeLock, NodeLockEnableArg); err != nil {
		return arguments{}, err
	}
	for _, key := range []string{KnownGeometriesCMNameArg, KnownGeometriesCMNamespaceArg} {
		var name string
		if err := args.GetString(&name, key); err != nil {
			return arguments{}, err
		}
		if _, set := args[key]; set && name == "" {
			return arguments{}, fmt.Errorf("argument %q: empty", key)
		}
	}
	return a, nil
}

package deviceshare

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/conf"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/devicewatch"
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
	// KnownGeometriesCMNameArg and KnownGeometriesCMNamespaceArg name the device ConfigMap,
	// whose device-config.yaml gives the vGPU resource names and the MIG geometries; default
	// vgpu.DeviceConfigMapName in vgpu.DefaultConfigNamespace, as upstream. Without such a
	// ConfigMap the shipped defaults (vgpu.DefaultNvidiaConfig) are in force. The cache's
	// ledgers follow the ConfigMap the latest session named (Deriver).
	KnownGeometriesCMNameArg      = "deviceshare.KnownGeometriesCMName"
	KnownGeometriesCMNamespaceArg = "deviceshare.KnownGeometriesCMNamespace"
)

// ArgumentKeys are the arguments parseArguments reads.
var ArgumentKeys = conf.ArgumentKeys{VGPUEnableArg, SchedulePolicyArg, ScheduleWeightArg, NodeLockEnableArg,
	KnownGeometriesCMNameArg, KnownGeometriesCMNamespaceArg}

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
	// deviceConfig is the device ConfigMap.
	deviceConfig devicewatch.Key
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
		return arguments{}, conf.InvalidArgument(SchedulePolicyArg, policyName,
			fmt.Sprintf("policy %q: want %q, %q or nothing", policyName, PolicyBinpack, PolicySpread))
	}
	weight := defaultScheduleWeight
	if err := args.GetInt(&weight, ScheduleWeightArg); err != nil {
		return arguments{}, err
	}
	if weight < 0 {
		return arguments{}, conf.InvalidArgument(ScheduleWeightArg, weight, fmt.Sprintf("weight %d is negative", weight))
	}
	if a.policy != policyNone {
		a.weight = float64(weight)
	}
	if err := args.GetBool(&a.nodeLock, NodeLockEnableArg); err != nil {
		return arguments{}, err
	}
	a.deviceConfig = devicewatch.DefaultKey()
	for _, arg := range []struct {
		key   string
		value *string
		check func(string) []string
	}{
		{KnownGeometriesCMNameArg, &a.deviceConfig.Name, validation.IsDNS1123Subdomain},
		{KnownGeometriesCMNamespaceArg, &a.deviceConfig.Namespace, validation.IsDNS1123Label},
	} {
		if err := args.GetString(arg.value, arg.key); err != nil {
			return arguments{}, err
		}
		if *arg.value == "" {
			return arguments{}, conf.InvalidArgument(arg.key, "", "empty")
		}
		// A name no ConfigMap can have would silently leave the defaults in force.
		if errs := arg.check(*arg.value); len(errs) > 0 {
			return arguments{}, conf.InvalidArgument(arg.key, *arg.value, fmt.Sprintf("%q: %s", *arg.value, errs[0]))
		}
	}
	return a, nil
}

package deviceshare

import (
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/vgpu"
)

// constraint is a check a GPU can fail, in the order the checks run. When no GPU of a node
// takes a container, the node's reason is the last check some GPU reached: the constraint
// closest to being met, which is the one a user would change (a GPU of the wanted type that
// lacks memory says "memory", not "type").
type constraint int

const (
	fits constraint = iota
	// gpuCount: the node has fewer GPUs than a container asks for; checked once per node.
	gpuCount
	modeNotWanted
	// migGeometryUnknown: a GPU in mig mode whose type no knownMigGeometries entry names.
	migGeometryUnknown
	unhealthy
	typeNotWanted
	typeAvoided
	uuidAvoided
	uuidNotWanted
	podGroupShared
	// memoryOverGPU: a vGPU asks more memory than the whole GPU has; no freeing helps.
	memoryOverGPU
	// reserveOverGPU: it does not, but with the GPU's context reserve it does.
	reserveOverGPU
	noFreeSlot
	exclusiveTaken
	coresFull
	memoryShort
	coresShort
	// migUnknownHolder and noMIGInstance: a GPU in mig mode that passed the checks above.
	migUnknownHolder
	noMIGInstance
	numConstraints
)

// reasonPrefix starts every reason of a node whose GPUs do not fit, so that tools matching
// upstream's "hami-vgpuDeviceSharing error" still do; the rest names the constraint.
const reasonPrefix = "hami-vgpuDeviceSharing error: "

// notInitializedPrefix is upstream's reason for a node without usable GPUs, "node not
// initialized with device" and the device's name, which is also the node lock's key.
const notInitializedPrefix = "node not initialized with device" + vgpu.NodeLockAnnotation

// verdicts are the statuses the predicate returns, built once per session and shared by
// every node that fails the same way, so the failure path allocates nothing.
type verdicts struct {
	// notRegistered: the node has no register annotation.
	notRegistered *api.Status
	// handshakeOverdue: an upstream scheduler's handshake request went unanswered.
	handshakeOverdue *api.Status
	constraints      [numConstraints]*api.Status
}

func newVerdicts(names vgpu.ResourceNames) verdicts {
	v := verdicts{
		notRegistered: notInitialized("no " + vgpu.NodeDevicesAnnotation + " annotation (is the vGPU device plugin running?)"),
		handshakeOverdue: notInitialized(vgpu.NodeHandshakeAnnotation + " request unanswered for over " +
			vgpu.HandshakeTimeout.String() + " (the device plugin stopped reporting)"),
	}
	for c, text := range map[constraint]string{
		gpuCount:           "the node has fewer GPUs than a container's " + string(names.Count),
		modeNotWanted:      "GPU mode not the pod's " + vgpu.ModeAnnotation,
		migGeometryUnknown: "GPU in mig mode, and no MIG geometry is known for its type (knownMigGeometries in the device ConfigMap)",
		unhealthy:          "GPU unhealthy",
		typeNotWanted:      "GPU type not in the pod's " + vgpu.UseGPUTypeAnnotation,
		typeAvoided:        "GPU type in the pod's " + vgpu.NoUseGPUTypeAnnotation,
		uuidAvoided:        "GPU in the pod's " + vgpu.NoUseGPUUUIDAnnotation,
		uuidNotWanted:      "GPU not in the pod's " + vgpu.UseGPUUUIDAnnotation,
		podGroupShared:     "GPU already used by the pod's group (" + vgpu.PodGroupPolicyAnnotation + ": " + vgpu.PodGroupPolicySpread + ")",
		memoryOverGPU:      "a container's " + string(names.Memory) + " is more than the GPU's whole memory",
		reserveOverGPU: "a container's " + string(names.Memory) + " plus the GPU's CUDA context reserve (contextReserves in the device ConfigMap) " +
			"is more than the GPU's whole memory; leave " + string(names.Memory) + " out for a whole GPU",
		noFreeSlot:     "no free vGPU slot on the GPU (deviceSplitCount)",
		exclusiveTaken: string(names.Cores) + " 100 needs a GPU no other vGPU uses",
		coresFull:      "GPU cores fully booked, and the container sets no " + string(names.Cores),
		memoryShort:    "not enough free GPU memory",
		coresShort:     "not enough free " + string(names.Cores) + " on the GPU",
		migUnknownHolder: "GPU in mig mode holds vGPUs on MIG instances its geometry does not list, " +
			"so it takes no more until they end",
		noMIGInstance: "no free MIG instance with enough memory in the GPU's geometry group in use (or, with none in use, in any group)",
	} {
		code := api.Unschedulable
		if c < noFreeSlot {
			// What the pod asks of the GPU itself; freeing capacity does not change it.
			code = api.UnschedulableAndUnresolvable
		}
		v.constraints[c] = &api.Status{Code: code, Reasons: []string{reasonPrefix + text}, Plugin: PluginName}
	}
	return v
}

// notInitialized is the status of a node whose GPUs cannot be used, with the cause.
func notInitialized(cause string) *api.Status {
	return &api.Status{Code: api.Unschedulable, Reasons: []string{notInitializedPrefix + ": " + cause}, Plugin: PluginName}
}

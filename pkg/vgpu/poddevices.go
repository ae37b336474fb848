package vgpu

import (
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// ContainerDevice is one vGPU assigned to a container.
type ContainerDevice struct {
	// UUID is the GPU's UUID, or for a GPU in ModeMIG the MIG instance id
	// "uuid[group-position]" (FormatMIGID).
	UUID string
	// Type is the requested device type, DeviceTypeNVIDIA, not the GPU model.
	Type string
	// UsedMemory is the memory booked on the GPU, in units of gpuMemoryFactor MiB. The device
	// plugin sets the container's HAMi-core limit from it.
	UsedMemory int32
	// UsedCores is the share of the GPU's compute booked, in percent; 0 means no limit.
	UsedCores int32
}

// ContainerDevices are the vGPUs of one container, in the order the limits are numbered
// (CUDA_DEVICE_MEMORY_LIMIT_<i>).
type ContainerDevices []ContainerDevice

// PodDevices are a pod's assignment: entry i belongs to the i-th container of the pod that
// requests vGPU (see PodRequests), not to pod.Spec.Containers[i]. An entry is empty once the
// device plugin has served that container.
type PodDevices []ContainerDevices

// Fields of a pod device record, in wire order.
const (
	podFieldUUID = iota
	podFieldType
	podFieldMemory
	podFieldCores
	podFields
)

// Encode renders the assignment as AssignedDevicesAnnotation and DevicesToAllocateAnnotation
// carry it: per device "uuid,type,memory,cores" terminated by ":", containers joined by ";".
// An empty container entry renders as nothing, so ";GPU-b,NVIDIA,1000,0:" still says which
// entry the devices belong to. It refuses a device whose fields would corrupt the value.
func (pd PodDevices) Encode() (string, error) {
	var b strings.Builder
	for c, devices := range pd {
		if c > 0 {
			b.WriteString(containerSeparator)
		}
		for i, d := range devices {
			if err := d.validate(); err != nil {
				return "", fmt.Errorf("container %d device %d: %w", c, i, err)
			}
			if err := checkUniqueDevice(devices[:i], d.UUID); err != nil {
				return "", fmt.Errorf("container %d device %d: %w", c, i, err)
			}
			b.WriteString(d.UUID)
			b.WriteString(fieldSeparator)
			b.WriteString(d.Type)
			b.WriteString(fieldSeparator)
			b.WriteString(strconv.FormatInt(int64(d.UsedMemory), 10))
			b.WriteString(fieldSeparator)
			b.WriteString(strconv.FormatInt(int64(d.UsedCores), 10))
			b.WriteString(recordTerminator)
		}
	}
	return b.String(), nil
}

func (d ContainerDevice) validate() error {
	if _, _, _, err := ParseMIGID(d.UUID); err != nil {
		return err
	}
	if err := checkText("type", d.Type, fieldSeparator+recordTerminator+containerSeparator); err != nil {
		return err
	}
	if d.UsedMemory < 0 {
		return fmt.Errorf("memory %d: must not be negative", d.UsedMemory)
	}
	if d.UsedCores < 0 || d.UsedCores > wholeGPU {
		return fmt.Errorf("cores %d: want 0 to %d", d.UsedCores, wholeGPU)
	}
	return nil
}

// DecodePodDevices reads an AssignedDevicesAnnotation or DevicesToAllocateAnnotation value.
// The empty string decodes to no entries: it is what a fully served one-container pod is left
// with, and what a pod without vGPU containers would carry. The error names the container
// entry, the device, the field and its text.
func DecodePodDevices(value string) (PodDevices, error) {
	if value == "" {
		return nil, nil
	}
	entries := strings.Split(value, containerSeparator)
	pd := make(PodDevices, 0, len(entries))
	for c, entry := range entries {
		devices, err := decodeContainerDevices(entry)
		if err != nil {
			return nil, fmt.Errorf("container %d: %w", c, err)
		}
		pd = append(pd, devices)
	}
	return pd, nil
}

func decodeContainerDevices(entry string) (ContainerDevices, error) {
	if entry == "" {
		return nil, nil
	}
	records := strings.Split(entry, recordTerminator)
	last := len(records) - 1
	if records[last] != "" {
		return nil, fmt.Errorf("device %d %s: not terminated by %q", last, quote(records[last]), recordTerminator)
	}
	devices := make(ContainerDevices, 0, last)
	for i, record := range records[:last] {
		d, err := decodeContainerDevice(record)
		if err == nil {
			err = checkUniqueDevice(devices, d.UUID)
		}
		if err != nil {
			return nil, fmt.Errorf("device %d: %w", i, err)
		}
		devices = append(devices, d)
	}
	return devices, nil
}

func decodeContainerDevice(record string) (ContainerDevice, error) {
	fields := strings.Split(record, fieldSeparator)
	if len(fields) != podFields {
		return ContainerDevice{}, fmt.Errorf("record %s: has %d fields, want %d (uuid,type,memory,cores)",
			quote(record), len(fields), podFields)
	}
	d := ContainerDevice{UUID: fields[podFieldUUID], Type: fields[podFieldType]}
	if _, _, _, err := ParseMIGID(d.UUID); err != nil {
		return ContainerDevice{}, err
	}
	if d.Type == "" {
		return ContainerDevice{}, fmt.Errorf("type is empty")
	}
	var err error
	if d.UsedMemory, err = parseNonNegative32("memory", fields[podFieldMemory]); err != nil {
		return ContainerDevice{}, err
	}
	if d.UsedCores, err = parseNonNegative32("cores", fields[podFieldCores]); err != nil {
		return ContainerDevice{}, err
	}
	if d.UsedCores > wholeGPU {
		return ContainerDevice{}, fmt.Errorf("cores %s: want 0 to %d", quote(fields[podFieldCores]), wholeGPU)
	}
	return d, nil
}

// checkUniqueDevice refuses a device id a container already holds: the device plugin would
// hand the container the same GPU twice.
func checkUniqueDevice(earlier ContainerDevices, id string) error {
	for j, d := range earlier {
		if d.UUID == id {
			return fmt.Errorf("uuid %s: already assigned as device %d", quote(id), j)
		}
	}
	return nil
}

// NextPending returns the index of the first entry that still lists devices: the container
// the device plugin serves next. ok is false when every entry has been served.
func (pd PodDevices) NextPending() (index int, ok bool) {
	for i, devices := range pd {
		if len(devices) > 0 {
			return i, true
		}
	}
	return 0, false
}

// EraseContainer returns a copy of the assignment with entry i emptied, keeping the positions
// of the other entries; the receiver is not changed.
func (pd PodDevices) EraseContainer(i int) (PodDevices, error) {
	if i < 0 || i >= len(pd) {
		return nil, fmt.Errorf("erase container entry %d: the assignment has %d entries", i, len(pd))
	}
	erased := make(PodDevices, len(pd))
	copy(erased, pd)
	erased[i] = nil
	return erased, nil
}

// GPUUsage is what one pod books on one physical GPU.
type GPUUsage struct {
	// Devices counts the vGPUs (or MIG instances) on the GPU; each takes one of its Count slots.
	Devices int
	// Memory is the sum of UsedMemory, in units of gpuMemoryFactor MiB. For a MIG instance the
	// GPU really loses the whole instance's memory, which only the geometry tells.
	Memory int64
	// Cores is the sum of UsedCores, in percent.
	Cores int64
}

// HoldsDevices says whether pod's assignment books its GPUs: the pod is bound to a node and
// has not finished. A pod that Succeeded or Failed never starts a container again, so its
// slices are free for others while the pod object remains.
func HoldsDevices(pod *corev1.Pod) bool {
	return pod.Spec.NodeName != "" && pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed
}

// Add is the usage of both u and other on the same GPU.
func (u GPUUsage) Add(other GPUUsage) GPUUsage {
	return GPUUsage{Devices: u.Devices + other.Devices, Memory: u.Memory + other.Memory, Cores: u.Cores + other.Cores}
}

// UsageByGPU sums the assignment per physical GPU UUID; MIG instances count against the GPU
// they are carved from.
func (pd PodDevices) UsageByGPU() map[string]GPUUsage {
	usage := make(map[string]GPUUsage)
	for _, devices := range pd {
		for _, d := range devices {
			uuid := d.PhysicalUUID()
			u := usage[uuid]
			u.Devices++
			u.Memory += int64(d.UsedMemory)
			u.Cores += int64(d.UsedCores)
			usage[uuid] = u
		}
	}
	return usage
}

// PhysicalUUID is the UUID of the GPU the device lives on: UUID itself, or for a MIG instance
// id the part before "[".
func (d ContainerDevice) PhysicalUUID() string {
	uuid, _, _ := strings.Cut(d.UUID, "[")
	return uuid
}

package vgpu

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// NodeDevice is one physical GPU as the device plugin publishes it in NodeDevicesAnnotation.
// A GPU's index is its position in the list.
type NodeDevice struct {
	// UUID is the NVML UUID, e.g. "GPU-3a6e...".
	UUID string
	// Count is how many vGPUs may share the GPU (deviceSplitCount).
	Count int32
	// Memory is the GPU's memory in units of gpuMemoryFactor MiB, scaled by deviceMemoryScaling
	// (GPUMemory).
	Memory int32
	// Type is DeviceTypeForModel of the NVML name, e.g. "NVIDIA-NVIDIA H200".
	Type string
	// Healthy is false once the device plugin saw a critical XID on the GPU.
	Healthy bool
	// Mode is ModeHAMiCore, ModeMIG or ModeMPS.
	Mode string
}

// GPUMemory is the memory a GPU of totalMiB MiB publishes (NodeDevice.Memory and its
// vgpu-memory devices), in units of factor MiB: totalMiB times scaling (deviceMemoryScaling)
// rounded down to a MiB, then divided by factor and rounded down; 0 for a scaling or factor
// that is not above 0, at most math.MaxInt32. The scheduler books a whole GPU and a
// percentage of this figure, so the device plugin must check an assignment against the same
// one, not against the GPU's physical memory.
func GPUMemory(totalMiB uint64, scaling float64, factor int32) int32 {
	if factor < 1 {
		return 0
	}
	units := math.Floor(float64(totalMiB)*scaling) / float64(factor)
	switch {
	case !(units > 0):
		return 0
	case units >= math.MaxInt32:
		return math.MaxInt32
	}
	return int32(units)
}

// Fields of a node device record, in wire order.
const (
	nodeFieldUUID = iota
	nodeFieldCount
	nodeFieldMemory
	nodeFieldType
	nodeFieldHealth
	nodeFieldMode
	nodeFields
)

// legacyNodeFields is the record length before the mode field existed: the predecessor
// plugin (volcano-sh/devices) and the first releases of volcano-vgpu-device-plugin wrote
// "uuid,count,memory,type,health:". v1.10 and later, v1.11 and v1.12 included, always write
// six fields, with hami-core when the node has no operating mode configured. Volcano v1.12
// and later reject a whole node that has a five-field record; we accept it and read it as
// hami-core, the only mode such a plugin supports, so that an old plugin left running during
// an upgrade does not make the node's GPUs vanish. Records of any other length are rejected:
// they belong to some other format (HAMi's own node formats put core and NUMA fields in
// between), whose fields would be read shifted.
const legacyNodeFields = nodeFieldMode

// EncodeNodeDevices renders devices as the NodeDevicesAnnotation value: one
// "uuid,count,memory,type,health,mode" record per GPU, each terminated by ":". It refuses a
// device whose fields would corrupt the list, naming the GPU index and the field.
func EncodeNodeDevices(devices []NodeDevice) (string, error) {
	var b strings.Builder
	seen := make(map[string]int, len(devices))
	for i, d := range devices {
		if err := d.validate(); err != nil {
			return "", fmt.Errorf("GPU %d: %w", i, err)
		}
		if err := checkUniqueGPU(seen, d.UUID, i); err != nil {
			return "", err
		}
		b.WriteString(d.UUID)
		b.WriteString(fieldSeparator)
		b.WriteString(strconv.FormatInt(int64(d.Count), 10))
		b.WriteString(fieldSeparator)
		b.WriteString(strconv.FormatInt(int64(d.Memory), 10))
		b.WriteString(fieldSeparator)
		b.WriteString(d.Type)
		b.WriteString(fieldSeparator)
		b.WriteString(strconv.FormatBool(d.Healthy))
		b.WriteString(fieldSeparator)
		b.WriteString(d.Mode)
		b.WriteString(recordTerminator)
	}
	return b.String(), nil
}

func (d NodeDevice) validate() error {
	if err := checkUUID("uuid", d.UUID); err != nil {
		return err
	}
	if d.Count < 0 {
		return fmt.Errorf("count %d: must not be negative", d.Count)
	}
	if d.Memory < 0 {
		return fmt.Errorf("memory %d: must not be negative", d.Memory)
	}
	if err := checkText("type", d.Type, fieldSeparator+recordTerminator); err != nil {
		return err
	}
	return checkMode(d.Mode)
}

func checkMode(mode string) error {
	switch mode {
	case ModeHAMiCore, ModeMIG, ModeMPS:
		return nil
	}
	return fmt.Errorf("mode %s: want %s, %s or %s", quote(mode), ModeHAMiCore, ModeMIG, ModeMPS)
}

// DecodeNodeDevices reads a NodeDevicesAnnotation value. The empty string is a node without
// GPUs. Every record must be terminated by ":" and hold five (legacy, see legacyNodeFields)
// or six fields, and no UUID may repeat; the error names the GPU index, the field and its
// text.
func DecodeNodeDevices(value string) ([]NodeDevice, error) {
	if value == "" {
		return nil, nil
	}
	records := strings.Split(value, recordTerminator)
	last := len(records) - 1
	if records[last] != "" {
		return nil, fmt.Errorf("GPU %d %s: not terminated by %q", last, quote(records[last]), recordTerminator)
	}
	devices := make([]NodeDevice, 0, last)
	seen := make(map[string]int, last)
	for i, record := range records[:last] {
		d, err := decodeNodeDevice(record)
		if err != nil {
			return nil, fmt.Errorf("GPU %d: %w", i, err)
		}
		if err := checkUniqueGPU(seen, d.UUID, i); err != nil {
			return nil, err
		}
		devices = append(devices, d)
	}
	return devices, nil
}

// checkUniqueGPU refuses a UUID listed twice: scheduler ledgers key GPUs by UUID, so a
// repeated one would be booked twice.
func checkUniqueGPU(seen map[string]int, uuid string, index int) error {
	if first, dup := seen[uuid]; dup {
		return fmt.Errorf("GPU %d: uuid %s: already listed as GPU %d", index, quote(uuid), first)
	}
	seen[uuid] = index
	return nil
}

func decodeNodeDevice(record string) (NodeDevice, error) {
	fields := strings.Split(record, fieldSeparator)
	if len(fields) != nodeFields && len(fields) != legacyNodeFields {
		return NodeDevice{}, fmt.Errorf("record %s: has %d fields, want %d (uuid,count,memory,type,health,mode)",
			quote(record), len(fields), nodeFields)
	}
	d := NodeDevice{UUID: fields[nodeFieldUUID], Type: fields[nodeFieldType], Mode: ModeHAMiCore}
	if err := checkUUID("uuid", d.UUID); err != nil {
		return NodeDevice{}, err
	}
	var err error
	if d.Count, err = parseNonNegative32("count", fields[nodeFieldCount]); err != nil {
		return NodeDevice{}, err
	}
	if d.Memory, err = parseNonNegative32("memory", fields[nodeFieldMemory]); err != nil {
		return NodeDevice{}, err
	}
	if d.Type == "" {
		return NodeDevice{}, fmt.Errorf("type is empty")
	}
	if d.Healthy, err = strconv.ParseBool(fields[nodeFieldHealth]); err != nil {
		return NodeDevice{}, fmt.Errorf("health %s: want true or false", quote(fields[nodeFieldHealth]))
	}
	if len(fields) == nodeFields {
		d.Mode = fields[nodeFieldMode]
		if err := checkMode(d.Mode); err != nil {
			return NodeDevice{}, err
		}
	}
	return d, nil
}

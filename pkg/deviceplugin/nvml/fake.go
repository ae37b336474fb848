package nvml

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"time"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
)

// fakeSupportedEvents is what an H200 reports from
// nvmlDeviceGetSupportedEventTypes (XID, ECC, clock, power, ... events).
const fakeSupportedEvents = 0xff9f

// fakeEventQueue bounds events injected but not yet read by the watcher.
const fakeEventQueue = 256

// Fake is a Library over a go-nvml mock: discovery and health watching run
// the same code as on a GPU node, while the GPUs come from a spec string
// and health events from the Inject methods.
type Fake struct {
	*Library
	node    string
	devices []*fakeDevice
	// events feeds every event set the watcher creates; one watcher runs
	// per Library, so one queue is enough.
	events chan gonvml.EventData
	// waitFailures makes the next event waits fail with these codes.
	waitFailures chan gonvml.Return
}

var _ Backend = (*Fake)(nil)

// fakeDevice is one mock GPU. Its fields are read by the mock functions at
// call time, so a test may change them (before calling Devices) to shape
// corner cases such as odd memory sizes or minor numbers.
type fakeDevice struct {
	mock.Device
	uuid   string
	name   string
	index  int
	minor  int
	memory gonvml.Memory
	busID  string
	// utilization is what GetUtilizationRates reports; SetUsage changes it.
	utilization gonvml.Utilization
}

// NewFake builds a fake NVML backend for node from spec (see ParseFakeSpec).
// GPU i gets the UUID FakeUUID(node, i), minor number i and bus id
// 00000000:<i+1>:00.0, so the same node and spec give the same GPUs after
// a restart.
func NewFake(spec, node string, opts Options) (*Fake, error) {
	if node == "" {
		return nil, fmt.Errorf("fake NVML needs the node name: GPU UUIDs are derived from it so that they are unique and stable")
	}
	gpus, err := ParseFakeSpec(spec)
	if err != nil {
		return nil, err
	}
	f := &Fake{
		node:         node,
		events:       make(chan gonvml.EventData, fakeEventQueue),
		waitFailures: make(chan gonvml.Return, fakeEventQueue),
	}
	for i, gpu := range gpus {
		f.devices = append(f.devices, newFakeDevice(node, i, gpu))
	}
	f.Library = newLibrary(f.mockInterface(), fmt.Sprintf("fake NVML %q", spec), "", opts)
	return f, nil
}

// FakeUUID is the UUID of GPU index on a fake node: a hash of the two, in
// NVML's "GPU-8-4-4-4-12" form.
func FakeUUID(node string, index int) string {
	sum := sha256.Sum256([]byte("volcano-vgpu fake GPU " + node + "/" + strconv.Itoa(index)))
	h := hex.EncodeToString(sum[:16])
	return "GPU-" + h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

func newFakeDevice(node string, i int, gpu FakeGPU) *fakeDevice {
	total := gpu.MemoryMiB * bytesPerMiB
	d := &fakeDevice{
		uuid:   FakeUUID(node, i),
		name:   gpu.Name,
		index:  i,
		minor:  i,
		memory: gonvml.Memory{Total: total, Free: total},
		busID:  fmt.Sprintf("00000000:%02X:00.0", i+1),
	}
	d.GetUUIDFunc = func() (string, gonvml.Return) { return d.uuid, gonvml.SUCCESS }
	d.GetNameFunc = func() (string, gonvml.Return) { return d.name, gonvml.SUCCESS }
	d.GetIndexFunc = func() (int, gonvml.Return) { return d.index, gonvml.SUCCESS }
	d.GetMinorNumberFunc = func() (int, gonvml.Return) { return d.minor, gonvml.SUCCESS }
	d.GetMemoryInfoFunc = func() (gonvml.Memory, gonvml.Return) { return d.memory, gonvml.SUCCESS }
	d.GetUtilizationRatesFunc = func() (gonvml.Utilization, gonvml.Return) { return d.utilization, gonvml.SUCCESS }
	d.GetPciInfoFunc = func() (gonvml.PciInfo, gonvml.Return) {
		var info gonvml.PciInfo
		for j := 0; j < len(d.busID) && j < len(info.BusId)-1; j++ {
			info.BusId[j] = int8(d.busID[j])
		}
		return info, gonvml.SUCCESS
	}
	d.GetMigModeFunc = func() (int, int, gonvml.Return) {
		return gonvml.DEVICE_MIG_DISABLE, gonvml.DEVICE_MIG_DISABLE, gonvml.SUCCESS
	}
	d.GetSupportedEventTypesFunc = func() (uint64, gonvml.Return) { return fakeSupportedEvents, gonvml.SUCCESS }
	d.RegisterEventsFunc = func(uint64, gonvml.EventSet) gonvml.Return { return gonvml.SUCCESS }
	return d
}

// mockInterface wires the library-level mock functions to the fake GPUs.
func (f *Fake) mockInterface() *mock.Interface {
	m := &mock.Interface{}
	m.InitFunc = func() gonvml.Return { return gonvml.SUCCESS }
	m.ShutdownFunc = func() gonvml.Return { return gonvml.SUCCESS }
	m.ExtensionsFunc = func() gonvml.ExtendedInterface {
		return &mock.ExtendedInterface{LookupSymbolFunc: func(string) error { return nil }}
	}
	m.SystemGetDriverVersionFunc = func() (string, gonvml.Return) { return "fake", gonvml.SUCCESS }
	m.SystemGetNVMLVersionFunc = func() (string, gonvml.Return) { return "fake", gonvml.SUCCESS }
	m.SystemGetCudaDriverVersionFunc = func() (int, gonvml.Return) { return 13000, gonvml.SUCCESS }
	m.DeviceGetCountFunc = func() (int, gonvml.Return) { return len(f.devices), gonvml.SUCCESS }
	m.DeviceGetHandleByIndexFunc = func(i int) (gonvml.Device, gonvml.Return) {
		if i < 0 || i >= len(f.devices) {
			return nil, gonvml.ERROR_INVALID_ARGUMENT
		}
		return f.devices[i], gonvml.SUCCESS
	}
	m.DeviceGetHandleByUUIDFunc = func(uuid string) (gonvml.Device, gonvml.Return) {
		if d := f.device(uuid); d != nil {
			return d, gonvml.SUCCESS
		}
		return nil, gonvml.ERROR_NOT_FOUND
	}
	m.EventSetCreateFunc = func() (gonvml.EventSet, gonvml.Return) {
		return &mock.EventSet{
			WaitFunc: f.wait,
			FreeFunc: func() gonvml.Return { return gonvml.SUCCESS },
		}, gonvml.SUCCESS
	}
	return m
}

// wait behaves like nvmlEventSetWait: an event, a failure, or a timeout.
func (f *Fake) wait(timeoutMs uint32) (gonvml.EventData, gonvml.Return) {
	timer := time.NewTimer(time.Duration(timeoutMs) * time.Millisecond)
	defer timer.Stop()
	select {
	case ret := <-f.waitFailures:
		return gonvml.EventData{}, ret
	case event := <-f.events:
		return event, gonvml.SUCCESS
	case <-timer.C:
		return gonvml.EventData{}, gonvml.ERROR_TIMEOUT
	}
}

func (f *Fake) device(uuid string) *fakeDevice {
	for _, d := range f.devices {
		if d.uuid == uuid {
			return d
		}
	}
	return nil
}

// InjectXID queues an XID critical-error event for the GPU, as the driver
// would raise it; the health watcher picks it up on its next wait and
// applies the XID policy to it.
func (f *Fake) InjectXID(uuid string, xid uint64) error {
	d := f.device(uuid)
	if d == nil {
		return fmt.Errorf("%s: inject XID %d: no GPU with UUID %q", f.source, xid, uuid)
	}
	return f.inject(gonvml.EventData{Device: d, EventType: gonvml.EventTypeXidCriticalError, EventData: xid})
}

// FailNextWait makes the watcher's next event wait fail with ret, as when
// NVML loses the driver; the watcher then marks every GPU unhealthy.
func (f *Fake) FailNextWait(ret gonvml.Return) error {
	select {
	case f.waitFailures <- ret:
		return nil
	default:
		return fmt.Errorf("%s: fail next wait: %d failures already queued", f.source, fakeEventQueue)
	}
}

func (f *Fake) inject(event gonvml.EventData) error {
	select {
	case f.events <- event:
		return nil
	default:
		return fmt.Errorf("%s: inject event: %d events already queued and not read", f.source, fakeEventQueue)
	}
}

// SetUsage sets what the GPU reports as used memory and utilisation, for
// tests of the host metrics. Call it before the usage is read: the mock
// reads the values without locking.
func (f *Fake) SetUsage(uuid string, usedBytes uint64, utilizationPercent uint32) error {
	d := f.device(uuid)
	if d == nil {
		return fmt.Errorf("%s: set usage: no GPU with UUID %q", f.source, uuid)
	}
	if usedBytes > d.memory.Total {
		return fmt.Errorf("%s: set usage of %s: %d bytes used of %d", f.source, uuid, usedBytes, d.memory.Total)
	}
	d.memory.Used, d.memory.Free = usedBytes, d.memory.Total-usedBytes
	d.utilization.Gpu = utilizationPercent
	return nil
}

package settings

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/deviceplugin/kubelet"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/deviceplugin/nvml"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/vgpu"
)

// CheckListSizes refuses a split count or a core scaling whose kubelet
// device list for gpus the kubelet would drop (the node would advertise 0
// of the resource, or a plugin building the list would run out of memory).
// Each error says where the value was set and the largest value that fits.
// The memory list is SettleMemoryFactor's. The memory percentage list, a
// fixed kubelet.PercentPerGPU devices per GPU, is refused only for more GPUs
// than any node has.
func (c Config) CheckListSizes(gpus []nvml.GPU) error {
	var errs []error
	if err := kubelet.CheckCountList(c.Device.DeviceSplitCount, gpus); err != nil {
		errs = append(errs, c.tooLarge("split count "+strconv.Itoa(int(c.Device.DeviceSplitCount)),
			c.where(splitCountSetting, c.Origins.SplitCount), err, func(fit int64) string { return strconv.FormatInt(fit, 10) }))
	}
	if err := kubelet.CheckCoresList(c.Device.DeviceCoreScaling, gpus); err != nil {
		errs = append(errs, c.tooLarge("core scaling "+strconv.FormatFloat(c.Device.DeviceCoreScaling, 'g', -1, 64),
			c.where(coreScalingSetting, c.Origins.CoreScaling), err,
			func(fit int64) string { return strconv.FormatFloat(float64(fit)/100, 'f', -1, 64) }))
	}
	if name := c.Device.ResourceMemoryPercentageName; name != "" {
		if err := kubelet.CheckPercentageList(gpus); err != nil {
			errs = append(errs, fmt.Errorf("node %s: %s, %d devices per GPU: %w; leave GPUs out with filterdevices in %s",
				c.Node, name, kubelet.PercentPerGPU, err, vgpu.NodeConfigKey))
		}
	}
	return errors.Join(errs...)
}

// tooLarge words a *kubelet.ListTooLargeError for an operator: the value,
// where it is set, the size, and the largest value that fits (format shows
// ListTooLargeError.Fit as that value).
func (c Config) tooLarge(value, where string, err error, format func(fit int64) string) error {
	var tooLarge *kubelet.ListTooLargeError
	if !errors.As(err, &tooLarge) {
		return fmt.Errorf("node %s: %s (%s): %w", c.Node, value, where, err)
	}
	if tooLarge.Fit < 1 {
		return fmt.Errorf("node %s: %s (%s): %w; even the smallest value does not fit with this many GPUs: "+
			"leave some out with filterdevices in %s", c.Node, value, where, err, vgpu.NodeConfigKey)
	}
	return fmt.Errorf("node %s: %s (%s): %w; set it to at most %s", c.Node, value, where, err, format(tooLarge.Fit))
}

// Precheck checks what can be checked before the API server is reached: the
// flags, the node config file at nodeConfigPath, and the kubelet device
// lists for the discovered GPUs of every value that the flags or the node's
// entry fix (the device ConfigMap is below both, so it cannot change them).
// Load and the list checks after it still decide the rest.
func Precheck(node string, flags *Flags, nodeConfigPath string, discovered []nvml.GPU) error {
	if nodeConfigPath == "" {
		nodeConfigPath = DefaultNodeConfigPath
	}
	nodeConfig, err := loadNodeConfig(nodeConfigPath)
	if err != nil {
		return err
	}
	c, err := Resolve(node, vgpu.DefaultNvidiaConfig(), flags, nodeConfig)
	if err != nil {
		return err
	}
	gpus := c.RegisteredGPUs(discovered)
	var errs []error
	if c.Origins.SplitCount != FromDeviceConfig || c.Origins.CoreScaling != FromDeviceConfig {
		err := c.CheckListSizes(gpus)
		var tooLarge *kubelet.ListTooLargeError
		for _, e := range unjoin(err) {
			if errors.As(e, &tooLarge) && (tooLarge.List == kubelet.ListCount && c.Origins.SplitCount != FromDeviceConfig ||
				tooLarge.List == kubelet.ListCores && c.Origins.CoreScaling != FromDeviceConfig) {
				errs = append(errs, e)
			}
		}
	}
	// A factor of 0 is chosen to fit; a configured one is final only when the
	// memory scaling is too (the ConfigMap may still lower it).
	if c.Origins.MemoryFactor == FromFlag && c.Device.GPUMemoryFactor > 0 && c.Origins.MemoryScaling == FromNodeConfig {
		if err := c.SettleMemoryFactor(gpus); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// unjoin returns the errors errors.Join joined, or err alone.
func unjoin(err error) []error {
	if joined, ok := err.(interface{ Unwrap() []error }); ok {
		return joined.Unwrap()
	}
	if err == nil {
		return nil
	}
	return []error{err}
}

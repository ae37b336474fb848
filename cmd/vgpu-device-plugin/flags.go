package main

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/spf13/pflag"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/vgpu"
)

// startupTimeout bounds reading the configuration from the API server at start (the device
// ConfigMap, looked for in up to two namespaces); each request has its own deadline too.
const startupTimeout = time.Minute

// legacyHandshakeFlag turns on the node liveness handshake that older Volcano schedulers
// require (register.Options.LegacyHandshake, docs/compatibility.md).
const legacyHandshakeFlag = "legacy-handshake"

// addCompatibilityFlags registers the flags that adapt the device plugin to older upstream
// schedulers.
func addCompatibilityFlags(fs *pflag.FlagSet, o *options) {
	fs.BoolVar(&o.legacyHandshake, legacyHandshakeFlag, false,
		"Keep the node annotation volcano.sh/node-vgpu-handshake answered (\"Reported <time>\", at most one PATCH per 30 s "+
			"while a scheduler keeps asking), which Volcano releases up to v1.14.2, and v1.15.0, require before they use the node's GPUs; "+
			"later Volcano releases and this project's vc-scheduler do not. Off, the annotation is removed from the node if present")
}

// addEnvFlags registers the flags that say what a vGPU pod's containers may set in their
// environment (vgpu.EnvPolicy); the chart passes devicePlugin.allowDisableControl and
// admissionPolicy.envFrom, the values its admission policy applies too.
func addEnvFlags(fs *pflag.FlagSet, o *options) {
	fs.BoolVar(&o.allowDisableControl, "allow-disable-control", false,
		"Let a container that sets CUDA_DISABLE_CONTROL run without HAMi-core's limits (upstream's behaviour); off, it is refused")
	o.envFrom = vgpu.EnvFromPrefixed
	fs.Var(&o.envFrom, "env-from",
		"How a vGPU pod's containers may use envFrom, whose keys could set the variables of their GPUs and HAMi-core limits: "+
			"refuse (not at all), prefixed (each with a prefix no such variable starts with) or allow (unchecked)")
}

// checkFlags checks the flags that need no GPU and no API server, every problem at once;
// the vGPU flags are settings.Precheck's, the fake GPUs' spec is nvml's.
func checkFlags(o *options) error {
	var errs []error
	if o.nodeName == "" {
		errs = append(errs, errors.New("--node-name (or $NODE_NAME) is required"))
	}
	switch o.nvmlMode {
	case "real", "fake":
	default:
		errs = append(errs, fmt.Errorf("--nvml %q: want real or fake", o.nvmlMode))
	}
	if o.nvmlMode == "fake" && o.fakeGPUs == "" {
		errs = append(errs, errors.New("--nvml=fake needs --fake-gpus"))
	}
	if o.nvmlMode == "real" && o.fakeGPUs != "" {
		errs = append(errs, fmt.Errorf("--fake-gpus %q is only read with --nvml=fake", o.fakeGPUs))
	}
	if o.kubeletDir == "" {
		errs = append(errs, errors.New("--kubelet-dir is empty"))
	}
	if o.hookPath == "" {
		errs = append(errs, errors.New("--hook-path (or $HOOK_PATH) is empty"))
	}
	if err := checkListenAddress(o.metricsAddress); err != nil {
		errs = append(errs, fmt.Errorf("--metrics-address %q: %w", o.metricsAddress, err))
	}
	return errors.Join(errs...)
}

// checkListenAddress accepts what net.Listen("tcp", address) would: host:port with a port
// of 0 to 65535 or a service name.
func checkListenAddress(address string) error {
	_, port, err := net.SplitHostPort(address)
	if err != nil {
		return err
	}
	if n, err := strconv.Atoi(port); err == nil && (n < 0 || n > 65535) {
		return fmt.Errorf("port %d: want 0 to 65535", n)
	}
	if port == "" {
		return errors.New("no port")
	}
	return nil
}

// Command vgpu-device-plugin shares a node's NVIDIA GPUs among pods: it advertises
// volcano.sh/vgpu-number, vgpu-memory and vgpu-cores to the kubelet, publishes the node's GPUs
// in the volcano.sh/node-vgpu-register annotation (the protocol vc-scheduler and upstream
// Volcano read), hands each container the scheduler's assignment as HAMi-core settings on
// Allocate, and serves GPU and per-container metrics on :9394.
//
// With --inspect it prints the GPUs it finds and the annotation it would write, and exits.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/pflag"
	"golang.org/x/sync/errgroup"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/deviceplugin/apiclient"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/deviceplugin/assignment"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/deviceplugin/hook"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/deviceplugin/kubelet"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/deviceplugin/monitor"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/deviceplugin/nvml"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/deviceplugin/podresources"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/deviceplugin/register"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/deviceplugin/settings"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/events"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/vgpu"
)

type options struct {
	nodeName, kubeconfig, kubeletDir, nvmlMode, fakeGPUs   string
	metricsAddress, hookPath, hookImageDir, nodeConfigPath string
	podResourcesSocket                                     string
	inspect                                                bool
	flags                                                  *settings.Flags
	schedulerNames                                         []string
	allowDisableControl                                    bool
	envFrom                                                vgpu.EnvFromMode
	legacyHandshake                                        bool
}

func main() {
	o := &options{}
	fs := pflag.NewFlagSet("vgpu-device-plugin", pflag.ExitOnError)
	o.flags = settings.AddFlags(fs)
	fs.StringVar(&o.nodeName, "node-name", os.Getenv("NODE_NAME"), "This node's name (default $NODE_NAME)")
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig file; in-cluster configuration when empty")
	fs.StringVar(&o.kubeletDir, "kubelet-dir", pluginapi.DevicePluginPath, "The kubelet's device-plugin directory")
	fs.StringVar(&o.podResourcesSocket, "pod-resources-socket", podresources.DefaultSocket,
		"The kubelet's PodResources socket, to tell which pod an Allocate is for; empty: the earliest bound pending pod")
	fs.StringVar(&o.nvmlMode, "nvml", "real", "GPU discovery: real (libnvidia-ml) or fake (--fake-gpus)")
	fs.StringVar(&o.fakeGPUs, "fake-gpus", "", `GPUs of the fake backend, e.g. "1xNVIDIA GeForce RTX 3070 Ti:8192,2xNVIDIA H200:143771"`)
	fs.StringVar(&o.metricsAddress, "metrics-address", ":9394", "Address of the metrics endpoint")
	fs.StringVar(&o.hookPath, "hook-path", envOr("HOOK_PATH", assignment.DefaultHookPath), "Host directory holding libvgpu.so and ld.so.preload (default $HOOK_PATH)")
	fs.StringVar(&o.hookImageDir, "hook-image-dir", hook.ImageDir, "Where the image carries HAMi-core's libvgpu.so and ld.so.preload, copied into --hook-path at start when present")
	fs.StringVar(&o.nodeConfigPath, "node-config", settings.DefaultNodeConfigPath, "The node ConfigMap's config.json")
	fs.StringArrayVar(&o.schedulerNames, "scheduler-name", []string{assignment.DefaultSchedulerName},
		"Scheduler whose pods get vGPUs (repeatable); a pod of any other scheduler is never served, whatever its annotations")
	addEnvFlags(fs, o)
	addCompatibilityFlags(fs, o)
	fs.BoolVar(&o.inspect, "inspect", false, "Print the GPUs found and the node annotation that would be written, then exit")
	klogFlags := flag.NewFlagSet("klog", flag.ExitOnError)
	klog.InitFlags(klogFlags)
	fs.AddGoFlagSet(klogFlags)
	_ = fs.Parse(os.Args[1:])

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o); err != nil {
		klog.ErrorS(err, "vgpu-device-plugin stopped", "node", o.nodeName)
		klog.Flush()
		os.Exit(1)
	}
	klog.Flush()
}

func envOr(key, fallback string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return fallback
}

// backend opens the GPU discovery the flags ask for, with the XID health settings of
// nvml.EnvDisableHealthChecks and nvml.EnvEnableHealthChecks (upstream's DP_ variables). A
// word there that is not an XID is reported and skipped; the rest apply.
// Every XID event the health watcher receives is told to xidSeen.
func backend(o *options, xidSeen func(uuid string, xid uint64)) (nvml.Backend, error) {
	xids, err := nvml.XIDPolicyFromEnv(os.Getenv)
	if err != nil {
		klog.ErrorS(err, "XID health settings partly unreadable; the rest apply", "xids", xids.String())
	}
	opts := nvml.Options{XIDs: &xids, XIDSeen: xidSeen}
	var b nvml.Backend
	switch o.nvmlMode {
	case "real":
		b = nvml.NewReal(opts)
	case "fake":
		f, err := nvml.NewFake(o.fakeGPUs, o.nodeName, opts)
		if err != nil {
			return nil, fmt.Errorf("--fake-gpus %q: %w", o.fakeGPUs, err)
		}
		b = f
	default:
		return nil, fmt.Errorf("--nvml %q: want real or fake", o.nvmlMode)
	}
	if err := b.Init(); err != nil {
		return nil, err
	}
	return b, nil
}

func run(ctx context.Context, o *options) error {
	if err := checkFlags(o); err != nil {
		return err
	}
	xidErrors := monitor.NewXIDCounter()
	gpuBackend, err := backend(o, xidErrors.Seen)
	if err != nil {
		return err
	}
	defer func() { _ = gpuBackend.Shutdown() }()
	if o.inspect {
		return inspect(gpuBackend, o)
	}
	// Everything that can be checked without the API server is checked before it is reached:
	// the flags, config.json, and the kubelet device lists the flags and config.json fix.
	discovered, err := gpuBackend.Devices()
	if err != nil {
		return fmt.Errorf("discover GPUs: %w", err)
	}
	if err := settings.Precheck(o.nodeName, o.flags, o.nodeConfigPath, discovered); err != nil {
		return err
	}
	if err := hook.Install(o.hookImageDir, o.hookPath); err != nil {
		return err
	}

	client, err := apiclient.New(o.kubeconfig)
	if err != nil {
		return err
	}
	loadCtx, cancel := context.WithTimeout(ctx, startupTimeout)
	cfg, err := settings.Load(loadCtx, settings.Sources{Node: o.nodeName, Flags: o.flags,
		GetConfigMap: settings.ConfigMapGetterFor(client), NodeConfigPath: o.nodeConfigPath})
	cancel()
	if err != nil {
		return err
	}
	// No device list the kubelet would drop is ever registered.
	gpus := cfg.RegisteredGPUs(discovered)
	if err := errors.Join(cfg.SettleMemoryFactor(gpus), cfg.CheckListSizes(gpus)); err != nil {
		return err
	}
	factor, memoryUnits := cfg.Device.GPUMemoryFactor, cfg.MemoryUnits()
	klog.InfoS("Configuration in force", "config", cfg.String(), "gpus", len(gpus))

	inventory := kubelet.NewInventory(gpus)
	xidErrors.Include(gpus)
	names := cfg.Device.ResourceNames()
	registrar := register.New(register.Options{Client: client, Config: cfg, GPUs: gpuBackend,
		LegacyHandshake: o.legacyHandshake})
	pipe, err := events.New(client, "vgpu-device-plugin")
	if err != nil {
		return err
	}
	pipe.Start()
	defer func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		pipe.Shutdown(ctx)
	}()
	allocCfg := assignment.Config{NodeName: o.nodeName, Names: names, MemoryFactor: factor,
		MemoryScaling: cfg.Device.DeviceMemoryScaling, ContextReserves: cfg.Device.ContextReserves,
		SchedulerNames: o.schedulerNames, AllowDisableControl: o.allowDisableControl, EnvFrom: o.envFrom,
		Recorder: pipe.Recorder(), HookPath: o.hookPath, GPUs: inventory, Advertised: inventory.LastAdvertised}
	if o.podResourcesSocket != "" {
		kubeletPods, err := kubeletPodsClient(ctx, client, o)
		if err != nil {
			return err
		}
		if kubeletPods != nil {
			defer kubeletPods.Close()
			allocCfg.KubeletPods = kubeletPods
		}
	}
	vgpuAllocator, err := assignment.NewVGPU(client, allocCfg)
	if err != nil {
		return err
	}
	manager, err := kubelet.NewManager(kubelet.Config{
		PluginDir: o.kubeletDir,
		Resources: kubelet.Resources{Names: names, SplitCount: cfg.Device.DeviceSplitCount,
			CoreScaling: cfg.Device.DeviceCoreScaling, MemoryFactor: factor, MemoryUnits: memoryUnits},
		Allocators: kubelet.Allocators{
			Count:            vgpuAllocator,
			Memory:           assignment.NewCountRequired(client, o.nodeName, names.Count, names.Memory),
			Cores:            assignment.NewCountRequired(client, o.nodeName, names.Count, names.Cores),
			MemoryPercentage: assignment.NewCountRequired(client, o.nodeName, names.Count, names.MemoryPercentage),
		},
	}, inventory)
	if err != nil {
		return err
	}

	g, ctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		return gpuBackend.WatchHealth(ctx, func(ev nvml.HealthEvent) {
			klog.InfoS("GPU health changed", "uuid", ev.UUID, "healthy", ev.Healthy, "reason", ev.Reason)
			inventory.SetHealth(ev)
			registrar.Trigger()
		})
	})
	g.Go(func() error { return registrar.Run(ctx) })
	g.Go(func() error { return manager.Run(ctx) })
	g.Go(func() error {
		return serveMetrics(ctx, o, client, gpuBackend, pipe, registrar.PatchesCollector(), monitor.NewHealthCollector(inventory.GPUs),
			xidErrors.Collector())
	})
	return g.Wait()
}

// kubeletPodsClient returns the client of the kubelet's PodResources API,
// or nil when the node's kubelet is older than podresources.MinKubelet: its
// list would hold the pods it rejected, and bind order is then safer.
func kubeletPodsClient(ctx context.Context, client kubernetes.Interface, o *options) (*podresources.Client, error) {
	ctx, cancel := context.WithTimeout(ctx, startupTimeout)
	defer cancel()
	node, err := client.CoreV1().Nodes().Get(ctx, o.nodeName, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("read node %s for its kubelet version: %w", o.nodeName, err)
	}
	if v := node.Status.NodeInfo.KubeletVersion; !podresources.ListsOnlyActivePods(v) {
		klog.InfoS("The kubelet's PodResources API lists the pods it rejected too before this version; telling pods apart by bind order",
			"kubeletVersion", v, "minimum", podresources.MinKubelet.String())
		return nil, nil
	}
	return podresources.New(o.podResourcesSocket)
}

// serveMetrics serves the host GPUs' usage, the per-container metrics, the Events dropped and
// the plugin's own collectors (its node patches, its GPUs' health and XIDs).
func serveMetrics(ctx context.Context, o *options, client kubernetes.Interface, gpus nvml.Backend, pipe *events.Pipe,
	own ...prometheus.Collector) error {
	reg := prometheus.NewRegistry()
	pods := monitor.NewPodIndex(client, o.nodeName)
	go pods.Run(ctx)
	// Removes the cache and override directories of pods gone from the node
	// (monitor.DefaultSweepGrace after).
	for _, root := range []string{assignment.ContainerCacheRoot(o.hookPath), assignment.ContainerOverrideRoot(o.hookPath)} {
		go monitor.NewSweeper(root, pods, monitor.SweepConfig{}).Run(ctx)
	}
	reg.MustRegister(monitor.NewCollector(assignment.ContainerCacheRoot(o.hookPath), gpus, pods.Lookup))
	reg.MustRegister(pipe.Collectors()...)
	reg.MustRegister(own...)
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	srv := &http.Server{Addr: o.metricsAddress, Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	if err := srv.ListenAndServe(); err != nil && err != http.ErrServerClosed {
		return fmt.Errorf("metrics on %s: %w", o.metricsAddress, err)
	}
	return nil
}

// inspect prints what the plugin sees on this machine and the annotation it would publish
// with the default configuration and the flags given.
func inspect(b nvml.Backend, o *options) error {
	table, err := nvml.Inspect(b)
	if err != nil {
		return err
	}
	fmt.Print(table)
	cfg, err := settings.Resolve(o.nodeName, vgpu.DefaultNvidiaConfig(), o.flags, vgpu.NodeConfigFile{})
	if err != nil {
		return err
	}
	gpus, err := b.Devices()
	if err != nil {
		return err
	}
	gpus = cfg.RegisteredGPUs(gpus)
	if err := errors.Join(cfg.SettleMemoryFactor(gpus), cfg.CheckListSizes(gpus)); err != nil {
		return err
	}
	value, err := register.NodeDevices(cfg, gpus)
	if err != nil {
		return err
	}
	fmt.Printf("\nvgpu-memory factor: %d MiB per unit\n%s: %s\n", cfg.Device.GPUMemoryFactor, vgpu.NodeDevicesAnnotation, value)
	return nil
}

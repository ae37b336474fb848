package main

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/klog/v2"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/conf"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/plugins/deviceshare"
)

// Reasons of the Warning Events about the scheduler configuration (on the scheduler's pod, or
// its Lease).
const (
	// ReasonInvalidSchedulerConfig: the file cannot be used at all (unreadable, not YAML, no
	// action this scheduler has); the last good version, or the built-in one, stays.
	ReasonInvalidSchedulerConfig = "InvalidSchedulerConfig"
	// ReasonSkippedAction, ReasonSkippedPlugin, ReasonUnknownPluginArgument,
	// ReasonInvalidPluginArgument, ReasonSkippedPluginSetting: one part of a file in force is
	// not applied (conf.Skipped, by kind).
	ReasonSkippedAction         = "SkippedSchedulerAction"
	ReasonSkippedPlugin         = "SkippedSchedulerPlugin"
	ReasonUnknownPluginArgument = "UnknownPluginArgument"
	ReasonInvalidPluginArgument = "InvalidPluginArgument"
	ReasonSkippedPluginSetting  = "SkippedPluginSetting"
	// ReasonVGPUSchedulingOff: nodes have registered vGPU, but the configuration in force
	// does not schedule it (no deviceshare with deviceshare.VGPUEnable: true); vGPU pods stay
	// Pending.
	ReasonVGPUSchedulingOff = "VGPUSchedulingOff"
)

var skipReasons = map[conf.SkipKind]string{
	conf.SkippedAction:   ReasonSkippedAction,
	conf.SkippedPlugin:   ReasonSkippedPlugin,
	conf.SkippedArgument: ReasonUnknownPluginArgument,
	conf.SkippedValue:    ReasonInvalidPluginArgument,
	conf.SkippedSetting:  ReasonSkippedPluginSetting,
}

// configReport tells the operator, once per load, what the configuration in force does not
// apply: a log line and a Warning Event per skipped part, the volcano_scheduler_conf_skipped
// gauge, and the /status page. It also chooses the built-in configuration while no file is
// in force: upstream's default, with deviceshare scheduling vGPU as soon as a device plugin
// has registered vGPU on any node, so that a file that cannot be used never sends vGPU pods
// to nodes without their assignment.
//
// A file in force that does not schedule vGPU (upstream's chart default has no deviceshare)
// leaves vGPU pods Pending, each saying why (framework.ResourceOwner); once a node has
// registered vGPU under such a file, the report says so too, once per load (see Checked): a
// log line, a VGPUSchedulingOff Warning Event, the volcano_vgpu_unscheduled_nodes gauge and
// /status.
type configReport struct {
	events *configEvents
	// claimed counts the nodes announcing the devices of a deriver (the cache's
	// NodesClaimedBy): deviceshare's are those a device plugin has registered vGPU on.
	claimed func(deriver string) int
	// schedulesVGPU reports whether a configuration turns deviceshare's vGPU scheduling on.
	schedulesVGPU func(*conf.SchedulerConfiguration) bool
	builtin       *conf.SchedulerConfiguration
	withVGPU      *conf.SchedulerConfiguration

	skippedGauge *prometheus.GaugeVec

	mu       sync.Mutex
	path     string // the file; "" without --scheduler-conf
	fromFile bool
	loadedAt time.Time
	skipped  []*conf.Skipped
	rejected string // the last problem of the file since the version in force was loaded
	vgpu     vgpuCheck
}

// vgpuCheck is what the report knows of the configuration the last cycle ran under.
type vgpuCheck struct {
	cfg *conf.SchedulerConfiguration
	// off: cfg does not schedule vGPU; said: the warning for cfg has been given.
	off, said bool
}

func newConfigReport(events *configEvents, path string, claimed func(deriver string) int,
	schedulesVGPU func(*conf.SchedulerConfiguration) bool) *configReport {
	return &configReport{events: events, path: path, claimed: claimed, schedulesVGPU: schedulesVGPU,
		builtin: conf.DefaultConfiguration(), withVGPU: builtinWithVGPU(),
		skippedGauge: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "volcano_scheduler_conf_skipped",
			Help: "1 for each part of the scheduler configuration in force that is not applied, by kind (action, plugin, argument, argument-value, setting) and name (plugin/argument for arguments and settings)",
		}, []string{"kind", "name"}),
	}
}

// builtinWithVGPU is upstream's built-in configuration with deviceshare scheduling vGPU.
func builtinWithVGPU() *conf.SchedulerConfiguration {
	cfg := conf.DefaultConfiguration()
	last := &cfg.Tiers[len(cfg.Tiers)-1]
	last.Plugins = append(last.Plugins, conf.PluginOption{Name: deviceshare.PluginName,
		Arguments: conf.Arguments{deviceshare.VGPUEnableArg: true}})
	return cfg
}

// Builtin is the configuration in force while no file is: with deviceshare once any node has
// registered vGPU. Cheap: it is asked at every cycle.
func (r *configReport) Builtin() *conf.SchedulerConfiguration {
	if r.vgpuNodes() > 0 {
		return r.withVGPU
	}
	return r.builtin
}

// vgpuNodes counts the nodes a device plugin has registered vGPU on.
func (r *configReport) vgpuNodes() int { return r.claimed(deviceshare.PluginName) }

// Checked is current, the configuration getter of the cycles, telling the report which
// configuration each cycle runs under; the report then warns once per configuration put in
// force (a load, or the built-in one) that does not schedule vGPU while some node has
// registered vGPU, whenever the first such node comes. Cheap: a pointer comparison per cycle
// once it has said so or while vGPU is scheduled; until then, one count of the cache's.
func (r *configReport) Checked(current func() *conf.SchedulerConfiguration) func() *conf.SchedulerConfiguration {
	return func() *conf.SchedulerConfiguration {
		cfg := current()
		r.check(cfg)
		return cfg
	}
}

func (r *configReport) check(cfg *conf.SchedulerConfiguration) {
	r.mu.Lock()
	if r.vgpu.cfg != cfg {
		r.vgpu = vgpuCheck{cfg: cfg, off: !r.schedulesVGPU(cfg)}
	}
	if !r.vgpu.off || r.vgpu.said {
		r.mu.Unlock()
		return
	}
	nodes := r.vgpuNodes()
	r.vgpu.said = nodes > 0
	r.mu.Unlock()
	if nodes == 0 {
		return
	}
	msg := vgpuOffMessage(nodes)
	klog.InfoS("Scheduler configuration: "+msg, "path", r.path)
	// On the scheduler (its pod, else its Lease), with the other configuration warnings:
	// the configuration is at fault, not a node, and one Event says it where an Event per
	// vGPU node would repeat it hundreds of times.
	r.events.warn(ReasonVGPUSchedulingOff, msg)
}

// vgpuOffMessage is the warning of a configuration that does not schedule vGPU, with nodes
// vGPU nodes.
func vgpuOffMessage(nodes int) string {
	return fmt.Sprintf("%d node(s) have registered vGPU, but the scheduler configuration in force does not schedule it "+
		"(no %s plugin with %s: true): pods that request vGPU stay Pending", nodes, deviceshare.PluginName, deviceshare.VGPUEnableArg)
}

// unscheduledVGPUNodes counts the vGPU nodes while the last cycle's configuration does not
// schedule vGPU: 0 otherwise.
func (r *configReport) unscheduledVGPUNodes() int {
	r.mu.Lock()
	off := r.vgpu.off
	r.mu.Unlock()
	if !off {
		return 0
	}
	return r.vgpuNodes()
}

// Collectors are the report's metrics, for the scheduler's registry.
func (r *configReport) Collectors() []prometheus.Collector {
	builtin := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "volcano_scheduler_conf_builtin",
		Help: "1 while the built-in scheduler configuration is in force because no file is given or none could be used",
	}, func() float64 {
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.fromFile {
			return 0
		}
		return 1
	})
	unscheduled := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "volcano_vgpu_unscheduled_nodes",
		Help: "Nodes with vGPU registered while the scheduler configuration in force does not schedule vGPU (no deviceshare with deviceshare.VGPUEnable: true), so that pods requesting vGPU stay Pending",
	}, func() float64 { return float64(r.unscheduledVGPUNodes()) })
	return []prometheus.Collector{r.skippedGauge, builtin, unscheduled}
}

// Loaded reports a version of the file that came into force, with what it skips.
func (r *configReport) Loaded(skipped []*conf.Skipped) {
	for _, s := range skipped {
		klog.InfoS("Scheduler configuration: not applying one part of the file", "path", r.path, "kind", s.Kind,
			"where", s.Where, "name", s.Label(), "reason", s.Reason)
		r.events.warn(skipReasons[s.Kind], s.Error())
	}
	r.skippedGauge.Reset()
	for _, s := range skipped {
		r.skippedGauge.WithLabelValues(string(s.Kind), s.Label()).Set(1)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.fromFile, r.loadedAt, r.skipped, r.rejected = true, time.Now(), skipped, ""
}

// Rejected reports a version of the file that cannot be used; what is in force stays.
func (r *configReport) Rejected(err error, keeping string) {
	klog.ErrorS(err, "Scheduler configuration rejected; keeping "+keeping, "path", r.path)
	r.events.warn(ReasonInvalidSchedulerConfig, err.Error())
	r.mu.Lock()
	defer r.mu.Unlock()
	r.rejected = err.Error()
}

// ServeHTTP is /status: which configuration is in force and what of it is not applied, in
// plain text for a person with curl.
func (r *configReport) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	r.mu.Lock()
	fromFile, loadedAt, skipped, rejected := r.fromFile, r.loadedAt, r.skipped, r.rejected
	r.mu.Unlock()
	var b strings.Builder
	switch {
	case fromFile:
		fmt.Fprintf(&b, "configuration: %s, in force since %s\n", r.path, loadedAt.UTC().Format(time.RFC3339))
	case r.vgpuNodes() > 0:
		fmt.Fprintf(&b, "configuration: built-in, with deviceshare (nodes with vGPU registered: %d)\n", r.vgpuNodes())
	default:
		fmt.Fprintln(&b, "configuration: built-in (no node has registered vGPU: deviceshare off)")
	}
	if rejected != "" {
		fmt.Fprintf(&b, "rejected: %s\n", rejected)
	}
	if nodes := r.unscheduledVGPUNodes(); nodes > 0 {
		fmt.Fprintf(&b, "vGPU: not scheduled: %s\n", vgpuOffMessage(nodes))
	}
	fmt.Fprintf(&b, "skipped: %d\n", len(skipped))
	for _, s := range skipped {
		fmt.Fprintf(&b, "  %s %s: %s\n", s.Kind, s.Label(), s.Error())
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = w.Write([]byte(b.String()))
}

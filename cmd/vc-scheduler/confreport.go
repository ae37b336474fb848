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
type configReport struct {
	events *configEvents
	// claimed counts the nodes announcing the devices of a deriver (the cache's
	// NodesClaimedBy): deviceshare's are those a device plugin has registered vGPU on.
	claimed  func(deriver string) int
	builtin  *conf.SchedulerConfiguration
	withVGPU *conf.SchedulerConfiguration

	skippedGauge *prometheus.GaugeVec

	mu       sync.Mutex
	path     string // the file; "" without --scheduler-conf
	fromFile bool
	loadedAt time.Time
	skipped  []*conf.Skipped
	rejected string // the last problem of the file since the version in force was loaded
}

func newConfigReport(events *configEvents, path string, claimed func(deriver string) int) *configReport {
	return &configReport{events: events, path: path, claimed: claimed,
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
	return []prometheus.Collector{r.skippedGauge, builtin}
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
	fmt.Fprintf(&b, "skipped: %d\n", len(skipped))
	for _, s := range skipped {
		fmt.Fprintf(&b, "  %s %s: %s\n", s.Kind, s.Label(), s.Error())
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = w.Write([]byte(b.String()))
}

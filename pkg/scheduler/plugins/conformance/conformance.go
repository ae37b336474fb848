// Package conformance protects pods the cluster cannot run without: upstream's plugin keeps
// pods of priority class system-cluster-critical or system-node-critical, and every pod in
// kube-system, out of the victims preempt and reclaim choose.
//
// That filter is all the plugin does, and it plugs into the preemptable and reclaimable
// extension points, which this framework does not have yet (there is no preempt or reclaim
// action). Until then the plugin registers nothing: it exists so that configurations written
// for upstream, whose default tier 1 names it, load unchanged. Nothing is lost meanwhile,
// because without those actions nothing is ever evicted.
package conformance

import (
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/conf"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework"
)

// PluginName is the plugin's name in volcano-scheduler.conf.
const PluginName = "conformance"

type conformancePlugin struct{}

// ArgumentKeys is empty: the plugin reads no arguments.
var ArgumentKeys = conf.ArgumentKeys{}

// New builds the plugin. It takes no arguments; any given are ignored, as upstream.
func New(conf.Arguments) (framework.Plugin, error) { return conformancePlugin{}, nil }

func (conformancePlugin) Name() string { return PluginName }

// OnSessionOpen registers nothing yet: see the package comment.
func (conformancePlugin) OnSessionOpen(*framework.Session) {}

func (conformancePlugin) OnSessionClose(*framework.Session) {}

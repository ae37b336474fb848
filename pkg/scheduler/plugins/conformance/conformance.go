// Package conformance protects pods the cluster cannot run without: as upstream's plugin, it
// keeps pods of priority class system-cluster-critical or system-node-critical, and every pod
// in kube-system, out of the victims preempt and reclaim choose.
package conformance

import (
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/conf"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework"
)

// PluginName is the plugin's name in volcano-scheduler.conf.
const PluginName = "conformance"

// Kubernetes' critical priority classes and system namespace.
const (
	systemClusterCritical = "system-cluster-critical"
	systemNodeCritical    = "system-node-critical"
	systemNamespace       = "kube-system"
)

type conformancePlugin struct{}

// ArgumentKeys is empty: the plugin reads no arguments.
var ArgumentKeys = conf.ArgumentKeys{}

// New builds the plugin. It takes no arguments; any given are ignored, as upstream.
func New(conf.Arguments) (framework.Plugin, error) { return conformancePlugin{}, nil }

func (conformancePlugin) Name() string { return PluginName }

func (conformancePlugin) OnSessionOpen(ssn *framework.Session) {
	ssn.AddPreemptableFn(PluginName, notCritical)
	ssn.AddReclaimableFn(PluginName, notCritical)
}

func (conformancePlugin) OnSessionClose(*framework.Session) {}

// notCritical are the candidates that are neither critical nor in kube-system.
func notCritical(_ *api.TaskInfo, candidates []*api.TaskInfo) ([]*api.TaskInfo, bool) {
	victims := make([]*api.TaskInfo, 0, len(candidates))
	for _, c := range candidates {
		if class := c.Pod.Spec.PriorityClassName; class == systemClusterCritical || class == systemNodeCritical || c.Namespace == systemNamespace {
			continue
		}
		victims = append(victims, c)
	}
	return victims, false
}

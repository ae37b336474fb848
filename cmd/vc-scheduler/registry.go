package main

import (
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/actions/allocate"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/actions/backfill"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/actions/enqueue"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/conf"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/plugins/binpack"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/plugins/capacity"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/plugins/conformance"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/plugins/deviceshare"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/plugins/drf"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/plugins/gang"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/plugins/nodeorder"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/plugins/overcommit"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/plugins/predicates"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/plugins/priority"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/plugins/proportion"
)

// newRegistry is newRegistryFor with the shipped device configuration, for a scheduler that
// reads no ConfigMap (benchmarks).
func newRegistry(allocateOpts allocate.Options) *framework.Registry {
	return newRegistryFor(allocateOpts, deviceshare.NewStaticShared())
}

// newRegistryFor lists every action and plugin this binary has, each plugin with the argument
// keys it reads; the framework knows none by name. deviceshare's sessions share devices,
// which outlives them.
func newRegistryFor(allocateOpts allocate.Options, devices *deviceshare.Shared) *framework.Registry {
	r := framework.NewRegistry()
	r.RegisterAction(enqueue.New())
	r.RegisterAction(allocate.NewWithOptions(allocateOpts))
	r.RegisterAction(backfill.NewWithOptions(allocateOpts))
	for name, p := range map[string]struct {
		build framework.PluginBuilder
		keys  conf.ArgumentKeys
	}{
		priority.PluginName:    {priority.New, priority.ArgumentKeys},
		gang.PluginName:        {gang.New, gang.ArgumentKeys},
		conformance.PluginName: {conformance.New, conformance.ArgumentKeys},
		drf.PluginName:         {drf.New, drf.ArgumentKeys},
		predicates.PluginName:  {predicates.New, predicates.ArgumentKeys},
		proportion.PluginName:  {proportion.New, proportion.ArgumentKeys},
		capacity.PluginName:    {capacity.New, capacity.ArgumentKeys},
		overcommit.PluginName:  {overcommit.New, overcommit.ArgumentKeys},
		nodeorder.PluginName:   {nodeorder.New, nodeorder.ArgumentKeys},
		binpack.PluginName:     {binpack.New, binpack.ArgumentKeys},
		deviceshare.PluginName: {deviceshare.NewBuilder(devices), deviceshare.ArgumentKeys},
	} {
		r.RegisterPluginWithArguments(name, p.build, p.keys)
	}
	return r
}

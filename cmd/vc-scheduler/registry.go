package main

import (
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/actions/allocate"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/actions/backfill"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/actions/enqueue"
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

// newRegistryFor lists every action and plugin this binary has; the framework knows none by
// name. deviceshare's sessions share devices, which outlives them.
func newRegistryFor(allocateOpts allocate.Options, devices *deviceshare.Shared) *framework.Registry {
	r := framework.NewRegistry()
	r.RegisterAction(enqueue.New())
	r.RegisterAction(allocate.NewWithOptions(allocateOpts))
	r.RegisterAction(backfill.NewWithOptions(allocateOpts))
	for name, builder := range map[string]framework.PluginBuilder{
		priority.PluginName:    priority.New,
		gang.PluginName:        gang.New,
		conformance.PluginName: conformance.New,
		drf.PluginName:         drf.New,
		predicates.PluginName:  predicates.New,
		proportion.PluginName:  proportion.New,
		capacity.PluginName:    capacity.New,
		overcommit.PluginName:  overcommit.New,
		nodeorder.PluginName:   nodeorder.New,
		binpack.PluginName:     binpack.New,
		deviceshare.PluginName: deviceshare.NewBuilder(devices),
	} {
		r.RegisterPlugin(name, builder)
	}
	return r
}

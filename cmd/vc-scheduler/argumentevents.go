package main

import "github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/conf"

// ReasonUnknownPluginArgument is the reason of the Warning Event for a plugin argument its
// plugin does not read (a typo, most often; the scheduler ignores it, as upstream does).
const ReasonUnknownPluginArgument = "UnknownPluginArgument"

// warnUnknownArguments records one Warning Event per plugin argument of w's configuration in
// force that its plugin does not read; conf has logged them already.
func (e *configEvents) warnUnknownArguments(w *conf.Watcher) {
	for _, u := range w.UnknownArguments() {
		e.warn(ReasonUnknownPluginArgument, u.Error())
	}
}

// Package kubestatus turns the statuses of kube-scheduler's plugins, which this scheduler runs
// for volumes (pkg/scheduler/volumes) and for inter-pod affinity and spread
// (pkg/scheduler/interpod), into the scheduler's own, keeping their words.
package kubestatus

import (
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
)

// Convert is plugin's status s as the scheduler's, with its reasons as kube-scheduler words
// them ("node(s) didn't match pod anti-affinity rules"); nil for a success.
func Convert(s *fwk.Status, plugin string) *api.Status {
	if s.IsSuccess() {
		return nil
	}
	code := api.Error
	switch s.Code() {
	case fwk.Unschedulable:
		code = api.Unschedulable
	case fwk.UnschedulableAndUnresolvable:
		code = api.UnschedulableAndUnresolvable
	}
	reasons := s.Reasons()
	if len(reasons) == 0 {
		reasons = []string{s.Message()}
	}
	return &api.Status{Code: code, Reasons: reasons, Plugin: plugin}
}

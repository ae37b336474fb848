//go:build unix

package main

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	kubefake "k8s.io/client-go/kubernetes/fake"
	vcfake "volcano.sh/apis/pkg/client/clientset/versioned/fake"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/actions/allocate"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/cache"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/conf"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/plugins/deviceshare"
)

func BenchmarkTmpIdle(b *testing.B) {
	w := benchWorkload(b, "preempt.yaml")
	kube := kubefake.NewClientset()
	vc := vcfake.NewSimpleClientset()
	var binds atomic.Int64
	answerWrites(kube, vc, &binds)
	fullCluster(b, w, 1000, kube, vc)
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)
	sc, _ := cache.New(ctx, cache.Options{}, kube, vc)
	sc.AddDeviceDeriver(deviceshare.NewDeriver())
	registry := newRegistryWith(allocate.Options{}, sources{devices: deviceshare.NewStaticShared(), interPod: interPodSource(b)})
	for _, c := range registry.Components() {
		c.Start(ctx, sc)
	}
	cfg := chartConf(b, registry)
	for _, c := range registry.Components() {
		c.Configure(ctx, cfg)
	}
	sc.Run(ctx)
	sc.WaitForCacheSync(ctx)
	s := scheduler.New(sc, func() *conf.SchedulerConfiguration { c := *cfg; return &c }, registry, nil, time.Second)
	s.RunOnce()
	s.RunOnce()
	for b.Loop() {
		s.RunOnce()
	}
}

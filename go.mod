module github.com/volcano-vgpu/volcano-vgpu

go 1.26

require (
	github.com/NVIDIA/go-nvml v0.13.4-1 // indirect
	github.com/go-logr/logr v1.4.3 // indirect
	github.com/prometheus/client_golang v1.23.2 // indirect
	go.yaml.in/yaml/v2 v2.4.3 // indirect
	k8s.io/api v0.35.4 // indirect
	k8s.io/apimachinery v0.35.4 // indirect
	k8s.io/client-go v0.35.4 // indirect
	k8s.io/component-base v0.35.4 // indirect
	k8s.io/component-helpers v0.35.4 // indirect
	k8s.io/klog/v2 v2.140.0 // indirect
	k8s.io/kubelet v0.35.4 // indirect
	sigs.k8s.io/yaml v1.6.0 // indirect
	volcano.sh/apis v1.14.0 // indirect
)

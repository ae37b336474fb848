// Package apiclient builds the device plugin's API server client. Allocate sits on the path of
// every vGPU container's start, and each call lists the pods of the node, so the client
// speaks protobuf: decoding a hundred pods from JSON costs more than the request itself.
// Every request but a watch ends after apideadline.Default, so a silent API server fails
// a start-up read or an Allocate instead of hanging it.
package apiclient

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/apideadline"
)

// userAgent names the plugin in the API server's logs and audit events.
const userAgent = "vgpu-device-plugin"

// qps and burst bound the plugin's requests. Each Allocate makes two or three, and a node
// starting a batch of vGPU pods asks for many in a row; client-go's default of 5 per second
// would queue them for seconds while their containers wait.
const (
	qps   = 100
	burst = 200
)

// New connects with the kubeconfig file, or in-cluster when it is empty.
func New(kubeconfig string) (kubernetes.Interface, error) {
	cfg, err := config(kubeconfig)
	if err != nil {
		return nil, err
	}
	return kubernetes.NewForConfig(cfg)
}

func config(kubeconfig string) (*rest.Config, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %q: %w", kubeconfig, err)
	}
	cfg = rest.CopyConfig(cfg)
	cfg.ContentType = runtime.ContentTypeProtobuf
	cfg.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	cfg.UserAgent = userAgent
	cfg.QPS, cfg.Burst = qps, burst
	apideadline.Set(cfg, apideadline.Default)
	return cfg, nil
}

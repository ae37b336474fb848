// Package podresources asks the kubelet which pods it holds and which of
// their containers already hold a device resource, through its node-local
// PodResources API (k8s.io/kubelet/pkg/apis/podresources/v1).
//
// Kubelet's Allocate names no pod. Since Kubernetes 1.34 the API lists only
// the kubelet's active pods: the ones admitted or being admitted, never one
// it rejected or one it has not reached yet. With the devices each container
// holds, that tells which pods can be the one an Allocate is for.
package podresources

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"k8s.io/apimachinery/pkg/types"
	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"
)

// DefaultSocket is the kubelet's PodResources socket.
const DefaultSocket = "/var/lib/kubelet/pod-resources/kubelet.sock"

// maxMessage bounds one List answer. It carries every device ID of every
// active pod, the vGPU memory resource's included: at most about the
// node's device lists, which the plugin keeps near 1 MiB.
const maxMessage = 16 << 20

// listTimeout bounds one List; the kubelet answers from memory.
const listTimeout = 5 * time.Second

// Client lists the kubelet's pods over its PodResources socket.
type Client struct {
	socket string
	conn   *grpc.ClientConn
	lister podresourcesv1.PodResourcesListerClient
}

// New returns a client of the socket; it connects on first use and again
// after the kubelet restarts.
func New(socket string) (*Client, error) {
	conn, err := grpc.NewClient("unix://"+socket,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxMessage)))
	if err != nil {
		return nil, fmt.Errorf("kubelet PodResources socket %s: %w", socket, err)
	}
	return &Client{socket: socket, conn: conn, lister: podresourcesv1.NewPodResourcesListerClient(conn)}, nil
}

// Close closes the connection.
func (c *Client) Close() error {
	return c.conn.Close()
}

// Holdings lists the kubelet's active pods and, per container, whether it
// holds devices of resource.
func (c *Client) Holdings(ctx context.Context, resource string) (Holdings, error) {
	ctx, cancel := context.WithTimeout(ctx, listTimeout)
	defer cancel()
	resp, err := c.lister.List(ctx, &podresourcesv1.ListPodResourcesRequest{})
	if err != nil {
		return nil, fmt.Errorf("list the kubelet's pods at %s: %w", c.socket, err)
	}
	return holdingsOf(resp.GetPodResources(), resource), nil
}

func holdingsOf(pods []*podresourcesv1.PodResources, resource string) Holdings {
	h := make(Holdings, len(pods))
	for _, pod := range pods {
		containers := make(map[string]bool, len(pod.GetContainers()))
		for _, c := range pod.GetContainers() {
			holds := false
			for _, d := range c.GetDevices() {
				holds = holds || (d.GetResourceName() == resource && len(d.GetDeviceIds()) > 0)
			}
			containers[c.GetName()] = holds
		}
		h[types.NamespacedName{Namespace: pod.GetNamespace(), Name: pod.GetName()}] = containers
	}
	return h
}

// Holdings are the kubelet's active pods; for each, whether each of its
// containers holds devices of the resource asked about.
type Holdings map[types.NamespacedName]map[string]bool

// Awaits says whether the kubelet holds the pod and its container holds
// none of the resource yet: only such a container can be the one an
// Allocate of the resource is for.
func (h Holdings) Awaits(pod types.NamespacedName, container string) bool {
	containers, active := h[pod]
	return active && !containers[container]
}

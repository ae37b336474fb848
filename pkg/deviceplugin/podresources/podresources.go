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
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/credentials/insecure"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/version"
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

// MinKubelet is the first kubelet release whose List leaves out the pods
// it rejected (KubeletPodResourcesListUseActivePods, on by default). An
// older one lists them too, which would make a rejected pod look admitted.
var MinKubelet = version.MajorMinor(1, 34)

// ListsOnlyActivePods says whether a kubelet of kubeletVersion (a node's
// status.nodeInfo.kubeletVersion) lists only the pods it admits.
func ListsOnlyActivePods(kubeletVersion string) bool {
	v, err := version.ParseGeneric(kubeletVersion)
	return err == nil && v.AtLeast(MinKubelet)
}

// Client lists the kubelet's pods over its PodResources socket.
type Client struct {
	socket string
	conn   *grpc.ClientConn
	lister podresourcesv1.PodResourcesListerClient
	// answered says the last List was answered: the next one then waits
	// (within listTimeout) for a connection being re-established, as after
	// a kubelet restart, rather than fail at once.
	answered atomic.Bool
}

// New returns a client of the socket; it connects on first use and again
// after the kubelet restarts.
func New(socket string) (*Client, error) {
	conn, err := grpc.NewClient("unix://"+socket,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxMessage)),
		// A restarted kubelet's socket is back within a second or two:
		// reconnect at that pace, not gRPC's default backoff of up to 2 min.
		grpc.WithConnectParams(grpc.ConnectParams{Backoff: backoff.Config{
			BaseDelay: 100 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: time.Second}}))
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
	resp, err := c.lister.List(ctx, &podresourcesv1.ListPodResourcesRequest{}, grpc.WaitForReady(c.answered.Load()))
	c.answered.Store(err == nil)
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

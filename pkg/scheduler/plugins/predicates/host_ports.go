package predicates

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
)

// anyAddress is the host IP of a port bound on every address, which is what an empty
// hostIP means.
const anyAddress = "0.0.0.0"

// protocolPort is a port number of one protocol, on whatever address.
type protocolPort struct {
	protocol corev1.Protocol
	port     int32
}

// hostPort is one port a pod binds on its node.
type hostPort struct {
	protocolPort
	ip string
}

// appendHostPorts appends the host ports the pod binds: those of its containers and of its
// restartable init containers (sidecars run as long as the pod). Plain init containers are
// left out, as kube-scheduler does. An empty protocol is TCP and an empty IP every address.
func appendHostPorts(dst []hostPort, pod *corev1.Pod) []hostPort {
	add := func(c *corev1.Container) {
		for i := range c.Ports {
			cp := &c.Ports[i]
			if cp.HostPort <= 0 {
				continue
			}
			hp := hostPort{protocolPort: protocolPort{protocol: cp.Protocol, port: cp.HostPort}, ip: cp.HostIP}
			if hp.protocol == "" {
				hp.protocol = corev1.ProtocolTCP
			}
			if hp.ip == "" {
				hp.ip = anyAddress
			}
			dst = append(dst, hp)
		}
	}
	for i := range pod.Spec.Containers {
		add(&pod.Spec.Containers[i])
	}
	for i := range pod.Spec.InitContainers {
		if c := &pod.Spec.InitContainers[i]; c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			add(c)
		}
	}
	return dst
}

// nodePorts counts the host ports in use on one node. Counts rather than sets, so that
// undoing one of two pods that (wrongly) share a port leaves the port in use.
type nodePorts struct {
	exact map[hostPort]int
	// anyIP counts each protocol and port over all addresses, for a request on every address.
	anyIP map[protocolPort]int
}

// conflicts reports whether binding want would clash: the same protocol and port on the
// same address, or with either side bound on every address.
func (n *nodePorts) conflicts(want hostPort) bool {
	if want.ip == anyAddress {
		return n.anyIP[want.protocolPort] > 0
	}
	return n.exact[want] > 0 || n.exact[hostPort{protocolPort: want.protocolPort, ip: anyAddress}] > 0
}

// hostPortIndex holds the ports in use per node name; nodes without any are absent.
type hostPortIndex map[string]*nodePorts

// newHostPortIndex indexes the host ports of every pod on the nodes, whatever its status:
// a releasing pod still holds its ports, a pipelined one will.
func newHostPortIndex(nodes []*api.NodeInfo) hostPortIndex {
	idx := hostPortIndex{}
	var ports []hostPort
	for _, node := range nodes {
		for _, t := range node.Tasks {
			if t.Pod == nil {
				continue
			}
			if ports = appendHostPorts(ports[:0], t.Pod); len(ports) > 0 {
				idx.add(node.Name, ports, 1)
			}
		}
	}
	return idx
}

// add counts ports in (delta 1) or out (-1) of a node.
func (idx hostPortIndex) add(node string, ports []hostPort, delta int) {
	n := idx[node]
	if n == nil {
		n = &nodePorts{exact: map[hostPort]int{}, anyIP: map[protocolPort]int{}}
		idx[node] = n
	}
	for _, hp := range ports {
		n.exact[hp] += delta
		n.anyIP[hp.protocolPort] += delta
	}
}

// conflicts reports whether any of ports is taken on the node.
func (idx hostPortIndex) conflicts(node string, ports []hostPort) bool {
	n := idx[node]
	if n == nil {
		return false
	}
	for _, hp := range ports {
		if n.conflicts(hp) {
			return true
		}
	}
	return false
}

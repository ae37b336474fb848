package main

import (
	"context"
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/vgpu"
)

// errNoVGPUNodes is what a cluster without a running device plugin gets from "nodes".
var errNoVGPUNodes = fmt.Errorf("no node advertises vGPUs (annotation %s): is vgpu-device-plugin running?", vgpu.NodeDevicesAnnotation)

// vgpuNode is a node's GPUs as its device plugin publishes them.
type vgpuNode struct {
	name string
	// node is the Node as listed: why asks whether a pod may run there.
	node *corev1.Node
	gpus []vgpu.NodeDevice
	// mibPerUnit is the MiB in one unit of the node's vgpu-memory (gpuMemoryFactor): the
	// node's NodeMemoryFactorAnnotation, else 1, the factor upstream device plugins pin.
	mibPerUnit int64
}

// index is the position of the GPU with uuid on the node, or -1.
func (n *vgpuNode) index(uuid string) int {
	for i, g := range n.gpus {
		if g.UUID == uuid {
			return i
		}
	}
	return -1
}

// listVGPUNodes reads every node that carries the register annotation, sorted by name. A
// node whose annotations do not decode is left out with a warning naming it, so one bad node
// does not hide the others.
func listVGPUNodes(ctx context.Context, client kubernetes.Interface) ([]*vgpuNode, []string, error) {
	list, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, nil, explain(err, "list", "nodes", "")
	}
	var nodes []*vgpuNode
	var warnings []string
	for i := range list.Items {
		node := &list.Items[i]
		value, ok := node.Annotations[vgpu.NodeDevicesAnnotation]
		if !ok {
			continue
		}
		n, err := decodeVGPUNode(node, value)
		if err != nil {
			warnings = append(warnings, err.Error())
			continue
		}
		nodes = append(nodes, n)
	}
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].name < nodes[j].name })
	return nodes, warnings, nil
}

func decodeVGPUNode(node *corev1.Node, devices string) (*vgpuNode, error) {
	gpus, err := vgpu.DecodeNodeDevices(devices)
	if err != nil {
		return nil, fmt.Errorf("node %s: %s: %w", node.Name, vgpu.NodeDevicesAnnotation, err)
	}
	n := &vgpuNode{name: node.Name, node: node, gpus: gpus, mibPerUnit: 1}
	if value, ok := node.Annotations[vgpu.NodeMemoryFactorAnnotation]; ok {
		factor, err := vgpu.ParseMemoryFactor(value)
		if err != nil {
			return nil, fmt.Errorf("node %s: %w", node.Name, err)
		}
		n.mibPerUnit = int64(factor)
	}
	return n, nil
}

// listPods lists the pods of namespace, or of every namespace when it is empty. A namespace
// that does not exist is an error, where the API server would list it as empty.
func listPods(ctx context.Context, client kubernetes.Interface, namespace string) ([]corev1.Pod, error) {
	list, err := client.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, explain(err, "list", "pods", namespace)
	}
	if len(list.Items) == 0 && namespace != "" {
		// A user allowed to list pods but not to get namespaces learns nothing more here.
		if _, err := client.CoreV1().Namespaces().Get(ctx, namespace, metav1.GetOptions{}); apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("namespace %q not found", namespace)
		}
	}
	return list.Items, nil
}

// explain turns an API error into one that says what the user could not do, in the words an
// RBAC Role takes (verb and resource), so that whoever grants it knows what to add.
func explain(err error, verb, resource, namespace string) error {
	where := "at the cluster scope"
	if namespace != "" {
		where = fmt.Sprintf("in namespace %q", namespace)
	}
	if apierrors.IsForbidden(err) {
		return fmt.Errorf("forbidden: your credentials may not %s %s %s (an RBAC rule with verb %q on resource %q grants it): %w",
			verb, resource, where, verb, resource, err)
	}
	return fmt.Errorf("%s %s %s: %w", verb, resource, where, err)
}

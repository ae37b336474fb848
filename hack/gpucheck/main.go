// Command gpucheck stands in for the kubelet and the API server around a real
// vgpu-device-plugin on a machine with GPUs but no Kubernetes, for the hardware check in
// h200.sh (docs/h200-context-reserve.md has the results).
//
// It serves the kubelet's Registration service on kubelet.sock in --dir and a minimal API
// server (Node, Pods, device ConfigMaps, Events; JSON over HTTP) whose kubeconfig it writes to
// --kubeconfig. The plugin, started separately with --kubelet-dir and --kubeconfig pointing
// at them, registers its resources over the real socket; gpucheck opens each resource's
// ListAndWatch stream as kubelet does and prints the devices, and waits for the plugin to
// publish the node's GPUs in the node annotation.
//
// Then it reads commands on standard input, one per line:
//
//	allocate NAME MIB CORES FACTOR OUT [RESERVE]
//
// creates pod NAME bound to the node with one container that asks for one vGPU of MIB MiB
// (MIB/FACTOR vgpu-memory units; FACTOR is the plugin's MiB per unit) and CORES percent,
// annotated with the assignment the scheduler would write for the first GPU of the node
// annotation (encoded by pkg/vgpu, as the scheduler does), then calls Allocate for the
// container's three resources as kubelet does at admission and writes the merged response
// to OUT.json, its environment to OUT.env (KEY=VALUE lines) and its mounts to OUT.mounts
// ("HOST CONTAINER ro|rw" lines); on failure it writes OUT.error instead. With RESERVE (MiB)
// the assignment books the request plus that context reserve, rounded up to whole units, as
// the scheduler does for a GPU model with a contextReserves entry; the plugin accepts that
// only when its device ConfigMap (--device-config) has the entry.
//
//	quit
//
// ends it (so does the end of input).
//
// With --device-config FILE the API server holds kube-system/volcano-vgpu-device-config with
// FILE as its device-config.yaml; without it there is no device ConfigMap and the plugin
// uses its shipped defaults.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/vgpu"
)

type options struct {
	dir, node, kubeconfig, apiAddress, out, scheduler, namespace, deviceConfig string
	timeout                                                                    time.Duration
}

func main() {
	o := options{}
	flag.StringVar(&o.dir, "dir", "", "the kubelet's device-plugin directory to serve kubelet.sock in (the plugin's --kubelet-dir)")
	flag.StringVar(&o.node, "node", "gpucheck-node", "the node's name (the plugin's --node-name)")
	flag.StringVar(&o.kubeconfig, "kubeconfig", "", "where to write the kubeconfig of the stand-in API server (the plugin's --kubeconfig)")
	flag.StringVar(&o.apiAddress, "api-address", "127.0.0.1:0", "address of the stand-in API server")
	flag.StringVar(&o.out, "out", ".", "directory for devices.txt")
	flag.StringVar(&o.scheduler, "scheduler-name", "volcano", "schedulerName of the pods")
	flag.StringVar(&o.namespace, "namespace", "default", "namespace of the pods")
	flag.StringVar(&o.deviceConfig, "device-config", "", "device-config.yaml to serve as the device ConfigMap (none when empty)")
	flag.DurationVar(&o.timeout, "timeout", 2*time.Minute, "how long to wait for registration, device lists and the node annotation")
	flag.Parse()
	logger := log.New(os.Stdout, "", log.Ltime|log.Lmicroseconds)
	if err := run(o, logger); err != nil {
		logger.Printf("gpucheck: %v", err)
		os.Exit(1)
	}
}

func run(o options, logger *log.Logger) error {
	if o.dir == "" || o.kubeconfig == "" {
		return errors.New("--dir and --kubeconfig are required")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	store := newAPIStore(logger.Printf)
	if _, err := store.put("nodes", &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: o.node, Labels: map[string]string{corev1.LabelHostname: o.node}},
		Status:     corev1.NodeStatus{Phase: corev1.NodeRunning},
	}); err != nil {
		return err
	}
	if o.deviceConfig != "" {
		data, err := os.ReadFile(o.deviceConfig)
		if err != nil {
			return err
		}
		ref := vgpu.DefaultDeviceConfigMap()
		if _, err := store.put("configmaps", &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: ref.Name, Namespace: ref.Namespace},
			Data:       map[string]string{vgpu.DeviceConfigKey: string(data)},
		}); err != nil {
			return err
		}
		logger.Printf("API server: device ConfigMap %s from %s", ref, o.deviceConfig)
	}
	listener, err := net.Listen("tcp", o.apiAddress)
	if err != nil {
		return fmt.Errorf("API server: %w", err)
	}
	srv := &http.Server{Handler: loggingHandler(store, logger), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(listener) }()
	defer srv.Close()
	server := "http://" + listener.Addr().String()
	if err := writeKubeconfig(o.kubeconfig, server); err != nil {
		return err
	}
	logger.Printf("API server: serving %s, kubeconfig %s", server, o.kubeconfig)

	kubelet := newKubeletStandIn(o.dir, logger.Printf)
	stop, err := kubelet.serve(ctx)
	if err != nil {
		return err
	}
	defer stop()

	names := vgpu.DefaultNvidiaConfig().ResourceNames()
	resources := []string{string(names.Count), string(names.Memory), string(names.Cores)}
	waitCtx, waitCancel := context.WithTimeout(ctx, o.timeout)
	defer waitCancel()
	if err := kubelet.waitListed(waitCtx, resources); err != nil {
		return err
	}
	if err := reportDevices(o, store, kubelet.snapshot(), logger); err != nil {
		return err
	}
	gpus, err := waitNodeDevices(waitCtx, store, o.node)
	if err != nil {
		return err
	}
	for i, g := range gpus {
		logger.Printf("node annotation %s: GPU %d %s, %d vGPUs, %d memory units, type %q, healthy %v, mode %s",
			vgpu.NodeDevicesAnnotation, i, g.UUID, g.Count, g.Memory, g.Type, g.Healthy, g.Mode)
	}

	logger.Printf("ready for commands on standard input")
	scanner := bufio.NewScanner(os.Stdin)
	for scanner.Scan() {
		fields := strings.Fields(scanner.Text())
		if len(fields) == 0 {
			continue
		}
		switch fields[0] {
		case "quit":
			return nil
		case "allocate":
			if len(fields) != 6 && len(fields) != 7 {
				logger.Printf("want: allocate NAME MIB CORES FACTOR OUT [RESERVE]")
				continue
			}
			a, err := parseAllocate(fields[1:])
			if err == nil {
				err = allocate(ctx, o, store, kubelet, names, a, logger)
			}
			if err != nil {
				logger.Printf("allocate %s: FAILED: %v", fields[1], err)
				_ = os.WriteFile(fields[5]+".error", []byte(err.Error()+"\n"), 0o644)
			}
		default:
			logger.Printf("unknown command %q", fields[0])
		}
	}
	return scanner.Err()
}

func writeKubeconfig(path, server string) error {
	cfg := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: gpucheck
  cluster:
    server: %s
contexts:
- name: gpucheck
  context:
    cluster: gpucheck
    user: gpucheck
current-context: gpucheck
users:
- name: gpucheck
  user: {}
`, server)
	return os.WriteFile(path, []byte(cfg), 0o600)
}

// reportDevices prints what each resource advertises and records it on the node's status, as
// kubelet does with capacity and allocatable.
func reportDevices(o options, store *apiStore, lists map[string][]*pluginapi.Device, logger *log.Logger) error {
	names := make([]string, 0, len(lists))
	for name := range lists {
		names = append(names, name)
	}
	sort.Strings(names)
	var b strings.Builder
	capacity := corev1.ResourceList{}
	for _, name := range names {
		healthy := 0
		for _, d := range lists[name] {
			if d.Health == pluginapi.Healthy {
				healthy++
			}
		}
		capacity[corev1.ResourceName(name)] = *resource.NewQuantity(int64(healthy), resource.DecimalSI)
		fmt.Fprintf(&b, "%s: %s\n", name, describeDevices(lists[name]))
	}
	logger.Printf("ListAndWatch, devices per resource:\n%s", b.String())
	if err := os.WriteFile(filepath.Join(o.out, "devices.txt"), []byte(b.String()), 0o644); err != nil {
		return err
	}
	var node corev1.Node
	if _, err := store.get("nodes", "", o.node, &node); err != nil {
		return err
	}
	node.Status.Capacity, node.Status.Allocatable = capacity, capacity.DeepCopy()
	_, err := store.put("nodes", &node)
	return err
}

// waitNodeDevices waits for the plugin to publish the node's GPUs.
func waitNodeDevices(ctx context.Context, store *apiStore, node string) ([]vgpu.NodeDevice, error) {
	for {
		changed := store.waitChange()
		var n corev1.Node
		if _, err := store.get("nodes", "", node, &n); err != nil {
			return nil, err
		}
		if value, ok := n.Annotations[vgpu.NodeDevicesAnnotation]; ok {
			gpus, err := vgpu.DecodeNodeDevices(value)
			if err != nil {
				return nil, fmt.Errorf("node %s annotation %s %q: %w", node, vgpu.NodeDevicesAnnotation, value, err)
			}
			return gpus, nil
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("node %s: no %s annotation: %w", node, vgpu.NodeDevicesAnnotation, ctx.Err())
		case <-changed:
		}
	}
}

type allocation struct {
	name                        string
	mib, cores, factor, reserve int32
	out                         string
}

func parseAllocate(fields []string) (allocation, error) {
	a := allocation{name: fields[0], out: fields[4]}
	numbers := []string{fields[1], fields[2], fields[3]}
	if len(fields) == 6 {
		numbers = append(numbers, fields[5])
	}
	for i, dst := range []*int32{&a.mib, &a.cores, &a.factor, &a.reserve}[:len(numbers)] {
		n, err := strconv.ParseInt(numbers[i], 10, 32)
		if err != nil || n < 0 {
			return a, fmt.Errorf("%q: want a number", numbers[i])
		}
		*dst = int32(n)
	}
	switch {
	case a.factor < 1:
		return a, errors.New("FACTOR must be at least 1")
	case a.mib%a.factor != 0:
		return a, fmt.Errorf("%d MiB is not a whole number of %d MiB units", a.mib, a.factor)
	}
	return a, nil
}

// result is what OUT.json holds.
type result struct {
	Pod         string                  `json:"pod"`
	UID         string                  `json:"uid"`
	Container   string                  `json:"container"`
	Assignment  string                  `json:"assignment"`
	DeviceIDs   map[string]deviceIDs    `json:"deviceIDs"`
	Envs        map[string]string       `json:"envs"`
	Mounts      []*pluginapi.Mount      `json:"mounts"`
	Devices     []*pluginapi.DeviceSpec `json:"devices,omitempty"`
	Annotations map[string]string       `json:"podAnnotationsAfter"`
	ElapsedMS   map[string]float64      `json:"allocateMilliseconds"`
}

type deviceIDs struct {
	Count int      `json:"count"`
	First []string `json:"first"`
}

const containerName = "cuda"

func allocate(ctx context.Context, o options, store *apiStore, kubelet *kubeletStandIn, names vgpu.ResourceNames, a allocation, logger *log.Logger) error {
	var node corev1.Node
	if _, err := store.get("nodes", "", o.node, &node); err != nil {
		return err
	}
	gpus, err := vgpu.DecodeNodeDevices(node.Annotations[vgpu.NodeDevicesAnnotation])
	if err != nil {
		return err
	}
	units := a.mib / a.factor
	booked := units + vgpu.ReserveUnits(a.reserve, a.factor)
	// The scheduler's choice on a node of one GPU: the first healthy HAMi-core GPU with room.
	var chosen *vgpu.NodeDevice
	for i := range gpus {
		if gpus[i].Healthy && gpus[i].Mode == vgpu.ModeHAMiCore && gpus[i].Memory >= booked {
			chosen = &gpus[i]
			break
		}
	}
	if chosen == nil {
		return fmt.Errorf("no healthy %s GPU with %d memory units on node %s", vgpu.ModeHAMiCore, booked, o.node)
	}
	assignment := vgpu.PodDevices{{{UUID: chosen.UUID, Type: vgpu.DeviceTypeNVIDIA, UsedMemory: booked, UsedCores: a.cores}}}
	encoded, err := assignment.Encode()
	if err != nil {
		return err
	}
	now := time.Now()
	stamp := vgpu.FormatUnixSeconds(now)
	limits := corev1.ResourceList{
		names.Count:  *resource.NewQuantity(1, resource.DecimalSI),
		names.Memory: *resource.NewQuantity(int64(units), resource.DecimalSI),
	}
	if a.cores > 0 {
		limits[names.Cores] = *resource.NewQuantity(int64(a.cores), resource.DecimalSI)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: a.name, Namespace: o.namespace, UID: types.UID(uuid.NewUUID()),
			Annotations: map[string]string{
				vgpu.AssignedNodeAnnotation:      o.node,
				vgpu.AssignedTimeAnnotation:      stamp,
				vgpu.BindTimeAnnotation:          stamp,
				vgpu.AssignedDevicesAnnotation:   encoded,
				vgpu.DevicesToAllocateAnnotation: encoded,
				vgpu.BindPhaseAnnotation:         vgpu.BindPhaseAllocating,
			},
		},
		Spec: corev1.PodSpec{
			NodeName:      o.node,
			SchedulerName: o.scheduler,
			Containers: []corev1.Container{{
				Name: containerName, Image: "gpucheck",
				Resources: corev1.ResourceRequirements{Limits: limits},
			}},
		},
		Status: corev1.PodStatus{
			Phase: corev1.PodPending,
			Conditions: []corev1.PodCondition{{
				Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(now),
			}},
		},
	}
	if _, err := store.put("pods", pod); err != nil {
		return err
	}
	logger.Printf("pod %s/%s (uid %s) asks %d memory units, bound to %s with %s=%q", pod.Namespace, pod.Name, pod.UID,
		units, o.node, vgpu.AssignedDevicesAnnotation, encoded)

	res := result{
		Pod: pod.Namespace + "/" + pod.Name, UID: string(pod.UID), Container: containerName, Assignment: encoded,
		DeviceIDs: map[string]deviceIDs{}, Envs: map[string]string{}, ElapsedMS: map[string]float64{},
	}
	// Kubelet calls Allocate once per device-plugin resource of the container and merges
	// the answers into the container's configuration.
	for _, name := range []corev1.ResourceName{names.Count, names.Memory, names.Cores} {
		q, ok := limits[name]
		if !ok {
			continue
		}
		callCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
		start := time.Now()
		ids, resp, err := kubelet.allocate(callCtx, string(name), int(q.Value()))
		cancel()
		res.ElapsedMS[string(name)] = float64(time.Since(start).Microseconds()) / 1000
		if err != nil {
			return err
		}
		res.DeviceIDs[string(name)] = deviceIDs{Count: len(ids), First: ids[:min(len(ids), 3)]}
		for k, v := range resp.Envs {
			res.Envs[k] = v
		}
		res.Mounts = append(res.Mounts, resp.Mounts...)
		res.Devices = append(res.Devices, resp.Devices...)
		logger.Printf("Allocate %s x%d: %d envs, %d mounts, %d device specs (%.1f ms)", name, len(ids),
			len(resp.Envs), len(resp.Mounts), len(resp.Devices), res.ElapsedMS[string(name)])
	}

	var after corev1.Pod
	if _, err := store.get("pods", pod.Namespace, pod.Name, &after); err != nil {
		return err
	}
	res.Annotations = after.Annotations
	logger.Printf("pod %s after Allocate: %s=%q %s=%q %s=%q", pod.Name,
		vgpu.BindPhaseAnnotation, after.Annotations[vgpu.BindPhaseAnnotation],
		vgpu.DevicesToAllocateAnnotation, after.Annotations[vgpu.DevicesToAllocateAnnotation],
		vgpu.AssignedTimeAnnotation, after.Annotations[vgpu.AssignedTimeAnnotation])
	// Kubelet then starts the container and reports the pod running.
	after.Status.Phase = corev1.PodRunning
	if _, err := store.put("pods", &after); err != nil {
		return err
	}
	return writeResult(a.out, res, logger)
}

// writeResult writes OUT.json and OUT.mounts, then OUT.env last, whose appearance says the
// allocation is complete.
func writeResult(out string, res result, logger *log.Logger) error {
	data, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(out+".json", append(data, '\n'), 0o644); err != nil {
		return err
	}
	var mounts strings.Builder
	for _, m := range res.Mounts {
		mode := "rw"
		if m.ReadOnly {
			mode = "ro"
		}
		fmt.Fprintf(&mounts, "%s %s %s\n", m.HostPath, m.ContainerPath, mode)
	}
	if err := os.WriteFile(out+".mounts", []byte(mounts.String()), 0o644); err != nil {
		return err
	}
	keys := make([]string, 0, len(res.Envs))
	for k := range res.Envs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var env strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&env, "%s=%s\n", k, res.Envs[k])
	}
	logger.Printf("Allocate response for %s:\n%s%s", res.Pod, env.String(), mounts.String())
	if err := os.WriteFile(out+".env.tmp", []byte(env.String()), 0o644); err != nil {
		return err
	}
	return os.Rename(out+".env.tmp", out+".env")
}

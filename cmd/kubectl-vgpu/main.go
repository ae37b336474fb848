// Command kubectl-vgpu is a kubectl plugin that shows how the cluster's GPUs are shared:
// "kubectl vgpu nodes" lists every GPU with what the pods on it book, "kubectl vgpu pods"
// the vGPUs each pod holds or asks for, "kubectl vgpu queues" each queue's vGPU share, and
// "kubectl vgpu why" why a pod or PodGroup waits. It reads only what the API server holds
// (node register annotations, pod assignments and requests, Queues, PodGroups, Events),
// through the user's kubeconfig, so it shows what the scheduler decides from, not what NVML
// measures.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"volcano.sh/apis/pkg/client/clientset/versioned"
)

const usage = `Usage:
  kubectl vgpu nodes [-o wide|json|yaml]
  kubectl vgpu pods [-n NAMESPACE | -A] [-o wide|json|yaml]
  kubectl vgpu queues [-o wide|json|yaml]
  kubectl vgpu why POD | podgroup/NAME [-n NAMESPACE]

Flags:
`

// The subcommands.
const (
	commandNodes  = "nodes"
	commandPods   = "pods"
	commandQueues = "queues"
	commandWhy    = "why"
)

// options are the parsed command line.
type options struct {
	command       string
	kubeconfig    string
	context       string
	namespace     string
	allNamespaces bool
	output        string
	// target is why's object: a pod, or the PodGroup of a podgroup/NAME argument.
	target whyTarget
}

// clients are what the commands read the cluster through, and the namespace the kubeconfig's
// context names.
type clients struct {
	kube      kubernetes.Interface
	volcano   versioned.Interface
	namespace string
}

// clientFor builds the clients; tests replace it with fake clientsets.
type clientFor func(o options) (clients, error)

func main() {
	if err := run(context.Background(), os.Args[1:], os.Stdout, os.Stderr, kubeconfigClient, time.Now()); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}

// run parses args and runs the subcommand they name, writing the result to stdout and
// warnings about objects it skips to stderr; now is the time Events' ages count from.
func run(ctx context.Context, args []string, stdout, stderr io.Writer, newClient clientFor, now time.Time) error {
	o, err := parse(args, stderr)
	if err != nil || o.command == "" {
		return err
	}
	c, err := newClient(o)
	if err != nil {
		return err
	}
	if o.namespace == "" {
		o.namespace = c.namespace
	}
	switch o.command {
	case commandNodes:
		gpus, warnings, err := listGPUs(ctx, c.kube)
		if err != nil {
			return err
		}
		warn(stderr, warnings)
		return printGPUs(stdout, o.output, gpus)
	case commandQueues:
		shares, err := listQueueShares(ctx, c.volcano)
		if err != nil {
			return err
		}
		return printQueueShares(stdout, o.output, shares)
	case commandWhy:
		return explainWait(ctx, c, o.namespace, o.target, now, stdout, stderr)
	}
	if o.allNamespaces {
		o.namespace = ""
	}
	vgpus, warnings, err := listPodVGPUs(ctx, c.kube, o.namespace)
	if err != nil {
		return err
	}
	warn(stderr, warnings)
	return printPodVGPUs(stdout, o.output, vgpus, o.allNamespaces)
}

// parse reads the flags kubectl's own commands take for the same purpose, so that
// "kubectl vgpu" reads like "kubectl get". An empty command means help was printed.
func parse(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := pflag.NewFlagSet("kubectl-vgpu", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig file (default $KUBECONFIG, else ~/.kube/config)")
	fs.StringVar(&o.context, "context", "", "kubeconfig context to use (default its current context)")
	fs.StringVarP(&o.namespace, "namespace", "n", "", "pods, why: the namespace (default the context's)")
	fs.BoolVarP(&o.allNamespaces, "all-namespaces", "A", false, "pods: list every namespace")
	fs.StringVarP(&o.output, "output", "o", "", "wide, json or yaml (default a table)")
	fs.Usage = func() {
		fmt.Fprint(stderr, usage)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if err == pflag.ErrHelp {
			return options{}, nil
		}
		return options{}, err
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return options{}, fmt.Errorf("name a command: nodes, pods, queues or why")
	}
	o.command = fs.Arg(0)
	operands := 0
	switch o.command {
	case commandNodes, commandPods, commandQueues:
	case commandWhy:
		operands = 1
	default:
		return options{}, fmt.Errorf("unknown command %q: want nodes, pods, queues or why", o.command)
	}
	if fs.NArg() > 1+operands {
		return options{}, fmt.Errorf("unexpected arguments %q after %s", fs.Args()[1+operands:], strings.Join(fs.Args()[:1+operands], " "))
	}
	if o.command == commandWhy {
		if fs.NArg() == 1 {
			return options{}, fmt.Errorf("why: name a pod, or podgroup/NAME")
		}
		var err error
		if o.target, err = parseWhyTarget(fs.Arg(1)); err != nil {
			return options{}, err
		}
		// A diagnosis is prose for a person; scripts read the objects themselves.
		if o.output != "" || o.allNamespaces {
			return options{}, fmt.Errorf("why takes neither --output nor --all-namespaces")
		}
	}
	switch o.output {
	case "", outputWide, outputJSON, outputYAML:
	default:
		return options{}, fmt.Errorf("output %q: want wide, json or yaml", o.output)
	}
	if o.allNamespaces && o.namespace != "" {
		return options{}, fmt.Errorf("--namespace and --all-namespaces exclude each other")
	}
	return o, nil
}

// kubeconfigClient loads the kubeconfig as kubectl does: --kubeconfig, else the files
// $KUBECONFIG lists, else ~/.kube/config, with --context in place of the current context.
func kubeconfigClient(o options) (clients, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = o.kubeconfig
	config := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules,
		&clientcmd.ConfigOverrides{CurrentContext: o.context})
	rest, err := config.ClientConfig()
	if clientcmd.IsEmptyConfig(err) {
		return clients{}, fmt.Errorf("no kubeconfig found: set --kubeconfig or KUBECONFIG, or write ~/.kube/config")
	}
	if err != nil {
		return clients{}, fmt.Errorf("kubeconfig: %w", err)
	}
	var c clients
	if c.namespace, _, err = config.Namespace(); err != nil {
		return clients{}, fmt.Errorf("kubeconfig: %w", err)
	}
	if c.kube, err = kubernetes.NewForConfig(rest); err != nil {
		return clients{}, fmt.Errorf("client for %s: %w", rest.Host, err)
	}
	if c.volcano, err = versioned.NewForConfig(rest); err != nil {
		return clients{}, fmt.Errorf("Volcano client for %s: %w", rest.Host, err)
	}
	return c, nil
}

func warn(w io.Writer, warnings []string) {
	for _, line := range warnings {
		fmt.Fprintln(w, "warning:", line)
	}
}

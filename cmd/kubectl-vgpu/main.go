// Command kubectl-vgpu is a kubectl plugin that shows how the cluster's GPUs are shared:
// "kubectl vgpu nodes" lists every GPU with what the pods on it book, and "kubectl vgpu pods"
// lists the vGPUs each pod holds or asks for. It reads only what the API server holds (node
// register annotations, pod assignments and requests), through the user's kubeconfig, so it
// shows what the scheduler decides from, not what NVML measures.
package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/spf13/pflag"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

const usage = `Usage:
  kubectl vgpu nodes [-o wide|json|yaml]
  kubectl vgpu pods [-n NAMESPACE | -A] [-o wide|json|yaml]

Flags:
`

// The subcommands.
const (
	commandNodes = "nodes"
	commandPods  = "pods"
)

// options are the parsed command line.
type options struct {
	command       string
	kubeconfig    string
	context       string
	namespace     string
	allNamespaces bool
	output        string
}

// clientFor builds the clientset and the namespace the kubeconfig's context names; tests
// replace it with a fake clientset.
type clientFor func(o options) (kubernetes.Interface, string, error)

func main() {
	if err := run(context.Background(), os.Args[1:], os.Stdout, os.Stderr, kubeconfigClient); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}

// run parses args and runs the subcommand they name, writing the result to stdout and
// warnings about objects it skips to stderr.
func run(ctx context.Context, args []string, stdout, stderr io.Writer, newClient clientFor) error {
	o, err := parse(args, stderr)
	if err != nil || o.command == "" {
		return err
	}
	client, namespace, err := newClient(o)
	if err != nil {
		return err
	}
	if o.namespace == "" {
		o.namespace = namespace
	}
	if o.command == commandNodes {
		gpus, warnings, err := listGPUs(ctx, client)
		if err != nil {
			return err
		}
		warn(stderr, warnings)
		return printGPUs(stdout, o.output, gpus)
	}
	if o.allNamespaces {
		o.namespace = ""
	}
	vgpus, warnings, err := listPodVGPUs(ctx, client, o.namespace)
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
	fs.StringVarP(&o.namespace, "namespace", "n", "", "pods: the namespace to list (default the context's)")
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
	switch fs.NArg() {
	case 0:
		fs.Usage()
		return options{}, fmt.Errorf("name a command: nodes or pods")
	case 1:
	default:
		return options{}, fmt.Errorf("unexpected arguments %q after %s", fs.Args()[1:], fs.Arg(0))
	}
	o.command = fs.Arg(0)
	if o.command != commandNodes && o.command != commandPods {
		return options{}, fmt.Errorf("unknown command %q: want nodes or pods", o.command)
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
func kubeconfigClient(o options) (kubernetes.Interface, string, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = o.kubeconfig
	config := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules,
		&clientcmd.ConfigOverrides{CurrentContext: o.context})
	rest, err := config.ClientConfig()
	if clientcmd.IsEmptyConfig(err) {
		return nil, "", fmt.Errorf("no kubeconfig found: set --kubeconfig or KUBECONFIG, or write ~/.kube/config")
	}
	if err != nil {
		return nil, "", fmt.Errorf("kubeconfig: %w", err)
	}
	namespace, _, err := config.Namespace()
	if err != nil {
		return nil, "", fmt.Errorf("kubeconfig: %w", err)
	}
	client, err := kubernetes.NewForConfig(rest)
	if err != nil {
		return nil, "", fmt.Errorf("client for %s: %w", rest.Host, err)
	}
	return client, namespace, nil
}

func warn(w io.Writer, warnings []string) {
	for _, line := range warnings {
		fmt.Fprintln(w, "warning:", line)
	}
}

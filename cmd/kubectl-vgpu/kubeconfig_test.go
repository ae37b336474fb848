package main

import (
	"os"
	"path/filepath"
	"testing"

	"k8s.io/client-go/kubernetes"
)

// A kubeconfig with two contexts, each with its own API server and namespace.
const twoContexts = `apiVersion: v1
kind: Config
current-context: ctx-a
clusters:
- name: a
  cluster: {server: "https://a.example:6443"}
- name: b
  cluster: {server: "https://b.example:6443"}
users:
- name: u
  user: {token: t}
contexts:
- name: ctx-a
  context: {cluster: a, user: u, namespace: team-a}
- name: ctx-b
  context: {cluster: b, user: u, namespace: team-b}
`

// The client goes where kubectl would: --kubeconfig else $KUBECONFIG, --context else the
// current context, whose namespace is the default for pods.
func TestKubeconfigClient(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config")
	if err := os.WriteFile(path, []byte(twoContexts), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name                string
		env                 string
		o                   options
		wantHost, wantSpace string
	}{
		{name: "--kubeconfig", o: options{kubeconfig: path}, wantHost: "a.example:6443", wantSpace: "team-a"},
		{name: "KUBECONFIG", env: path, wantHost: "a.example:6443", wantSpace: "team-a"},
		{name: "--context", env: path, o: options{context: "ctx-b"}, wantHost: "b.example:6443", wantSpace: "team-b"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("KUBECONFIG", tc.env)
			t.Setenv("HOME", t.TempDir()) // no ~/.kube/config to fall back on
			c, err := kubeconfigClient(tc.o)
			if err != nil {
				t.Fatal(err)
			}
			host := c.kube.(*kubernetes.Clientset).CoreV1().RESTClient().Get().URL().Host
			if host != tc.wantHost || c.namespace != tc.wantSpace {
				t.Errorf("server %s namespace %s, want %s and %s", host, c.namespace, tc.wantHost, tc.wantSpace)
			}
		})
	}
	t.Run("none", func(t *testing.T) {
		t.Setenv("KUBECONFIG", "")
		t.Setenv("HOME", t.TempDir())
		t.Setenv("KUBERNETES_SERVICE_HOST", "")
		if _, err := kubeconfigClient(options{}); err == nil || err.Error() != "no kubeconfig found: set --kubeconfig or KUBECONFIG, or write ~/.kube/config" {
			t.Errorf("err = %v", err)
		}
	})
}

//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/yaml"
)

// The suites run vc-scheduler and vgpu-device-plugin as the chart's ServiceAccounts, bound by
// the chart's RBAC, never as the cluster's admin: a rule the chart lacks fails the suite that
// needs it. The RBAC is rendered from the chart (release identityRelease, in chartNamespace)
// once per run, and each program gets a kubeconfig with a token of its account.
const identityRelease = "e2e-identity"

// Programs, by the name the chart's helpers give their accounts (<release>-<program>).
const (
	schedulerAccount    = "scheduler"
	devicePluginAccount = "device-plugin"
)

var identities struct {
	once        sync.Once
	err         error
	kubeconfigs map[string]string
}

// programKubeconfig is the kubeconfig of the chart's ServiceAccount for program.
func programKubeconfig(t testing.TB, program string) string {
	t.Helper()
	identities.once.Do(func() { identities.kubeconfigs, identities.err = makeIdentities(client(t)) })
	if identities.err != nil {
		t.Fatalf("the chart's identities: %v", identities.err)
	}
	return identities.kubeconfigs[program]
}

// rbacKinds are the chart objects that make an identity; the rest (workloads, ConfigMaps) the
// suites replace with their own processes and objects.
var rbacKinds = map[string]bool{"ServiceAccount": true, "ClusterRole": true, "ClusterRoleBinding": true, "Role": true, "RoleBinding": true}

func makeIdentities(cs kubernetes.Interface) (map[string]string, error) {
	ctx := context.Background()
	render := exec.Command(helmPath(), "template", identityRelease, filepath.Join(repoRoot(), "charts", "volcano-vgpu"),
		"--namespace", chartNamespace, "-f", filepath.Join(repoRoot(), "hack", "testbed", "chart-values.yaml"))
	var stderr bytes.Buffer
	render.Stderr = &stderr
	manifests, err := render.Output()
	if err != nil {
		return nil, fmt.Errorf("helm template: %v: %s", err, stderr.String())
	}
	var keep []string
	for _, doc := range strings.Split(string(manifests), "\n---") {
		var head struct {
			Kind string `json:"kind"`
		}
		if err := yaml.Unmarshal([]byte(doc), &head); err != nil {
			return nil, fmt.Errorf("chart manifest: %w", err)
		}
		if rbacKinds[head.Kind] {
			keep = append(keep, doc)
		}
	}
	_, err = cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: chartNamespace}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, err
	}
	apply := exec.Command(filepath.Join(repoRoot(), ".cache", "bin", "kubectl"), "--kubeconfig", kubeconfigPath(),
		"apply", "--server-side", "--force-conflicts", "-f", "-")
	apply.Stdin = strings.NewReader(strings.Join(keep, "\n---"))
	if out, err := apply.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("kubectl apply the chart's RBAC: %v: %s", err, out)
	}

	admin, err := clientcmd.LoadFromFile(kubeconfigPath())
	if err != nil {
		return nil, err
	}
	cluster := admin.Clusters[admin.Contexts[admin.CurrentContext].Cluster]
	dir := filepath.Join(repoRoot(), ".cache", "testbed", "identities")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	hours := int64(4 * 3600)
	out := map[string]string{}
	for _, program := range []string{schedulerAccount, devicePluginAccount} {
		account := identityRelease + "-" + program
		token, err := cs.CoreV1().ServiceAccounts(chartNamespace).CreateToken(ctx, account,
			&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &hours}}, metav1.CreateOptions{})
		if err != nil {
			return nil, fmt.Errorf("token of ServiceAccount %s/%s: %w", chartNamespace, account, err)
		}
		cfg := clientcmdapi.NewConfig()
		cfg.Clusters["testbed"] = cluster
		cfg.AuthInfos[account] = &clientcmdapi.AuthInfo{Token: token.Status.Token}
		cfg.Contexts["testbed"] = &clientcmdapi.Context{Cluster: "testbed", AuthInfo: account}
		cfg.CurrentContext = "testbed"
		path := filepath.Join(dir, program+".kubeconfig")
		if err := clientcmd.WriteToFile(*cfg, path); err != nil {
			return nil, err
		}
		out[program] = path
	}
	return out, nil
}

// grantConfigMapRead lets program's account read one more ConfigMap, as an operator who points
// deviceshare.KnownGeometriesCM* at a ConfigMap of their own must (the chart grants only
// volcano-vgpu-device-config in kube-system and its namespace).
func grantConfigMapRead(t *testing.T, cs kubernetes.Interface, program, ns, name string) {
	t.Helper()
	ctx := context.Background()
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "read-" + name},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{name},
			Verbs: []string{"get", "list", "watch"}}}}
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "read-" + name},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: chartNamespace, Name: identityRelease + "-" + program}}}
	if _, err := cs.RbacV1().Roles(ns).Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.RbacV1().RoleBindings(ns).Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

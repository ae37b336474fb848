package apiclient

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/apideadline"
)

type recorder struct{ req *http.Request }

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	r.req = req
	return &http.Response{StatusCode: http.StatusOK, Body: io.NopCloser(strings.NewReader("{}")), Request: req}, nil
}

const kubeconfig = `apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: "https://127.0.0.1:6443"}
users:
- name: u
  user: {token: t}
contexts:
- name: x
  context: {cluster: c, user: u}
current-context: x
`

// Every request of the plugin's client but a watch carries a deadline.
func TestRequestsHaveADeadline(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(path, []byte(kubeconfig), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config(path)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.WrapTransport == nil {
		t.Fatal("no transport wrapper: requests have no deadline")
	}
	next := &recorder{}
	req, _ := http.NewRequest(http.MethodGet, "https://127.0.0.1:6443/api/v1/namespaces/kube-system/configmaps/x", nil)
	start := time.Now()
	resp, err := cfg.WrapTransport(next).RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	deadline, ok := next.req.Context().Deadline()
	if !ok || deadline.Before(start.Add(apideadline.Default)) || deadline.After(time.Now().Add(apideadline.Default)) {
		t.Errorf("deadline %v (set %t), want %s after the request", deadline, ok, apideadline.Default)
	}
}

package apideadline

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// recorder is the next round tripper: it keeps the request it was given and answers 200.
type recorder struct{ req *http.Request }

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	r.req = req
	return &http.Response{StatusCode: http.StatusOK, Body: io.NopCloser(strings.NewReader("{}")), Request: req}, nil
}

func wrapped(timeout time.Duration) (http.RoundTripper, *recorder) {
	cfg := &rest.Config{}
	Set(cfg, timeout)
	next := &recorder{}
	return cfg.WrapTransport(next), next
}

func TestRequestsGetADeadlineAndWatchesDoNot(t *testing.T) {
	tests := []struct {
		url          string
		wantDeadline bool
	}{
		{"https://api/api/v1/namespaces/kube-system/configmaps/x", true},
		{"https://api/api/v1/pods?fieldSelector=spec.nodeName%3Dn", true},
		{"https://api/api/v1/nodes?watch=true&resourceVersion=5", false},
		{"https://api/api/v1/nodes?watch=1", false},
		{"https://api/api/v1/nodes?watch=false", true},
	}
	for _, tt := range tests {
		t.Run(tt.url, func(t *testing.T) {
			rt, next := wrapped(time.Minute)
			req, err := http.NewRequest(http.MethodGet, tt.url, nil)
			if err != nil {
				t.Fatal(err)
			}
			before := time.Now()
			resp, err := rt.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			deadline, has := next.req.Context().Deadline()
			if has != tt.wantDeadline {
				t.Fatalf("deadline %v (set %t), want set %t", deadline, has, tt.wantDeadline)
			}
			if has && (deadline.Before(before.Add(time.Minute)) || deadline.After(time.Now().Add(time.Minute))) {
				t.Errorf("deadline %v, want one minute after the request", deadline)
			}
			if err := next.req.Context().Err(); err != nil {
				t.Fatalf("context ended before the body was read: %v", err)
			}
			_ = resp.Body.Close()
			if tt.wantDeadline && next.req.Context().Err() == nil {
				t.Error("context still live after the body was closed: the timer leaks")
			}
		})
	}
}

func TestEarlierCallerDeadlineWins(t *testing.T) {
	rt, next := wrapped(time.Hour)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	want, _ := ctx.Deadline()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "https://api/api/v1/nodes/n", nil)
	resp, err := rt.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	if got, _ := next.req.Context().Deadline(); !got.Equal(want) {
		t.Errorf("deadline %v, want the caller's %v", got, want)
	}
}

// A silent API server: the client gives up after the deadline instead of hanging.
func TestSilentAPIServerFailsTheRequest(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer srv.Close()
	defer close(release)
	cfg := &rest.Config{Host: srv.URL}
	Set(cfg, 50*time.Millisecond)
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	_, err = client.CoreV1().ConfigMaps("kube-system").Get(context.Background(), "x", metav1.GetOptions{})
	if err == nil || !errors.Is(err, context.DeadlineExceeded) && !strings.Contains(err.Error(), "deadline exceeded") {
		t.Errorf("error %v, want the request's deadline", err)
	}
}

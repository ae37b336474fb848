//go:build e2e

package e2e

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// delayedPodWatch serves the API server, as the identity of kubeconfig, through a proxy
// that hands every pod watch event over delay late, in order, and everything else at once;
// it returns a kubeconfig for the proxy. A replica behind it is a standby whose watch lags
// behind the API server (a loaded node, a slow network), while its lists, its Lease and its
// Bindings are as quick as the leader's: what a new leader's catch-up has to allow for.
func delayedPodWatch(t *testing.T, kubeconfig string, delay time.Duration) string {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	transport, err := rest.TransportFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	target, err := url.Parse(cfg.Host)
	if err != nil {
		t.Fatal(err)
	}
	proxy := &httputil.ReverseProxy{
		Rewrite:       func(r *httputil.ProxyRequest) { r.SetURL(target) },
		Transport:     transport,
		FlushInterval: -1,
		ModifyResponse: func(resp *http.Response) error {
			q := resp.Request.URL.Query()
			if (q.Get("watch") == "true" || q.Get("watch") == "1") && strings.HasSuffix(resp.Request.URL.Path, "/pods") {
				resp.Body = lateBody(resp.Body, delay)
			}
			return nil
		},
	}
	server := httptest.NewTLSServer(proxy)
	t.Cleanup(server.Close)
	out := clientcmdapi.NewConfig()
	out.Clusters["proxy"] = &clientcmdapi.Cluster{Server: server.URL, InsecureSkipTLSVerify: true}
	out.AuthInfos["proxy"] = &clientcmdapi.AuthInfo{}
	out.Contexts["proxy"] = &clientcmdapi.Context{Cluster: "proxy", AuthInfo: "proxy"}
	out.CurrentContext = "proxy"
	path := filepath.Join(t.TempDir(), "delayed.kubeconfig")
	if err := clientcmd.WriteToFile(*out, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// lateBody passes body's bytes on delay after they arrived, in order.
func lateBody(body io.ReadCloser, delay time.Duration) io.ReadCloser {
	r, w := io.Pipe()
	type chunk struct {
		data []byte
		at   time.Time
	}
	chunks := make(chan chunk, 4096)
	go func() {
		defer close(chunks)
		for {
			buf := make([]byte, 32<<10)
			n, err := body.Read(buf)
			if n > 0 {
				chunks <- chunk{buf[:n], time.Now()}
			}
			if err != nil {
				return
			}
		}
	}()
	go func() {
		var gone error
		for c := range chunks {
			if gone != nil {
				continue // the client left: drain until the API server's side ends
			}
			time.Sleep(time.Until(c.at.Add(delay))) // the lag this proxy exists to add
			if _, gone = w.Write(c.data); gone != nil {
				_ = body.Close()
			}
		}
		_ = body.Close()
		_ = w.Close()
	}()
	return r
}

// Package apideadline bounds every request/response call a client makes to the API server,
// so that an API server that accepts a connection and then says nothing cannot hang the
// programs: a start-up read, a bind or a PATCH fails after Default instead.
//
// rest.Config.Timeout is not used for this. client-go puts it on the http.Client, where it
// also ends every watch after that long: informers would then re-open their watches every
// 30 s, the churn kubernetes/kubernetes#101022 discusses. Watches need no deadline of their
// own; client-go's HTTP/2 health check (a ping after 30 s of silence) closes a dead
// connection under them, and the reflector re-watches.
package apideadline

import (
	"context"
	"io"
	"net/http"
	"time"

	"k8s.io/client-go/rest"
)

// Default is the deadline of one request. kube-apiserver answers a request it cannot serve
// after its own --request-timeout (1 min by default); half of that leaves time to retry
// within the minute.
const Default = 30 * time.Second

// Set makes every request of clients built from cfg that is not a watch end after timeout
// (or at its context's deadline when that comes first). It keeps any wrapper cfg already has.
func Set(cfg *rest.Config, timeout time.Duration) {
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return &roundTripper{next: rt, timeout: timeout}
	})
}

type roundTripper struct {
	next    http.RoundTripper
	timeout time.Duration
}

func (t *roundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	if t.timeout <= 0 || isWatch(req) {
		return t.next.RoundTrip(req)
	}
	ctx, cancel := context.WithTimeout(req.Context(), t.timeout)
	resp, err := t.next.RoundTrip(req.WithContext(ctx))
	if err != nil {
		cancel()
		return nil, err
	}
	// The deadline covers reading the body too: cancelling when the headers arrive would
	// cut the body short.
	resp.Body = &cancelOnClose{ReadCloser: resp.Body, cancel: cancel}
	return resp, nil
}

// WrappedRoundTripper lets client-go's transport helpers see through the wrapper.
func (t *roundTripper) WrappedRoundTripper() http.RoundTripper { return t.next }

// isWatch reports a watch request (client-go sends ?watch=true): long-running by design.
func isWatch(req *http.Request) bool {
	switch req.URL.Query().Get("watch") {
	case "true", "1":
		return true
	}
	return false
}

type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (c *cancelOnClose) Close() error {
	err := c.ReadCloser.Close()
	c.cancel()
	return err
}

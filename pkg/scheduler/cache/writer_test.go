package cache

import (
	"context"
	"errors"
	"reflect"
	"testing"
)

func TestStatusWriter(t *testing.T) {
	ctx := context.Background()
	w := newStatusWriter()
	var ran []string
	write := func(name string, err error) func(context.Context) error {
		return func(context.Context) error {
			ran = append(ran, name)
			return err
		}
	}
	a, b := writeKey{resource: "pods", namespace: "ns", name: "a"}, writeKey{resource: "pods", namespace: "ns", name: "b"}
	w.enqueue(a, write("a1", nil))
	w.enqueue(b, write("b1", errors.New("failed")))
	w.enqueue(a, write("a2", nil))
	for w.queue.Len() > 0 {
		w.processNext(ctx)
	}
	if want := []string{"a2", "b1"}; !reflect.DeepEqual(ran, want) {
		t.Errorf("ran %q, want %q: the latest write per object, once", ran, want)
	}
	w.shutDownWithDrain()
	if w.processNext(ctx) {
		t.Errorf("processNext after shutdown reported more work")
	}
}

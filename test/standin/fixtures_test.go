package main

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kubefake "k8s.io/client-go/kubernetes/fake"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	scheduling "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
	vcfake "volcano.sh/apis/pkg/client/clientset/versioned/fake"
	batchlisters "volcano.sh/apis/pkg/client/listers/batch/v1alpha1"
	schedulinglisters "volcano.sh/apis/pkg/client/listers/scheduling/v1beta1"
)

// cluster is what a controller under test sees: fake clientsets to write to, and listers
// over informer caches that the test fills by hand, so that each sync reads exactly the
// state the test sets up (a real cache lags behind the writes).
type cluster struct {
	kube   *kubefake.Clientset
	vc     *vcfake.Clientset
	stores map[reflect.Type]cache.Indexer
}

// newCluster puts kubeObjs and vcObjs both behind the clientsets and in the caches.
func newCluster(t *testing.T, kubeObjs, vcObjs []runtime.Object) *cluster {
	t.Helper()
	c := &cluster{
		kube:   kubefake.NewClientset(kubeObjs...),
		vc:     vcfake.NewSimpleClientset(vcObjs...), // NewClientset lacks the schemas of volcano types
		stores: map[reflect.Type]cache.Indexer{},
	}
	for _, obj := range append(kubeObjs, vcObjs...) {
		c.cache(t, obj)
	}
	return c
}

// cache puts obj in the informer cache of its kind (replacing any older version), as a
// watch event would.
func (c *cluster) cache(t *testing.T, obj runtime.Object) {
	t.Helper()
	if err := c.store(obj).Update(obj); err != nil {
		t.Fatal(err)
	}
}

// store is the cache of obj's kind, one per Go type as in an informer factory.
func (c *cluster) store(obj any) cache.Indexer {
	kind := reflect.TypeOf(obj)
	s, ok := c.stores[kind]
	if !ok {
		s = cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
		c.stores[kind] = s
	}
	return s
}

func (c *cluster) pods() corelisters.PodLister {
	return corelisters.NewPodLister(c.store(&corev1.Pod{}))
}

func (c *cluster) podGroups() schedulinglisters.PodGroupLister {
	return schedulinglisters.NewPodGroupLister(c.store(&scheduling.PodGroup{}))
}

func (c *cluster) jobs() batchlisters.JobLister {
	return batchlisters.NewJobLister(c.store(&batch.Job{}))
}

func (c *cluster) queues() schedulinglisters.QueueLister {
	return schedulinglisters.NewQueueLister(c.store(&scheduling.Queue{}))
}

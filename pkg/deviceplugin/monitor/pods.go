package monitor

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// PodIndex knows the pods on this node only (a field-selected watch, never a cluster-wide
// one), so metrics name a container's pod and disappear with it. Lookup is its PodLookup.
type PodIndex struct {
	factory  informers.SharedInformerFactory
	informer cache.SharedIndexInformer
	indexer  cache.Indexer
}

const byUID = "uid"

// NewPodIndex is the index of the pods on node; it reads nothing until Run.
func NewPodIndex(client kubernetes.Interface, node string) *PodIndex {
	f := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.FieldSelector = fields.OneTermEqualSelector("spec.nodeName", node).String()
	}))
	inf := f.Core().V1().Pods().Informer()
	_ = inf.AddIndexers(cache.Indexers{byUID: func(obj any) ([]string, error) {
		if p, ok := obj.(*corev1.Pod); ok {
			return []string{string(p.UID)}, nil
		}
		return nil, nil
	}})
	return &PodIndex{factory: f, informer: inf, indexer: inf.GetIndexer()}
}

// Run starts the watch, which ends with ctx.
func (p *PodIndex) Run(ctx context.Context) {
	p.factory.Start(ctx.Done())
}

// HasSynced says whether the watch has listed the node's pods once; until
// then a pod missing from the index may still exist.
func (p *PodIndex) HasSynced() bool {
	return p.informer.HasSynced()
}

// Lookup is a PodLookup over the pods the watch has seen.
func (p *PodIndex) Lookup(uid string) (namespace, name string, ok bool) {
	pod := p.pod(uid)
	if pod == nil {
		return "", "", false
	}
	return pod.Namespace, pod.Name, true
}

// Active says whether the pod is on the node and may still run containers:
// a pod that Succeeded or Failed never starts one again.
func (p *PodIndex) Active(uid string) bool {
	pod := p.pod(uid)
	return pod != nil && pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed
}

func (p *PodIndex) pod(uid string) *corev1.Pod {
	objs, err := p.indexer.ByIndex(byUID, uid)
	if err != nil || len(objs) == 0 {
		return nil
	}
	return objs[0].(*corev1.Pod)
}

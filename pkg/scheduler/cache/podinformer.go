package cache

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	toolscache "k8s.io/client-go/tools/cache"
)

// usePodInformer makes the factory's pod informer (the cache's, and every component's that
// asks the factory for pods) one whose lists are consistent: the pods as the API server holds
// them when the list is served, never a watch cache's possibly older copy. client-go first
// asks for a consistent watch-list; where the API server refuses it, the reflector falls back
// to a list at resourceVersion "0" ("any version"), which this turns into "" (the latest).
// A new leader relies on it (leaseAtStart, in cmd/vc-scheduler): a cache whose informers
// started after the previous leader handed the Lease over holds every bind that leader made.
func usePodInformer(factory informers.SharedInformerFactory) {
	factory.InformerFor(&corev1.Pod{}, func(kube kubernetes.Interface, resync time.Duration) toolscache.SharedIndexInformer {
		return coreinformers.NewFilteredPodInformer(kube, metav1.NamespaceAll, resync,
			toolscache.Indexers{toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc}, consistentList)
	})
}

// consistentList asks a list for the latest version rather than any.
func consistentList(o *metav1.ListOptions) {
	if !o.Watch && o.ResourceVersion == "0" {
		o.ResourceVersion = ""
	}
}

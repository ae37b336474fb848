package volumes

import (
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/nodevolumelimits"
)

// handle gives the plugins what they ask of kube-scheduler's framework when they are built:
// the informers (PVs, PVCs, StorageClasses, CSINodes, CSIDrivers, CSIStorageCapacities,
// VolumeAttachments, pods and nodes), the client PreBind writes with, the CSINodes, and, for
// VolumeRestrictions, the claims the attempt's pods use. Nothing else is called; the embedded
// interface is left nil.
type handle struct {
	fwk.Handle
	client  kubernetes.Interface
	factory informers.SharedInformerFactory
	csi     fwk.CSIManager
	lister  fwk.SharedLister
}

func newHandle(client kubernetes.Interface, factory informers.SharedInformerFactory) handle {
	return handle{client: client, factory: factory,
		csi: nodevolumelimits.NewCSIManager(factory.Storage().V1().CSINodes().Lister())}
}

func (h handle) ClientSet() kubernetes.Interface                        { return h.client }
func (h handle) SharedInformerFactory() informers.SharedInformerFactory { return h.factory }
func (h handle) SharedCSIManager() fwk.CSIManager                       { return h.csi }
func (h handle) SnapshotSharedLister() fwk.SharedLister                 { return h.lister }

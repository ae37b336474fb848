package main

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/klog/v2"
)

// leaseAtStart is the leader Lease as a replica read it before its informers listed anything.
//
// A new leader must not schedule before its cache holds the previous leader's binds
// (cache.CatchUp waits for them, at the cost of listing every bound pod). When the Lease was
// free as this replica started (no Lease yet, or its holder handed it over on exit, which it
// does only once every Binding it sent has been answered: handOver), every bind of the last
// holder was in the API server before the informers' first lists, which are consistent
// (cache.usePodInformer); if no other replica has held the Lease since, the cache already
// holds every bind a leader made, and the catch-up has nothing to wait for. This is the
// restart of a lone replica and the rolling update of a Deployment.
type leaseAtStart struct {
	// reader reads the Lease for the replica (the elector's lock is its own).
	reader resourcelock.Interface
	// free: no replica held the Lease.
	free bool
	// transitions is its count of holder changes; -1 when there was no Lease (the first
	// holder creates it with 0).
	transitions int
}

// readLeaseAtStart reads the Lease for the replica of identity; a Lease it cannot read
// counts as held.
func readLeaseAtStart(ctx context.Context, o *options, kube kubernetes.Interface, identity string) (leaseAtStart, error) {
	reader, err := leaseLockAs(o, kube, identity)
	if err != nil {
		return leaseAtStart{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, handOverDeadline)
	defer cancel()
	record, _, err := reader.Get(ctx)
	switch {
	case apierrors.IsNotFound(err):
		return leaseAtStart{reader: reader, free: true, transitions: -1}, nil
	case err != nil:
		klog.V(2).InfoS("Reading the Lease at start; as a new leader this replica will catch up", "lease", reader.Describe(), "err", err)
		return leaseAtStart{reader: reader}, nil
	}
	return leaseAtStart{reader: reader, free: record.HolderIdentity == "", transitions: record.LeaderTransitions}, nil
}

// handedOver reports, once the replica leads, whether the Lease came to it straight from the
// free state read at start: the replica holds it, and its holder changed exactly once since.
func (l leaseAtStart) handedOver(ctx context.Context) bool {
	if !l.free {
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, handOverDeadline)
	defer cancel()
	record, _, err := l.reader.Get(ctx)
	if err != nil {
		return false
	}
	return record.HolderIdentity == l.reader.Identity() && record.LeaderTransitions == l.transitions+1
}

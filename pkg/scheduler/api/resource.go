// Package api holds the scheduler's in-memory model of the cluster: jobs,
// tasks, nodes, queues and the resource amounts they carry.
package api

import (
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Tolerance is the smallest amount that counts: two amounts closer than this
// are equal, and an amount below it is nothing. In milli-units that is a
// ten-thousandth of a unit, well below any request a pod can make, and it
// absorbs float64 rounding after many Add/Sub cycles. Upstream uses 0.1 too.
const Tolerance = 0.1

// countQuotaPrefix marks ResourceQuota object counts ("count/pods"), which
// are not resources a task consumes.
const countQuotaPrefix = "count/"

// MissingDimension says what a resource name absent from one side of a
// comparison stands for. Which one applies depends on the question asked,
// so every comparison takes it explicitly.
type MissingDimension int

const (
	// MissingAsZero: an absent name means none of it. Use it for amounts
	// that exist, such as a request against a node's idle resources.
	MissingAsZero MissingDimension = iota
	// MissingAsInfinity: an absent name means no limit. Use it for caps
	// such as a queue capability that does not mention a resource.
	MissingAsInfinity
)

// Resource is an amount of every resource kind.
//
// All amounts are float64, as upstream, so that Tolerance-based comparison,
// ratios (Multi, DRF shares) and "unbounded" caps (math.MaxFloat64) need no
// conversion. float64 is exact for integers up to 2^53: 9 PiB of memory in
// bytes, or 9*10^12 units of a scalar in milli-units, far beyond a cluster.
type Resource struct {
	// MilliCPU is CPU in millicores (1 core = 1000).
	MilliCPU float64
	// Memory is memory in bytes.
	Memory float64
	// ScalarResources holds every other resource in milli-units of its
	// quantity (Quantity.MilliValue): "volcano.sh/vgpu-memory: 2000" is
	// 2,000,000 and "pods: 110" is 110,000. An absent name and a present
	// zero differ only under MissingAsInfinity, where a present zero is a
	// cap of nothing and an absent name is no cap. May be nil.
	ScalarResources map[corev1.ResourceName]float64
	// MaxTaskNum is the "pods" count from the list the Resource was built
	// from: on a node's allocatable, how many pods it may hold. Arithmetic
	// leaves it alone; Clone copies it.
	MaxTaskNum int
}

// EmptyResource returns a Resource with nothing in it.
func EmptyResource() *Resource {
	return &Resource{}
}

// NewResource converts a ResourceList (a pod's requests, a node's
// allocatable, a queue's capability) into a Resource: cpu in millicores,
// memory in bytes, everything else in milli-units. Quota-only names are left
// out (see isScalarResourceName), and "pods" also sets MaxTaskNum.
func NewResource(list corev1.ResourceList) *Resource {
	r := &Resource{}
	for name, quantity := range list {
		switch name {
		case corev1.ResourceCPU:
			r.MilliCPU += float64(quantity.MilliValue())
		case corev1.ResourceMemory:
			r.Memory += float64(quantity.Value())
		default:
			if !isScalarResourceName(name) {
				continue
			}
			if name == corev1.ResourcePods {
				r.MaxTaskNum += int(quantity.Value())
			}
			if r.ScalarResources == nil {
				r.ScalarResources = make(map[corev1.ResourceName]float64, len(list))
			}
			r.ScalarResources[name] += float64(quantity.MilliValue())
		}
	}
	return r
}

// isScalarResourceName: the names a task can consume besides cpu and memory, as upstream
// keeps them. PodGroup minResources are quota usage, which also lists "requests.cpu",
// "limits.memory", "requests.volcano.sh/vgpu-memory" and "count/pods": those describe the same
// requests again (or object counts) and are left out, or a queue check would compare them with
// a capability that never names them.
func isScalarResourceName(name corev1.ResourceName) bool {
	n := string(name)
	switch {
	case name == corev1.ResourcePods || name == corev1.ResourceEphemeralStorage:
		return true
	case strings.HasPrefix(n, corev1.ResourceHugePagesPrefix), strings.HasPrefix(n, "attachable-volumes-"):
		return true
	case strings.HasPrefix(n, corev1.DefaultResourceRequestsPrefix), strings.HasPrefix(n, "limits."), strings.HasPrefix(n, countQuotaPrefix):
		return false
	}
	// Extended resources carry a domain ("volcano.sh/vgpu-memory", "nvidia.com/gpu").
	return strings.Contains(n, "/")
}

// Clone returns a deep copy of r.
func (r *Resource) Clone() *Resource {
	clone := *r
	if r.ScalarResources != nil {
		clone.ScalarResources = make(map[corev1.ResourceName]float64, len(r.ScalarResources))
		for name, amount := range r.ScalarResources {
			clone.ScalarResources[name] = amount
		}
	}
	return &clone
}

// identical: r and rr hold exactly the same amounts, no Tolerance, and both or neither have
// scalars (a session's copy that is identical to the cache's can stand for a new copy).
func (r *Resource) identical(rr *Resource) bool {
	return r.MilliCPU == rr.MilliCPU && r.Memory == rr.Memory && r.MaxTaskNum == rr.MaxTaskNum &&
		(r.ScalarResources == nil) == (rr.ScalarResources == nil) && maps.Equal(r.ScalarResources, rr.ScalarResources)
}

// Get returns the amount of one resource in r's units (millicores, bytes,
// milli-units); 0 when r has none of it.
func (r *Resource) Get(name corev1.ResourceName) float64 {
	switch name {
	case corev1.ResourceCPU:
		return r.MilliCPU
	case corev1.ResourceMemory:
		return r.Memory
	default:
		return r.ScalarResources[name]
	}
}

// AddScalar adds milli-units of a scalar resource.
func (r *Resource) AddScalar(name corev1.ResourceName, milli float64) {
	if r.ScalarResources == nil {
		r.ScalarResources = make(map[corev1.ResourceName]float64, 1)
	}
	r.ScalarResources[name] += milli
}

// SetScalar sets a scalar resource to the given milli-units, present even
// when zero.
func (r *Resource) SetScalar(name corev1.ResourceName, milli float64) {
	if r.ScalarResources == nil {
		r.ScalarResources = make(map[corev1.ResourceName]float64, 1)
	}
	r.ScalarResources[name] = milli
}

// Add adds rr to r and returns r. It allocates only when r lacks a scalar
// name rr has.
func (r *Resource) Add(rr *Resource) *Resource {
	r.MilliCPU += rr.MilliCPU
	r.Memory += rr.Memory
	for name, amount := range rr.ScalarResources {
		if r.ScalarResources == nil {
			r.ScalarResources = make(map[corev1.ResourceName]float64, len(rr.ScalarResources))
		}
		r.ScalarResources[name] += amount
	}
	return r
}

// Sub subtracts rr from r and returns r. It does not check that rr fits in
// r (upstream asserts and may panic): a result may go negative, and a
// negative dimension then fails every LessEqual against it, which is where
// the caller notices. A scalar only rr has becomes negative in r.
func (r *Resource) Sub(rr *Resource) *Resource {
	r.MilliCPU -= rr.MilliCPU
	r.Memory -= rr.Memory
	for name, amount := range rr.ScalarResources {
		if r.ScalarResources == nil {
			r.ScalarResources = make(map[corev1.ResourceName]float64, len(rr.ScalarResources))
		}
		r.ScalarResources[name] -= amount
	}
	return r
}

// SubTotal subtracts rr from a running total (a node's Used, a job's Allocated) and drops
// the scalars that fall to nothing. In a total an absent name means none, so this changes no
// comparison; it makes add-then-subtract leave the total exactly as it was, which is what
// lets a discarded statement restore the session byte for byte. Never use it on a cap,
// where a present zero means "none allowed".
func (r *Resource) SubTotal(rr *Resource) *Resource {
	r.Sub(rr)
	for name := range rr.ScalarResources {
		if v := r.ScalarResources[name]; v < Tolerance && v > -Tolerance {
			delete(r.ScalarResources, name)
		}
	}
	if len(r.ScalarResources) == 0 {
		r.ScalarResources = nil
	}
	return r
}

// Multi scales every amount in r by ratio and returns r.
func (r *Resource) Multi(ratio float64) *Resource {
	r.MilliCPU *= ratio
	r.Memory *= ratio
	for name, amount := range r.ScalarResources {
		r.ScalarResources[name] = amount * ratio
	}
	return r
}

// MinDimension lowers each of r's dimensions to rr's where rr's is smaller,
// and returns r. A scalar r has and rr lacks is kept under MissingAsInfinity
// and set to 0 under MissingAsZero; a scalar only rr has is not added (r has
// none of it, and none is already the minimum). This is how a queue's real
// capability is clamped by its spec.capability.
func (r *Resource) MinDimension(rr *Resource, missing MissingDimension) *Resource {
	r.MilliCPU = math.Min(r.MilliCPU, rr.MilliCPU)
	r.Memory = math.Min(r.Memory, rr.Memory)
	for name, amount := range r.ScalarResources {
		limit, found := rr.ScalarResources[name]
		switch {
		case found:
			r.ScalarResources[name] = math.Min(amount, limit)
		case missing == MissingAsZero:
			r.ScalarResources[name] = 0
		}
	}
	return r
}

// IsEmpty reports whether r holds nothing: every amount below Tolerance.
// The "pods" scalar is not looked at, because every task's request carries
// pods: 1 and a best-effort pod must still count as empty.
func (r *Resource) IsEmpty() bool {
	if r.MilliCPU >= Tolerance || r.Memory >= Tolerance {
		return false
	}
	for name, amount := range r.ScalarResources {
		if name != corev1.ResourcePods && amount >= Tolerance {
			return false
		}
	}
	return true
}

// fits is "l <= r" with Tolerance: l may exceed r by less than Tolerance.
// Written so that +Inf fits in +Inf.
func fits(l, r float64) bool {
	return l <= r || l-r < Tolerance
}

// LessEqual reports whether r fits in rr in every dimension. cpu and memory
// are always compared. A scalar name present on one side only stands for 0
// or for unbounded on the other side, as missing says:
//
//   - MissingAsZero: a name only r has must be (nearly) zero in r; a name
//     only rr has fits unless rr holds a negative amount of it.
//   - MissingAsInfinity: a name only r has fits (rr is unbounded there); a
//     name only rr has does not (r is unbounded there).
//
// It does not allocate.
func (r *Resource) LessEqual(rr *Resource, missing MissingDimension) bool {
	if !fits(r.MilliCPU, rr.MilliCPU) || !fits(r.Memory, rr.Memory) {
		return false
	}
	shared := 0 // names of r also in rr; tells whether rr has names r lacks
	for name, amount := range r.ScalarResources {
		limit, found := rr.ScalarResources[name]
		if found {
			shared++
		} else if missing == MissingAsInfinity {
			continue
		}
		if !fits(amount, limit) {
			return false
		}
	}
	if shared == len(rr.ScalarResources) {
		return true
	}
	if missing == MissingAsInfinity {
		return false
	}
	for name, limit := range rr.ScalarResources {
		if fits(0, limit) {
			continue
		}
		if _, found := r.ScalarResources[name]; !found {
			return false
		}
	}
	return true
}

// Exceeding lists the dimensions in which r does not fit in rr under the
// rules of LessEqual: cpu, then memory, then scalar names sorted. It returns
// nil exactly when r.LessEqual(rr, missing), allocating only otherwise.
func (r *Resource) Exceeding(rr *Resource, missing MissingDimension) []corev1.ResourceName {
	var names []corev1.ResourceName
	if !fits(r.MilliCPU, rr.MilliCPU) {
		names = append(names, corev1.ResourceCPU)
	}
	if !fits(r.Memory, rr.Memory) {
		names = append(names, corev1.ResourceMemory)
	}
	scalarsFrom := len(names)
	for name, amount := range r.ScalarResources {
		limit, found := rr.ScalarResources[name]
		if !found && missing == MissingAsInfinity {
			continue
		}
		if !fits(amount, limit) {
			names = append(names, name)
		}
	}
	for name, limit := range rr.ScalarResources {
		if _, found := r.ScalarResources[name]; found {
			continue
		}
		if missing == MissingAsInfinity || !fits(0, limit) {
			names = append(names, name)
		}
	}
	slices.Sort(names[scalarsFrom:])
	return names
}

// ExceedingWithDimension lists the dimensions req asks for (amount > 0,
// leaving out "pods") in which r does not fit in rr: cpu, then memory, then
// scalar names sorted; nil when r fits, and always for a nil req. A dimension
// missing from r or rr counts as 0, so a requested resource rr does not
// mention never fits. This is the queue check of enqueue and allocate: r is
// what the queue would hold with the job, rr its capability or deserved
// share, req the job's request. Enqueue turns the names into
// "queue resource quota insufficient: insufficient <name>, ...".
func (r *Resource) ExceedingWithDimension(rr, req *Resource) []corev1.ResourceName {
	if req == nil {
		return nil
	}
	var names []corev1.ResourceName
	if req.MilliCPU > 0 && !fits(r.MilliCPU, rr.MilliCPU) {
		names = append(names, corev1.ResourceCPU)
	}
	if req.Memory > 0 && !fits(r.Memory, rr.Memory) {
		names = append(names, corev1.ResourceMemory)
	}
	scalarsFrom := len(names)
	for name, amount := range req.ScalarResources {
		if amount <= 0 || name == corev1.ResourcePods {
			continue
		}
		if !fits(r.ScalarResources[name], rr.ScalarResources[name]) {
			names = append(names, name)
		}
	}
	slices.Sort(names[scalarsFrom:])
	return names
}

// ToResourceList converts r back to API quantities (for example a queue's
// status.allocated): cpu and memory always, every scalar present in r.
// Amounts are truncated to whole millis (whole bytes for memory).
func (r *Resource) ToResourceList() corev1.ResourceList {
	list := make(corev1.ResourceList, 2+len(r.ScalarResources))
	list[corev1.ResourceCPU] = *resource.NewMilliQuantity(int64(r.MilliCPU), resource.DecimalSI)
	list[corev1.ResourceMemory] = *resource.NewQuantity(int64(r.Memory), resource.BinarySI)
	for name, amount := range r.ScalarResources {
		list[name] = *resource.NewMilliQuantity(int64(amount), resource.DecimalSI)
	}
	return list
}

// String prints r for logs and messages, scalars sorted by name so that two
// equal resources print alike:
// "cpu 1000.00, memory 1073741824.00, pods 1000.00, volcano.sh/vgpu-memory 2000000.00".
func (r *Resource) String() string {
	names := make([]corev1.ResourceName, 0, len(r.ScalarResources))
	for name := range r.ScalarResources {
		names = append(names, name)
	}
	slices.Sort(names)

	buf := make([]byte, 0, 32+32*len(names))
	buf = append(buf, "cpu "...)
	buf = strconv.AppendFloat(buf, r.MilliCPU, 'f', 2, 64)
	buf = append(buf, ", memory "...)
	buf = strconv.AppendFloat(buf, r.Memory, 'f', 2, 64)
	for _, name := range names {
		buf = append(buf, ", "...)
		buf = append(buf, name...)
		buf = append(buf, ' ')
		buf = strconv.AppendFloat(buf, r.ScalarResources[name], 'f', 2, 64)
	}
	return string(buf)
}

package quota

import (
	"math"

	corev1 "k8s.io/api/core/v1"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
)

// The operations below are missing from api.Resource; they live here until api has them
// (see the proposal in this package's doc).

// ExceededPart returns, for each dimension of l, how much l exceeds r, never below zero. A
// dimension r lacks counts as zero in r. l and r are not changed.
func ExceededPart(l, r *api.Resource) *api.Resource {
	return addExceededPart(api.EmptyResource(), l, r)
}

// addExceededPart adds ExceededPart(l, r) to dst, every scalar of l present in dst after,
// and returns dst.
func addExceededPart(dst, l, r *api.Resource) *api.Resource {
	dst.MilliCPU += math.Max(l.MilliCPU-r.MilliCPU, 0)
	dst.Memory += math.Max(l.Memory-r.Memory, 0)
	for name, amount := range l.ScalarResources {
		dst.AddScalar(name, math.Max(amount-r.ScalarResources[name], 0))
	}
	return dst
}

// ExceedsIn reports whether l exceeds r in some dimension r names, cpu and memory always. A
// dimension r does not name is not compared: capacity's spec.deserved names what it shares
// out, and a queue's pod count, say, is never above a share nobody declared. l and r are not
// changed.
func ExceedsIn(l, r *api.Resource) bool {
	named := &api.Resource{MilliCPU: l.MilliCPU, Memory: l.Memory}
	for name := range r.ScalarResources {
		named.SetScalar(name, l.ScalarResources[name])
	}
	return !named.LessEqual(r, api.MissingAsZero)
}

// Max returns the larger of l and r in each dimension either has. l and r are not changed.
func Max(l, r *api.Resource) *api.Resource {
	out := l.Clone()
	out.MilliCPU = math.Max(l.MilliCPU, r.MilliCPU)
	out.Memory = math.Max(l.Memory, r.Memory)
	for name, amount := range r.ScalarResources {
		if cur, found := out.ScalarResources[name]; !found || amount > cur {
			out.SetScalar(name, amount)
		}
	}
	return out
}

// Equal reports whether a and b are equal within api.Tolerance in every dimension either has
// (an absent dimension counts as zero).
func Equal(a, b *api.Resource) bool {
	return a.LessEqual(b, api.MissingAsZero) && b.LessEqual(a, api.MissingAsZero)
}

// MinNamed lowers each dimension of r to limit's where limit names it with a positive
// amount, and returns r: a dimension limit does not declare limits nothing.
func MinNamed(r, limit *api.Resource) *api.Resource {
	if limit.MilliCPU >= api.Tolerance {
		r.MilliCPU = math.Min(r.MilliCPU, limit.MilliCPU)
	}
	if limit.Memory >= api.Tolerance {
		r.Memory = math.Min(r.Memory, limit.Memory)
	}
	for name, amount := range r.ScalarResources {
		if l := limit.ScalarResources[name]; l >= api.Tolerance {
			r.ScalarResources[name] = math.Min(amount, l)
		}
	}
	return r
}

// NamedBy is the part of req (amounts > 0, "pods" aside) in the dimensions share names with
// a positive amount; nil when share names none of them.
func NamedBy(req, share *api.Resource) *api.Resource {
	var out *api.Resource
	keep := func() *api.Resource {
		if out == nil {
			out = api.EmptyResource()
		}
		return out
	}
	if req.MilliCPU > 0 && share.MilliCPU >= api.Tolerance {
		keep().MilliCPU = req.MilliCPU
	}
	if req.Memory > 0 && share.Memory >= api.Tolerance {
		keep().Memory = req.Memory
	}
	for name, amount := range req.ScalarResources {
		if amount > 0 && name != corev1.ResourcePods && share.ScalarResources[name] >= api.Tolerance {
			keep().SetScalar(name, amount)
		}
	}
	return out
}

// sharesDimension: a and b both ask for some resource ("pods" aside).
func sharesDimension(a, b *api.Resource) bool {
	if (a.MilliCPU >= api.Tolerance && b.MilliCPU >= api.Tolerance) || (a.Memory >= api.Tolerance && b.Memory >= api.Tolerance) {
		return true
	}
	for name, amount := range a.ScalarResources {
		if name != corev1.ResourcePods && amount >= api.Tolerance && b.ScalarResources[name] >= api.Tolerance {
			return true
		}
	}
	return false
}

package api

import (
	"math"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/testing/st"
)

const (
	vgpuNumber = corev1.ResourceName("volcano.sh/vgpu-number")
	vgpuMemory = corev1.ResourceName("volcano.sh/vgpu-memory")
	vgpuCores  = corev1.ResourceName("volcano.sh/vgpu-cores")
	nvidiaGPU  = corev1.ResourceName("nvidia.com/gpu")
)

// res builds a Resource directly in internal units: cpu millicores, memory
// bytes, then scalar name/milli pairs.
func res(milliCPU, memory float64, scalars ...interface{}) *Resource {
	r := &Resource{MilliCPU: milliCPU, Memory: memory}
	for i := 0; i < len(scalars); i += 2 {
		amount := scalars[i+1]
		if n, ok := amount.(int); ok {
			amount = float64(n)
		}
		r.SetScalar(scalars[i].(corev1.ResourceName), amount.(float64))
	}
	return r
}

func TestNewResource(t *testing.T) {
	tests := []struct {
		name string
		list corev1.ResourceList
		want *Resource
	}{
		{name: "empty", list: nil, want: &Resource{}},
		{
			name: "cpu in millicores, memory in bytes",
			list: st.Resources("1500m", "2Gi"),
			want: &Resource{MilliCPU: 1500, Memory: 2 << 30},
		},
		{
			name: "vGPU scalars in milli-units",
			list: st.Resources("", "", string(vgpuNumber), "1", string(vgpuMemory), "2000", string(vgpuCores), "30"),
			want: res(0, 0, vgpuNumber, 1000, vgpuMemory, 2_000_000, vgpuCores, 30_000),
		},
		{
			name: "pods is a scalar and the task limit",
			list: st.Resources("", "", "pods", "110"),
			want: &Resource{ScalarResources: map[corev1.ResourceName]float64{"pods": 110_000}, MaxTaskNum: 110},
		},
		{
			name: "quota counts are dropped, zero scalars kept",
			list: st.Resources("", "", "count/pods", "10", string(nvidiaGPU), "0"),
			want: res(0, 0, nvidiaGPU, 0),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := NewResource(tt.list); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("NewResource = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestArithmetic(t *testing.T) {
	tests := []struct {
		name string
		op   func() *Resource
		want *Resource
	}{
		{
			name: "add merges scalars",
			op: func() *Resource {
				return res(1000, 10, vgpuMemory, 100).Add(res(500, 5, vgpuMemory, 50, vgpuNumber, 1000))
			},
			want: res(1500, 15, vgpuMemory, 150, vgpuNumber, 1000),
		},
		{
			name: "add to a resource without scalars",
			op:   func() *Resource { return EmptyResource().Add(res(0, 0, vgpuCores, 30)) },
			want: res(0, 0, vgpuCores, 30),
		},
		{
			name: "sub may go negative, scalars only in rr included",
			op: func() *Resource {
				return res(1000, 10, vgpuMemory, 100).Sub(res(1500, 5, vgpuMemory, 40, vgpuNumber, 1000))
			},
			want: res(-500, 5, vgpuMemory, 60, vgpuNumber, -1000),
		},
		{
			name: "multi scales every dimension",
			op:   func() *Resource { return res(1000, 10, vgpuMemory, 100).Multi(1.5) },
			want: res(1500, 15, vgpuMemory, 150),
		},
		{
			name: "min dimension, missing as infinity keeps r's",
			op: func() *Resource {
				return res(4000, 100, vgpuMemory, 8000, nvidiaGPU, 2000).MinDimension(res(math.MaxFloat64, 50, vgpuMemory, 3000, vgpuCores, 10), MissingAsInfinity)
			},
			want: res(4000, 50, vgpuMemory, 3000, nvidiaGPU, 2000),
		},
		{
			name: "min dimension, missing as zero zeroes r's",
			op: func() *Resource {
				return res(4000, 100, vgpuMemory, 8000, nvidiaGPU, 2000).MinDimension(res(1000, 200, vgpuMemory, 9000), MissingAsZero)
			},
			want: res(1000, 100, vgpuMemory, 8000, nvidiaGPU, 0),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.op(); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestCloneIsDeep(t *testing.T) {
	original := NewResource(st.Resources("1", "", "pods", "10", string(vgpuMemory), "100"))
	clone := original.Clone()
	if !reflect.DeepEqual(clone, original) {
		t.Fatalf("Clone = %v, want %v", clone, original)
	}
	clone.Add(res(1, 1, vgpuMemory, 1))
	if original.ScalarResources[vgpuMemory] != 100_000 || original.MilliCPU != 1000 {
		t.Errorf("changing the clone changed the original: %v", original)
	}
	if EmptyResource().Clone().ScalarResources != nil {
		t.Errorf("clone of an empty resource should not allocate a map")
	}
}

func TestIsEmpty(t *testing.T) {
	tests := []struct {
		name string
		r    *Resource
		want bool
	}{
		{name: "zero", r: EmptyResource(), want: true},
		{name: "best-effort pod carries pods only", r: res(0, 0, corev1.ResourcePods, 1000), want: true},
		{name: "below tolerance", r: res(0.05, 0.09, vgpuMemory, 0), want: true},
		{name: "cpu", r: res(1, 0), want: false},
		{name: "memory", r: res(0, 1), want: false},
		{name: "scalar", r: res(0, 0, vgpuNumber, 1000), want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.r.IsEmpty(); got != tt.want {
				t.Errorf("IsEmpty(%v) = %v, want %v", tt.r, got, tt.want)
			}
		})
	}
}

func TestLessEqual(t *testing.T) {
	tests := []struct {
		name     string
		l, r     *Resource
		missing  MissingDimension
		want     bool
		exceeded []corev1.ResourceName
	}{
		{name: "equal", l: res(1000, 10, vgpuMemory, 5), r: res(1000, 10, vgpuMemory, 5), want: true},
		{name: "within tolerance", l: res(1000.05, 10, vgpuMemory, 5.0), r: res(1000, 10, vgpuMemory, 5), want: true},
		{name: "cpu over", l: res(1001, 10), r: res(1000, 10), exceeded: []corev1.ResourceName{"cpu"}},
		{name: "memory over", l: res(0, 11), r: res(0, 10), exceeded: []corev1.ResourceName{"memory"}},
		{
			name: "request for a scalar the node lacks, as zero",
			l:    res(100, 1, vgpuMemory, 2_000_000), r: res(1000, 10),
			exceeded: []corev1.ResourceName{vgpuMemory},
		},
		{
			name: "zero-amount scalar the node lacks, as zero",
			l:    res(100, 1, vgpuMemory, 0), r: res(1000, 10), want: true,
		},
		{
			name: "node has scalars the request lacks, as zero",
			l:    res(100, 1), r: res(1000, 10, vgpuMemory, 3, nvidiaGPU, 1000), want: true,
		},
		{
			name: "negative idle the request lacks, as zero",
			l:    res(100, 1), r: res(1000, 10, nvidiaGPU, -1000, vgpuMemory, -5),
			exceeded: []corev1.ResourceName{nvidiaGPU, vgpuMemory},
		},
		{
			name: "capability without the scalar is unbounded",
			l:    res(100, 1, vgpuMemory, 9_000_000), r: res(1000, 10), missing: MissingAsInfinity, want: true,
		},
		{
			name: "capability of zero is a cap",
			l:    res(100, 1, vgpuMemory, 1000), r: res(1000, 10, vgpuMemory, 0), missing: MissingAsInfinity,
			exceeded: []corev1.ResourceName{vgpuMemory},
		},
		{
			name: "left side missing a capped scalar is unbounded",
			l:    res(100, 1), r: res(1000, 10, vgpuCores, 50_000), missing: MissingAsInfinity,
			exceeded: []corev1.ResourceName{vgpuCores},
		},
		{
			name:     "several dimensions, listed cpu, memory, then sorted scalars",
			l:        res(2000, 20, vgpuNumber, 2000, vgpuMemory, 4_000_000, nvidiaGPU, 1000),
			r:        res(1000, 10, vgpuNumber, 1000, vgpuMemory, 3_000_000, nvidiaGPU, 1000),
			exceeded: []corev1.ResourceName{"cpu", "memory", vgpuMemory, vgpuNumber},
		},
		{name: "unbounded fits unbounded", l: res(math.Inf(1), math.MaxFloat64), r: res(math.Inf(1), math.MaxFloat64), want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.l.LessEqual(tt.r, tt.missing); got != tt.want {
				t.Errorf("(%v).LessEqual(%v) = %v, want %v", tt.l, tt.r, got, tt.want)
			}
			if got := tt.l.Exceeding(tt.r, tt.missing); !reflect.DeepEqual(got, tt.exceeded) {
				t.Errorf("Exceeding = %q, want %q", got, tt.exceeded)
			}
		})
	}
}

func TestExceedingWithDimension(t *testing.T) {
	// The lab 8 queue: capability of 8 cores, 8 GiB and 4000 MiB of vGPU memory.
	capability := NewResource(st.Resources("8", "8Gi", string(vgpuMemory), "4000"))
	tests := []struct {
		name     string
		l, req   *Resource
		limit    *Resource
		exceeded []corev1.ResourceName
	}{
		{name: "nil request always fits", l: res(1e9, 1e18)},
		{
			name: "within capability",
			l:    NewResource(st.Resources("2", "", string(vgpuMemory), "3000", "pods", "1")),
			req:  NewResource(st.Resources("1", "", string(vgpuMemory), "3000", "pods", "1")),
		},
		{
			name:     "vGPU memory over capability",
			l:        NewResource(st.Resources("1", "", string(vgpuMemory), "5000")),
			req:      NewResource(st.Resources("1", "", string(vgpuMemory), "5000")),
			exceeded: []corev1.ResourceName{vgpuMemory},
		},
		{
			name: "only requested dimensions are compared",
			l:    NewResource(st.Resources("100", "", string(vgpuMemory), "1000")),
			req:  NewResource(st.Resources("", "", string(vgpuMemory), "1000")),
		},
		{
			name:     "requested dimension the capability lacks counts as zero",
			l:        NewResource(st.Resources("", "", string(nvidiaGPU), "1")),
			req:      NewResource(st.Resources("", "", string(nvidiaGPU), "1")),
			exceeded: []corev1.ResourceName{nvidiaGPU},
		},
		{
			name: "pods is ignored",
			l:    NewResource(st.Resources("", "", "pods", "1000")),
			req:  NewResource(st.Resources("", "", "pods", "1")),
		},
		{
			name:     "cpu and memory and scalars, in stable order",
			l:        NewResource(st.Resources("9", "9Gi", string(vgpuMemory), "5000", string(vgpuNumber), "1")),
			req:      NewResource(st.Resources("1", "1Gi", string(vgpuMemory), "1", string(vgpuNumber), "1")),
			exceeded: []corev1.ResourceName{"cpu", "memory", vgpuMemory, vgpuNumber},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			limit := tt.limit
			if limit == nil {
				limit = capability
			}
			if got := tt.l.ExceedingWithDimension(limit, tt.req); !reflect.DeepEqual(got, tt.exceeded) {
				t.Errorf("ExceedingWithDimension = %q, want %q", got, tt.exceeded)
			}
		})
	}
}

func TestGetAndToResourceList(t *testing.T) {
	in := st.Resources("1500m", "1Gi", "pods", "110", string(vgpuMemory), "2000")
	r := NewResource(in)
	if r.Get("cpu") != 1500 || r.Get("memory") != 1<<30 || r.Get(vgpuMemory) != 2_000_000 || r.Get(nvidiaGPU) != 0 {
		t.Errorf("Get returned the wrong amounts for %v", r)
	}
	out := r.ToResourceList()
	for name, want := range in {
		if got := out[name]; got.Cmp(want) != 0 {
			t.Errorf("ToResourceList()[%s] = %s, want %s", name, got.String(), want.String())
		}
	}
	if !reflect.DeepEqual(NewResource(out), r) {
		t.Errorf("round trip through ToResourceList changed %v into %v", r, NewResource(out))
	}
}

func TestString(t *testing.T) {
	r := res(1000, 1<<30, vgpuMemory, 2_000_000, corev1.ResourcePods, 1000, nvidiaGPU, 500)
	want := "cpu 1000.00, memory 1073741824.00, nvidia.com/gpu 500.00, pods 1000.00, volcano.sh/vgpu-memory 2000000.00"
	for i := 0; i < 5; i++ { // map order changes between iterations; the text must not
		if got := r.String(); got != want {
			t.Fatalf("String() = %q, want %q", got, want)
		}
	}
	if got := EmptyResource().String(); got != "cpu 0.00, memory 0.00" {
		t.Errorf("empty String() = %q", got)
	}
}

// A vGPU task's request against a node's idle resources, the comparison the
// allocate action makes for every task and candidate node.
func benchmarkPair() (task, idle *Resource) {
	task = NewResource(st.Resources("1", "2Gi", "pods", "1", string(vgpuNumber), "1", string(vgpuMemory), "2000", string(vgpuCores), "30"))
	idle = NewResource(st.Resources("64", "512Gi", "pods", "110", "ephemeral-storage", "1Ti", "hugepages-1Gi", "0", "hugepages-2Mi", "0",
		string(vgpuNumber), "80", string(vgpuMemory), "655360", string(vgpuCores), "800"))
	return task, idle
}

func BenchmarkLessEqual(b *testing.B) {
	task, idle := benchmarkPair()
	b.ReportAllocs()
	for b.Loop() {
		if !task.LessEqual(idle, MissingAsZero) {
			b.Fatal("task should fit")
		}
	}
}

func BenchmarkAdd(b *testing.B) {
	task, idle := benchmarkPair()
	used := idle.Clone()
	b.ReportAllocs()
	for b.Loop() {
		used.Add(task)
	}
}

func BenchmarkAddSubRoundTrip(b *testing.B) {
	task, idle := benchmarkPair()
	b.ReportAllocs()
	for b.Loop() {
		idle.Sub(task)
		idle.Add(task)
	}
}

// A PodGroup's minResources is quota usage (upstream's podgroup controller): the same requests
// appear again under "requests." and "limits." names, plus object counts. Only the real
// resources may count, or a queue check would fail on names no capability has.
func TestNewResourceFromQuotaUsage(t *testing.T) {
	usage := corev1.ResourceList{
		"count/pods": resource.MustParse("1"), "pods": resource.MustParse("1"),
		"cpu": resource.MustParse("1"), "requests.cpu": resource.MustParse("1"), "limits.cpu": resource.MustParse("1"),
		"memory": resource.MustParse("1Gi"), "requests.memory": resource.MustParse("1Gi"),
		"volcano.sh/vgpu-memory": resource.MustParse("2000"), "requests.volcano.sh/vgpu-memory": resource.MustParse("2000"),
		"hugepages-2Mi": resource.MustParse("4Mi"), "gpu": resource.MustParse("1"),
	}
	r := NewResource(usage)
	want := map[corev1.ResourceName]float64{"pods": 1000, "volcano.sh/vgpu-memory": 2000000, "hugepages-2Mi": 4 * 1024 * 1024 * 1000}
	if r.MilliCPU != 1000 || r.Memory != 1<<30 || len(r.ScalarResources) != len(want) {
		t.Fatalf("got %s, scalars %v", r, r.ScalarResources)
	}
	for name, v := range want {
		if r.ScalarResources[name] != v {
			t.Errorf("%s = %v, want %v", name, r.ScalarResources[name], v)
		}
	}
}

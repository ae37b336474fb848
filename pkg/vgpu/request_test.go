package vgpu

import (
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/testing/st"
)

// container builds a container whose limits and requests are given as "resource=quantity".
func container(name string, limits, requests []string) corev1.Container {
	list := func(pairs []string) corev1.ResourceList {
		if pairs == nil {
			return nil
		}
		l := corev1.ResourceList{}
		for _, pair := range pairs {
			k, v, _ := strings.Cut(pair, "=")
			l[corev1.ResourceName(k)] = resource.MustParse(v)
		}
		return l
	}
	return corev1.Container{Name: name, Resources: corev1.ResourceRequirements{Limits: list(limits), Requests: list(requests)}}
}

func pod(containers ...corev1.Container) *corev1.Pod {
	return st.MakePod().Namespace("team-a").Name("trainer-0").Containers(containers...).Obj()
}

const (
	number     = "volcano.sh/vgpu-number"
	memory     = "volcano.sh/vgpu-memory"
	cores      = "volcano.sh/vgpu-cores"
	percentage = "volcano.sh/vgpu-memory-percentage"
)

func TestPodRequests(t *testing.T) {
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		want []ContainerRequest
	}{
		{
			name: "count, memory and cores",
			pod:  pod(container("main", []string{number + "=2", memory + "=3000", cores + "=30"}, nil)),
			want: []ContainerRequest{{ContainerIndex: 0, ContainerName: "main", Count: 2, Memory: 3000, Cores: 30}},
		},
		{
			name: "count only takes whole cards",
			pod:  pod(container("main", []string{number + "=1"}, nil)),
			want: []ContainerRequest{{ContainerName: "main", Count: 1, MemoryPercentage: 100}},
		},
		{
			name: "memory only means one vGPU",
			pod:  pod(container("main", []string{memory + "=8188"}, nil)),
			want: []ContainerRequest{{ContainerName: "main", Count: 1, Memory: 8188}},
		},
		{
			name: "percentage instead of memory",
			pod:  pod(container("main", []string{number + "=1", percentage + "=25"}, nil)),
			want: []ContainerRequest{{ContainerName: "main", Count: 1, MemoryPercentage: 25}},
		},
		{
			name: "memory and cores from requests when limits lack them",
			pod:  pod(container("main", []string{number + "=1"}, []string{number + "=1", memory + "=1024", cores + "=50"})),
			want: []ContainerRequest{{ContainerName: "main", Count: 1, Memory: 1024, Cores: 50}},
		},
		{
			name: "limits win over requests",
			pod:  pod(container("main", []string{number + "=1", memory + "=2000"}, []string{memory + "=1000"})),
			want: []ContainerRequest{{ContainerName: "main", Count: 1, Memory: 2000}},
		},
		{
			name: "a count only in requests is no vGPU request",
			pod:  pod(container("main", nil, []string{number + "=1"})),
			want: nil,
		},
		{
			name: "containers without vGPU get no entry, and the index says which container it is",
			pod: pod(
				container("sidecar", []string{"cpu=1"}, nil),
				container("first-gpu", []string{number + "=1", memory + "=1000"}, nil),
				container("logger", nil, nil),
				container("second-gpu", []string{number + "=2", memory + "=500", cores + "=10"}, nil),
			),
			want: []ContainerRequest{
				{ContainerIndex: 1, ContainerName: "first-gpu", Count: 1, Memory: 1000},
				{ContainerIndex: 3, ContainerName: "second-gpu", Count: 2, Memory: 500, Cores: 10},
			},
		},
		{
			name: "a zero count alone keeps its entry so entries line up with upstream",
			pod:  pod(container("off", []string{number + "=0"}, nil), container("on", []string{number + "=1"}, nil)),
			want: []ContainerRequest{
				{ContainerIndex: 0, ContainerName: "off", Count: 0, MemoryPercentage: 100},
				{ContainerIndex: 1, ContainerName: "on", Count: 1, MemoryPercentage: 100},
			},
		},
		{
			name: "whole-number quantities with suffixes are accepted",
			pod:  pod(container("main", []string{number + "=1", memory + "=2k"}, nil)),
			want: []ContainerRequest{{ContainerName: "main", Count: 1, Memory: 2000}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := PodRequests(tc.pod, DefaultResourceNames())
			if err != nil {
				t.Fatalf("PodRequests: %v", err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("PodRequests:\n got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestPodRequestsWithoutPercentageResource(t *testing.T) {
	names := DefaultResourceNames()
	names.MemoryPercentage = ""
	got, err := PodRequests(pod(container("main", []string{number + "=1", percentage + "=500"}, nil)), names)
	if err != nil {
		t.Fatal(err)
	}
	want := []ContainerRequest{{ContainerName: "main", Count: 1, MemoryPercentage: 100}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("percentage must be ignored when not configured:\n got %+v\nwant %+v", got, want)
	}
}

func TestPodRequestsRenamedResources(t *testing.T) {
	names := ResourceNames{Count: "example.com/gpu", Memory: "example.com/gpu-mem", Cores: "example.com/gpu-cores"}
	got, err := PodRequests(pod(container("main", []string{"example.com/gpu-mem=100", number + "=3"}, nil)), names)
	if err != nil {
		t.Fatal(err)
	}
	want := []ContainerRequest{{ContainerName: "main", Count: 1, Memory: 100}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
}

func TestPodRequestsRejects(t *testing.T) {
	for _, tc := range []struct {
		name   string
		limits []string
		want   []string
	}{
		{"negative count", []string{number + "=-1"}, []string{number, `"-1"`}},
		{"fractional count", []string{number + "=1.5"}, []string{number, "whole number"}},
		{"milli memory", []string{number + "=1", memory + "=500m"}, []string{memory, `"500m"`}},
		{"memory beyond int32", []string{number + "=1", memory + "=3Gi"}, []string{memory, "3Gi"}},
		{"cores above 100", []string{number + "=1", cores + "=150"}, []string{cores, "150", "0 to 100"}},
		{"percentage above 100", []string{number + "=1", percentage + "=101"}, []string{percentage, "101", "1 to 100"}},
		{"percentage zero", []string{number + "=1", percentage + "=0"}, []string{percentage, "1 to 100"}},
		{"zero count with memory", []string{number + "=0", memory + "=1000"}, []string{number + " is 0"}},
		{"zero count with cores", []string{number + "=0", cores + "=10"}, []string{number + " is 0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := pod(container("ok", []string{number + "=1"}, nil), container("worker", tc.limits, nil))
			got, err := PodRequests(p, DefaultResourceNames())
			if err == nil {
				t.Fatalf("PodRequests = %+v, want an error", got)
			}
			for _, fragment := range append([]string{"team-a/trainer-0", `"worker"`}, tc.want...) {
				if !strings.Contains(err.Error(), fragment) {
					t.Errorf("error %q does not mention %q", err, fragment)
				}
			}
		})
	}
}

func TestMemoryOn(t *testing.T) {
	for _, tc := range []struct {
		request ContainerRequest
		gpu     int32
		want    int32
	}{
		{ContainerRequest{Memory: 3000, MemoryPercentage: 50}, 80000, 3000},
		{ContainerRequest{MemoryPercentage: 100}, 81920, 81920},
		{ContainerRequest{MemoryPercentage: 29}, 100, 29},
		{ContainerRequest{MemoryPercentage: 33}, 81559, 26914},
		{ContainerRequest{MemoryPercentage: 100}, 2147483647, 2147483647},
	} {
		if got := tc.request.MemoryOn(tc.gpu); got != tc.want {
			t.Errorf("%+v.MemoryOn(%d) = %d, want %d", tc.request, tc.gpu, got, tc.want)
		}
	}
}

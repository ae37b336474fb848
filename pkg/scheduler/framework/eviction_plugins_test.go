package framework_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/conf"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework/frameworktest"
)

// evictor allows the candidates at the given indexes, or abstains when allow is nil.
type evictor struct {
	name  string
	allow []int
}

func (e *evictor) Name() string { return e.name }
func (e *evictor) OnSessionOpen(ssn *framework.Session) {
	fn := func(_ *api.TaskInfo, candidates []*api.TaskInfo) ([]*api.TaskInfo, bool) {
		if e.allow == nil {
			return nil, true
		}
		var out []*api.TaskInfo
		for _, i := range e.allow {
			out = append(out, candidates[i])
		}
		return out, false
	}
	ssn.AddPreemptableFn(e.name, fn)
	ssn.AddReclaimableFn(e.name, fn)
}
func (e *evictor) OnSessionClose(*framework.Session) {}

// evictable follows upstream's tier rule (intersection within the first tier with a say), with
// the one documented difference: a plugin with a say that allows none is final.
func TestEvictableTierRules(t *testing.T) {
	cases := []struct {
		name  string
		tiers [][]*evictor
		want  []int
	}{
		{"no plugin: none", nil, nil},
		{"all abstain: none", [][]*evictor{{{name: "a"}}, {{name: "b"}}}, nil},
		{"intersection within a tier", [][]*evictor{{{name: "a", allow: []int{0, 1, 2}}, {name: "b", allow: []int{2, 1}}}}, []int{1, 2}},
		{"an abstainer does not narrow", [][]*evictor{{{name: "a", allow: []int{0, 2}}, {name: "b"}}}, []int{0, 2}},
		{"first tier with a say decides", [][]*evictor{{{name: "a", allow: []int{0}}}, {{name: "b", allow: []int{1}}}}, []int{0}},
		{"abstaining tier passes on", [][]*evictor{{{name: "a"}}, {{name: "b", allow: []int{1}}}}, []int{1}},
		{"empty say is final", [][]*evictor{{{name: "a", allow: []int{}}}, {{name: "b", allow: []int{0}}}}, nil},
		{"disjoint within a tier: none", [][]*evictor{{{name: "a", allow: []int{0}}, {name: "b", allow: []int{1}}}, {{name: "c", allow: []int{2}}}}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ssn := frameworktest.OpenTiers(&frameworktest.Cache{Snap: cluster(1, 4)}, allocateOnly, tc.tiers...)
			job := ssn.Jobs["ns/pg"]
			var candidates []*api.TaskInfo
			for i := 1; i < 4; i++ {
				candidates = append(candidates, job.Tasks[api.TaskID(fmt.Sprintf("uid-%d", i))])
			}
			var want []string
			for _, i := range tc.want {
				want = append(want, candidates[i].Name)
			}
			for what, got := range map[string][]*api.TaskInfo{
				"Preemptable": ssn.Preemptable(job.Tasks["uid-0"], candidates),
				"Reclaimable": ssn.Reclaimable(job.Tasks["uid-0"], candidates),
			} {
				var names []string
				for _, v := range got {
					names = append(names, v.Name)
				}
				if !slices.Equal(names, want) {
					t.Errorf("%s = %v, want %v", what, names, want)
				}
			}
		})
	}
}

// A plugin whose enablePreemptable is off has no say, whatever it registers.
func TestEvictableFollowsFlags(t *testing.T) {
	off := false
	reg := framework.NewRegistry()
	a, b := &evictor{name: "a", allow: []int{}}, &evictor{name: "b", allow: []int{0}}
	for _, p := range []*evictor{a, b} {
		reg.RegisterPlugin(p.name, func(conf.Arguments) (framework.Plugin, error) { return p, nil })
	}
	cfg := &conf.SchedulerConfiguration{Actions: "preempt", Tiers: []conf.Tier{
		{Plugins: []conf.PluginOption{{Name: "a", EnabledPreemptable: &off}}},
		{Plugins: []conf.PluginOption{{Name: "b", EnabledReclaimable: &off}}},
	}}
	ssn := framework.OpenSession(&frameworktest.Cache{Snap: cluster(1, 2)}, cfg, reg, nil)
	job := ssn.Jobs["ns/pg"]
	candidates := []*api.TaskInfo{job.Tasks["uid-1"]}
	if got := ssn.Preemptable(job.Tasks["uid-0"], candidates); len(got) != 1 {
		t.Errorf("Preemptable = %v, want b's one victim (a's veto is switched off)", got)
	}
	if got := ssn.Reclaimable(job.Tasks["uid-0"], candidates); len(got) != 0 {
		t.Errorf("Reclaimable = %v, want a's veto (b is switched off)", got)
	}
}

// vetoer is a plugin whose victim filter keeps the candidates named in keep.
type vetoer struct {
	name string
	keep map[string]bool
}

func (v *vetoer) Name() string { return v.name }
func (v *vetoer) OnSessionOpen(ssn *framework.Session) {
	ssn.AddVictimFilterFn(v.name, func(victims []*api.TaskInfo) []*api.TaskInfo {
		var out []*api.TaskInfo
		for _, t := range victims {
			if !v.keep[t.Name] {
				out = append(out, t)
			}
		}
		return out
	})
}
func (v *vetoer) OnSessionClose(*framework.Session) {}

// A victim filter applies in whatever tier its plugin is, after the tier that decided, and
// only where its plugin's flag for the action is on.
func TestVictimFiltersApplyInEveryTier(t *testing.T) {
	off := false
	reg := framework.NewRegistry()
	decider := &evictor{name: "decider", allow: []int{0, 1}}
	veto := &vetoer{name: "veto", keep: map[string]bool{"pg-w-1": true}}
	reg.RegisterPlugin(decider.name, func(conf.Arguments) (framework.Plugin, error) { return decider, nil })
	reg.RegisterPlugin(veto.name, func(conf.Arguments) (framework.Plugin, error) { return veto, nil })
	cfg := &conf.SchedulerConfiguration{Actions: "preempt", Tiers: []conf.Tier{
		{Plugins: []conf.PluginOption{{Name: decider.name}}},
		{Plugins: []conf.PluginOption{{Name: veto.name, EnabledReclaimable: &off}}},
	}}
	ssn := framework.OpenSession(&frameworktest.Cache{Snap: cluster(1, 3)}, cfg, reg, nil)
	job := ssn.Jobs["ns/pg"]
	candidates := []*api.TaskInfo{job.Tasks["uid-1"], job.Tasks["uid-2"]}
	names := func(ts []*api.TaskInfo) []string {
		var out []string
		for _, t := range ts {
			out = append(out, t.Name)
		}
		return out
	}
	if got := names(ssn.Preemptable(job.Tasks["uid-0"], candidates)); !slices.Equal(got, []string{"pg-w-2"}) {
		t.Errorf("Preemptable = %v, want [pg-w-2]: the second tier's filter keeps pg-w-1", got)
	}
	if got := names(ssn.Reclaimable(job.Tasks["uid-0"], candidates)); !slices.Equal(got, []string{"pg-w-1", "pg-w-2"}) {
		t.Errorf("Reclaimable = %v, want both: the filter is off for reclaim", got)
	}
	if ssn.MovesAllowed(candidates) {
		t.Errorf("MovesAllowed(%v) = true, want false: the filter keeps pg-w-1 whatever its flags", names(candidates))
	}
	if !ssn.MovesAllowed(candidates[1:]) {
		t.Errorf("MovesAllowed(%v) = false, want true", names(candidates[1:]))
	}
}

// The gang actions' chains leave out a plugin that keeps job minimums, and only they do, even
// when it says so after those chains were first asked.
func TestKeepsJobMinimumLeavesTheBundleChainsOnly(t *testing.T) {
	reg := framework.NewRegistry()
	keeper, other := &evictor{name: "keeper", allow: []int{}}, &evictor{name: "other", allow: []int{0}}
	for _, p := range []*evictor{keeper, other} {
		reg.RegisterPlugin(p.name, func(conf.Arguments) (framework.Plugin, error) { return p, nil })
	}
	cfg := &conf.SchedulerConfiguration{Actions: "preempt", Tiers: []conf.Tier{
		{Plugins: []conf.PluginOption{{Name: keeper.name}}},
		{Plugins: []conf.PluginOption{{Name: other.name}}},
	}}
	ssn := framework.OpenSession(&frameworktest.Cache{Snap: cluster(1, 2)}, cfg, reg, nil)
	job := ssn.Jobs["ns/pg"]
	preemptor, candidates := job.Tasks["uid-0"], []*api.TaskInfo{job.Tasks["uid-1"]}
	if got := ssn.BundlePreemptable(preemptor, candidates); len(got) != 0 {
		t.Fatalf("BundlePreemptable before KeepsJobMinimum = %v, want keeper's veto", got)
	}
	ssn.KeepsJobMinimum(keeper.name)
	for name, evict := range map[string]func(*api.TaskInfo, []*api.TaskInfo) []*api.TaskInfo{
		"Preemptable": ssn.Preemptable, "Reclaimable": ssn.Reclaimable,
		"BundlePreemptable": ssn.BundlePreemptable, "BundleReclaimable": ssn.BundleReclaimable,
	} {
		want := 0 // keeper's veto
		if name == "BundlePreemptable" || name == "BundleReclaimable" {
			want = 1 // other's victim
		}
		if got := evict(preemptor, candidates); len(got) != want {
			t.Errorf("%s = %v, want %d victims", name, got, want)
		}
	}
}

// starver says whether a job is starving, and refuses reclaim for its queue when refuse is set.
type starver struct {
	name     string
	starving bool
	refuse   bool
}

func (s *starver) Name() string { return s.name }
func (s *starver) OnSessionOpen(ssn *framework.Session) {
	ssn.AddJobStarvingFn(s.name, func(*api.JobInfo) bool { return s.starving })
	ssn.AddPreemptiveFn(s.name, func(*api.QueueInfo, *api.TaskInfo) error {
		if s.refuse {
			return fmt.Errorf("%s refuses", s.name)
		}
		return nil
	})
}
func (s *starver) OnSessionClose(*framework.Session) {}

func TestJobStarvingAndPreemptive(t *testing.T) {
	cases := []struct {
		name         string
		tiers        [][]*starver
		wantStarving bool
		wantRefusal  string
	}{
		{"no plugin", nil, false, ""},
		{"first tier, all of it", [][]*starver{{{name: "a", starving: true}, {name: "b"}}, {{name: "c", starving: true}}}, false, ""},
		{"first tier decides", [][]*starver{{{name: "a", starving: true}}, {{name: "c"}}}, true, ""},
		{"any refusal stops reclaim", [][]*starver{{{name: "a", starving: true}}, {{name: "c", refuse: true}}}, true, "c refuses"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ssn := frameworktest.OpenTiers(&frameworktest.Cache{Snap: cluster(1, 1)}, allocateOnly, tc.tiers...)
			job := ssn.Jobs["ns/pg"]
			if got := ssn.JobStarving(job); got != tc.wantStarving {
				t.Errorf("JobStarving = %v, want %v", got, tc.wantStarving)
			}
			err := ssn.Preemptive(ssn.Queues["default"], job.Tasks["uid-0"])
			if got := fmt.Sprint(err); (tc.wantRefusal == "" && err != nil) || (tc.wantRefusal != "" && got != tc.wantRefusal) {
				t.Errorf("Preemptive = %v, want %q", err, tc.wantRefusal)
			}
		})
	}
}

// selector picks the candidates at the given indexes, or abstains when pick is nil.
type selector struct {
	name string
	pick []int
}

func (s *selector) Name() string { return s.name }
func (s *selector) OnSessionOpen(ssn *framework.Session) {
	ssn.AddVictimSelectFn(s.name, func(_ *api.TaskInfo, _ *api.NodeInfo, candidates []*api.TaskInfo, _ func([]*api.TaskInfo) bool) ([]*api.TaskInfo, bool) {
		if s.pick == nil {
			return nil, true
		}
		var out []*api.TaskInfo
		for _, i := range s.pick {
			out = append(out, candidates[i])
		}
		return out, false
	})
}
func (s *selector) OnSessionClose(*framework.Session) {}

// The first plugin with a say picks the victims, in its order; none with a say leaves the
// choice to the caller.
func TestSelectVictims(t *testing.T) {
	cases := []struct {
		name   string
		tiers  [][]*selector
		want   []int
		wantOK bool
	}{
		{"no plugin: no say", nil, nil, false},
		{"all abstain: no say", [][]*selector{{{name: "a"}}, {{name: "b"}}}, nil, false},
		{"first with a say picks, in its order", [][]*selector{{{name: "a"}, {name: "b", pick: []int{2, 0}}}, {{name: "c", pick: []int{1}}}}, []int{2, 0}, true},
		{"an empty pick is final", [][]*selector{{{name: "a", pick: []int{}}}, {{name: "b", pick: []int{1}}}}, nil, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ssn := frameworktest.OpenTiers(&frameworktest.Cache{Snap: cluster(1, 4)}, allocateOnly, tc.tiers...)
			job := ssn.Jobs["ns/pg"]
			var candidates []*api.TaskInfo
			for i := 1; i < 4; i++ {
				candidates = append(candidates, job.Tasks[api.TaskID(fmt.Sprintf("uid-%d", i))])
			}
			got, ok := ssn.SelectVictims(job.Tasks["uid-0"], ssn.NodeList[0], candidates, nil)
			var names, want []string
			for _, v := range got {
				names = append(names, v.Name)
			}
			for _, i := range tc.want {
				want = append(want, candidates[i].Name)
			}
			if ok != tc.wantOK || !slices.Equal(names, want) {
				t.Errorf("SelectVictims = %v, %v; want %v, %v", names, ok, want, tc.wantOK)
			}
		})
	}
}

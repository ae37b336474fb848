package deviceshare

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
)

// maxVictimSets bounds the victim sets selectVictims tries on one node. Sets are tried by
// size, among the pods on as many GPUs as the preemptor has vGPUs at a time (see run), so a
// pod of one vGPU tries a GPU's own pods only; a pod of several vGPUs on a node of many busy
// GPUs could otherwise try millions. Within the bound, the set found is the best of its size;
// where none is found within it, a greedy choice (see greedy) stands in.
const maxVictimSets = 1 << 15

// selectVictims picks, for a vGPU preemptor, the candidates to evict on node: the fewest of
// those holding vGPUs on GPUs the preemptor may use whose going lets all its vGPUs fit the
// node's future GPUs (future.go); among sets of that size, the one of lowest rank (its
// highest-ranked holder lowest, then its next, and so on; a holder ranks by its job's
// priority, then by its own task priority, which its author may set with the
// volcano.sh/task-priority annotation and which therefore orders pods of one job only,
// never one job's pods against another's), then the one that frees the least
// GPU memory, then the one whose last victim comes earliest in the candidates' order (lowest
// first), and so on. Evicting in candidate order instead would evict pods on GPUs the
// preemptor cannot use, and two half-free GPUs are not one free GPU. The fitter decides what
// fits, so a victim on several GPUs frees its vGPU on each, and slots, memory and cores all
// count. Only sets that together allows are tried (a gang keeps its minimum: which of its
// pods go is this search's to choose). Candidates without vGPUs on the node follow, in order,
// for whatever else the preemptor lacks (CPU, memory); pods on other GPUs are never picked.
// The plugin has no say on a preemptor that wants no GPU.
func (p *plugin) selectVictims(preemptor *api.TaskInfo, node *api.NodeInfo, candidates []*api.TaskInfo,
	together func([]*api.TaskInfo) bool) ([]*api.TaskInfo, bool) {
	r := p.request(preemptor)
	if r.err != nil || !r.wantsGPUs() {
		return nil, true
	}
	l := ledgerOf(node)
	if l == nil || p.unusable(l) != nil {
		return nil, false
	}
	holders, rest := p.gpuHolders(r, l, candidates)
	base := p.future(node, l)
	if base == nil {
		base = l
	}
	s := victimSearch{r: r, node: node, base: slices.Clone(base.gpus), work: *base, holders: holders, fitter: &p.fitter,
		together: together}
	s.work.gpus = slices.Clone(base.gpus)
	chosen, ok := s.run(s.groups(l))
	if !ok {
		return nil, false
	}
	victims := make([]*api.TaskInfo, 0, len(chosen)+len(rest))
	for _, i := range chosen {
		victims = append(victims, holders[i].task)
	}
	return append(victims, rest...), false
}

// holder is a candidate holding vGPUs on GPUs a preemptor may use, and those bookings.
type holder struct {
	task     *api.TaskInfo
	rank     rank
	bookings []booking
	memory   int64
}

// gpuHolders splits candidates, keeping their order: those holding vGPUs on GPUs r may use,
// with the bookings there, and those holding none on the node. Candidates holding vGPUs only
// on GPUs r may not use are in neither.
func (p *plugin) gpuHolders(r *podRequest, l *ledger, candidates []*api.TaskInfo) (holders []holder, rest []*api.TaskInfo) {
	for _, t := range candidates {
		var all []booking
		if l.derived != nil {
			all = l.derived.of(t.UID)
		}
		if len(all) == 0 {
			rest = append(rest, t)
			continue
		}
		h := holder{task: t, rank: rank{task: t.Priority}}
		if p.jobPriority != nil {
			h.rank.job = p.jobPriority(t)
		}
		for _, b := range all {
			if r.filter(&l.gpus[b.gpu]) == fits {
				h.bookings = append(h.bookings, b)
				h.memory += int64(b.memory)
			}
		}
		if len(h.bookings) > 0 {
			holders = append(holders, h)
		}
	}
	return holders, rest
}

// victimSearch tries sets of holders, smallest first, on a working copy of the node's future
// GPUs.
type victimSearch struct {
	r       *podRequest
	node    *api.NodeInfo
	base    []gpu
	work    ledger
	holders []holder
	fitter  *fitter
	tries   int
	// together is the plugins' rule on which victims may go together; nil allows any set.
	together func([]*api.TaskInfo) bool
}

// groups are the holders (indices, ascending) that could make room together: for each set
// of as many of the GPUs the preemptor may use as it has vGPUs, the holders with a vGPU on
// one of them. The victims of a smallest set that makes room all hold a vGPU on a GPU the
// preemptor then uses (any other could stay), so that set is within one group.
func (s *victimSearch) groups(l *ledger) [][]int {
	var usable []int
	for i := range l.gpus {
		if s.r.filter(&l.gpus[i]) == fits {
			usable = append(usable, i)
		}
	}
	gpuSet := make([]int, min(int(s.r.vgpus), len(usable)))
	for i := range gpuSet {
		gpuSet[i] = i
	}
	var groups [][]int
	seen := map[string]bool{}
	for {
		var group []int
		for h := range s.holders {
			if s.holders[h].touches(usable, gpuSet) {
				group = append(group, h)
			}
		}
		if key := fmt.Sprint(group); !seen[key] {
			seen[key] = true
			groups = append(groups, group)
		}
		if !nextSet(gpuSet, len(usable)) {
			return groups
		}
	}
}

// touches says whether the holder has a vGPU on one of the GPUs usable[i] for i in set.
func (h *holder) touches(usable, set []int) bool {
	for _, b := range h.bookings {
		for _, i := range set {
			if int(b.gpu) == usable[i] {
				return true
			}
		}
	}
	return false
}

// run returns the best set (indices into holders, ascending) and whether one fits: sets are
// tried smallest first, each size within every group.
func (s *victimSearch) run(groups [][]int) ([]int, bool) {
	if s.fits(nil) {
		return nil, true
	}
	largest := 0
	for _, g := range groups {
		largest = max(largest, len(g))
	}
	for size := 1; size <= largest; size++ {
		var best []int
		pos, set := make([]int, size), make([]int, size)
		for _, g := range groups {
			if len(g) < size {
				continue
			}
			for i := range pos {
				pos[i] = i
			}
			for {
				if s.tries == maxVictimSets {
					if best == nil {
						return s.greedy(groups)
					}
					return best, true
				}
				s.tries++
				for i, p := range pos {
					set[i] = g[p]
				}
				if s.fits(set) && s.allowed(set) && (best == nil || s.better(set, best)) {
					best = slices.Clone(set)
				}
				if !nextSet(pos, len(g)) {
					break
				}
			}
		}
		if best != nil {
			return best, true
		}
	}
	return nil, false
}

// greedy is the victim set when trying sets by size takes too long: in each group, the
// holders in candidate order that may go with those before them, until the preemptor fits,
// less those that then prove not needed, the last first; the best of the groups' sets.
func (s *victimSearch) greedy(groups [][]int) ([]int, bool) {
	var best []int
	for _, g := range groups {
		var set []int
		for _, h := range g {
			if s.fits(set) {
				break
			}
			if s.allowed(append(slices.Clone(set), h)) {
				set = append(set, h)
			}
		}
		if !s.fits(set) {
			continue
		}
		for i := len(set) - 1; i >= 0; i-- {
			if without := slices.Delete(slices.Clone(set), i, i+1); s.fits(without) {
				set = without
			}
		}
		if best == nil || len(set) < len(best) || (len(set) == len(best) && s.better(set, best)) {
			best = set
		}
	}
	return best, best != nil
}

// allowed: the set's holders may go together.
func (s *victimSearch) allowed(set []int) bool {
	if s.together == nil {
		return true
	}
	victims := make([]*api.TaskInfo, len(set))
	for i, h := range set {
		victims[i] = s.holders[h].task
	}
	return s.together(victims)
}

// fits: the preemptor fits the future GPUs once the set's holders are gone.
func (s *victimSearch) fits(set []int) bool {
	copy(s.work.gpus, s.base)
	for _, i := range set {
		for _, b := range s.holders[i].bookings {
			s.work.release(b)
		}
	}
	_, _, failed := s.fitter.fit(s.r, s.node, &s.work, false)
	return failed == fits
}

// better says whether set a, of the same size as b, goes before b (see selectVictims).
func (s *victimSearch) better(a, b []int) bool {
	if c := slices.CompareFunc(s.priorities(a), s.priorities(b), compareRanks); c != 0 {
		return c < 0
	}
	if ma, mb := s.memory(a), s.memory(b); ma != mb {
		return ma < mb
	}
	for i := len(a) - 1; i >= 0; i-- {
		if a[i] != b[i] {
			return a[i] < b[i]
		}
	}
	return false
}

// rank orders holders for eviction: by their job's priority, then by their own.
type rank struct{ job, task int32 }

func compareRanks(a, b rank) int {
	return cmp.Or(cmp.Compare(a.job, b.job), cmp.Compare(a.task, b.task))
}

// priorities is the ranks of the set's holders, highest first.
func (s *victimSearch) priorities(set []int) []rank {
	ps := make([]rank, len(set))
	for i, h := range set {
		ps[i] = s.holders[h].rank
	}
	slices.SortFunc(ps, func(a, b rank) int { return compareRanks(b, a) })
	return ps
}

func (s *victimSearch) memory(set []int) int64 {
	var m int64
	for _, i := range set {
		m += s.holders[i].memory
	}
	return m
}

// nextSet advances set, ascending indices below n, to the next one of its size in
// lexicographic order; false when it was the last.
func nextSet(set []int, n int) bool {
	k := len(set)
	i := k - 1
	for i >= 0 && set[i] == n-k+i {
		i--
	}
	if i < 0 {
		return false
	}
	set[i]++
	for j := i + 1; j < k; j++ {
		set[j] = set[j-1] + 1
	}
	return true
}

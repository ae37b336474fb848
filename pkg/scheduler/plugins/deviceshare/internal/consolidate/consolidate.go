// Package consolidate is the search behind the consolidate action (deviceshare's room-maker,
// to free a GPU for a pod that fits in the cluster's free vGPU memory but on no single GPU).
// Given every GPU's slices and one waiting request, it says which movable pods to move to
// which GPUs so that the request then fits on one GPU. It is pure: it reads no session and
// changes nothing. The caller says which pods may move (recreated by a controller, not
// volcano.sh/preemptable: "false"), how many pods each job may lose and stay at its minimum,
// and where each may go, and carries the moves out.
//
// A moved pod takes only room that is free before any move, never room another move frees:
// no GPU is over memory, cores or split whatever order the evictions and re-creations happen
// in. So the only pods worth moving are those on the GPU the request gets, and a plan frees
// room on one GPU.
//
// Plans are ordered by the number of pods moved, then the memory moved, then the sum of the
// moved pods' priorities; Search returns the first by that order. It tries set sizes from 0
// up (iterative deepening), GPUs in order of the fewest slices that must leave them, each
// GPU's sets of that size from the cheapest, and places a set's pods largest first on the
// other GPUs with backtracking (GPUs left exactly as full as one already tried for the same
// pod are skipped). The search is exact (the plan it returns is the first by that order among
// all plans) as long as it stays within Limits; past MaxWork it returns the best plan of the
// size it was at, if any, which moves the fewest pods but may not be the cheapest of them,
// or none, and it never tries sets of more than MaxMoves pods.
package consolidate

import (
	"cmp"
	"slices"
)

// wholeGPUCores is a whole GPU's compute, in the percent vgpu-cores counts.
const wholeGPUCores = 100

// GPU is one GPU and the slices booked on it.
type GPU struct {
	ID, Node string
	// Memory is the GPU's memory in MiB.
	Memory int64
	// Split is the most slices the GPU holds at once.
	Split  int
	Slices []Slice
	// Closed: the request may not use this GPU (its filters, or its node's), though the
	// GPU may take moved slices.
	Closed bool
	// RequestMemory is what the request books here when that differs from Request.Memory
	// (a share of the GPU's memory, a context reserve); 0: Request.Memory.
	RequestMemory int64
}

// memoryOn is what the request books on g.
func (r Request) memoryOn(g *GPU) int64 {
	if g.RequestMemory > 0 {
		return g.RequestMemory
	}
	return r.Memory
}

// Slice is one pod's share of a GPU. A pod with slices on several GPUs is given as not
// Movable: moving it moves all of them, which this search does not do.
type Slice struct {
	Pod, Job string
	// Memory is what the slice books in MiB (its context reserve included), Cores its percent
	// of the GPU's compute (0: no limit).
	Memory   int64
	Cores    int32
	Priority int32
	// Movable: a controller recreates the pod, it is not volcano.sh/preemptable: "false" and
	// it is old enough. Its job must also have Budget left.
	Movable bool
}

// Request is the waiting pod's one slice; Nodes, when not empty, are the only nodes whose
// GPUs it may get. The pods moved for it may go to any node.
type Request struct {
	Memory int64
	Cores  int32
	Nodes  []string
}

// Problem is what Search is asked: the GPUs, how many pods each job may lose (a job not in
// Budget loses none) and the request.
type Problem struct {
	GPUs    []GPU
	Budget  map[string]int
	Request Request
	// Hosts says whether GPU g may take slice s (the pod's own GPU and node filters); nil:
	// any GPU with room.
	Hosts func(s *Slice, g *GPU) bool
}

// Move sends Pod's slice from GPU From to GPU To (GPU IDs).
type Move struct{ Pod, From, To string }

// Plan is Search's answer: the moves, in the order of the slices on GPU, and the GPU the
// request gets once they are done.
type Plan struct {
	GPU   string
	Moves []Move
}

// Limits bound a Search: it tries no set of more than MaxMoves pods, and does at most MaxWork
// steps (one per set of pods looked at, one per GPU tried for a pod while placing a set).
type Limits struct{ MaxMoves, MaxWork int }

// DefaultLimits: sets of up to 8 pods. A search over 1,000 nodes x 8 GPUs of 81,920 MiB, each
// holding three pods of 20,000 MiB, took 10-14 ms on these 2-core machines (2026-12-08), a
// plan of one move or of three.
var DefaultLimits = Limits{MaxMoves: 8, MaxWork: 1 << 20}

// Search returns the first plan by the package's order after which the request fits, or false
// when no plan within l does: no move that does not end with the waiting pod placed.
func Search(p Problem, l Limits) (Plan, bool) {
	s := &search{p: p, work: l.MaxWork, used: make([]usage, len(p.GPUs))}
	for i := range p.GPUs {
		for _, sl := range p.GPUs[i].Slices {
			s.used[i] = s.used[i].add(sl)
		}
	}
	type target struct{ gpu, least int }
	var targets []target
	for i := range p.GPUs {
		if p.GPUs[i].Closed || (len(p.Request.Nodes) > 0 && !slices.Contains(p.Request.Nodes, p.GPUs[i].Node)) {
			continue
		}
		if least, ok := s.leastToFree(i); ok {
			targets = append(targets, target{i, least})
		}
	}
	slices.SortStableFunc(targets, func(a, b target) int { return cmp.Compare(a.least, b.least) })
	for k := 0; k <= l.MaxMoves && !s.found && s.work > 0; k++ {
		for _, t := range targets {
			if t.least <= k && s.work > 0 {
				s.tryGPU(t.gpu, k)
			}
		}
	}
	if !s.found {
		return Plan{}, false
	}
	g := &p.GPUs[s.best.gpu]
	plan := Plan{GPU: g.ID}
	for j, i := range s.best.slices {
		plan.Moves = append(plan.Moves, Move{Pod: g.Slices[i].Pod, From: g.ID, To: p.GPUs[s.best.to[j]].ID})
	}
	return plan, true
}

// usage is what a GPU's slices book together.
type usage struct {
	memory    int64
	cores     int32
	slices    int
	unlimited int // slices of no core limit
}

func (u usage) add(s Slice) usage { return u.plus(s, 1) }

func (u usage) remove(s Slice) usage { return u.plus(s, -1) }

func (u usage) plus(s Slice, n int) usage {
	u.memory += int64(n) * s.Memory
	u.cores += int32(n) * s.Cores
	u.slices += n
	if s.Cores == 0 {
		u.unlimited += n
	}
	return u
}

// fits says whether g, with u booked, takes one more slice of memory and cores: deviceshare's
// hami-core rule (pkg/scheduler/plugins/deviceshare/sharing.go) made independent of the order
// slices come in: a slice of the whole GPU's cores has it to itself, and a slice of no core
// limit never shares a GPU whose cores the others book in full.
func fits(g *GPU, u usage, memory int64, cores int32) bool {
	switch {
	case u.slices >= g.Split, u.memory+memory > g.Memory, u.cores+cores > wholeGPUCores:
		return false
	case cores == wholeGPUCores && u.slices > 0:
		return false
	case cores == 0 && u.cores >= wholeGPUCores:
		return false
	case u.unlimited > 0 && u.cores+cores >= wholeGPUCores:
		return false
	}
	return true
}

// candidate is a set of movable slices of one GPU, indices into its Slices in increasing
// order, and, once placed, the GPU each goes to.
type candidate struct {
	gpu      int
	slices   []int
	to       []int
	memory   int64
	priority int64
}

func (c *candidate) compare(d *candidate) int {
	return cmp.Or(cmp.Compare(len(c.slices), len(d.slices)), cmp.Compare(c.memory, d.memory),
		cmp.Compare(c.priority, d.priority))
}

type search struct {
	p     Problem
	used  []usage // each GPU's usage before any move
	work  int     // steps left
	best  candidate
	found bool
}

// leastToFree is a lower bound on the number of slices that must leave GPU i for the request
// to fit on it, counting the largest movable slices first in each of memory, cores and split;
// false when the request does not fit even with every movable slice gone.
func (s *search) leastToFree(i int) (int, bool) {
	g, r := &s.p.GPUs[i], s.p.Request
	var movable []Slice
	rest := usage{}
	for _, sl := range g.Slices {
		if sl.Movable && s.p.Budget[sl.Job] > 0 {
			movable = append(movable, sl)
		} else {
			rest = rest.add(sl)
		}
	}
	need := r.memoryOn(g)
	if !fits(g, rest, need, r.Cores) {
		return 0, false
	}
	u := s.used[i]
	least := max(0, u.slices-g.Split+1)
	if r.Cores == wholeGPUCores {
		least = len(movable)
	}
	// The fewest slices, largest first, that bring a sum down to at most limit.
	fewest := func(total, limit int64, size func(Slice) int64) int {
		slices.SortFunc(movable, func(a, b Slice) int { return cmp.Compare(size(b), size(a)) })
		n := 0
		for ; total > limit && n < len(movable); n++ {
			total -= size(movable[n])
		}
		return n
	}
	least = max(least, fewest(u.memory, g.Memory-need, func(sl Slice) int64 { return sl.Memory }))
	coreLimit := int64(wholeGPUCores - r.Cores)
	if r.Cores == 0 {
		coreLimit = wholeGPUCores - 1
	}
	least = max(least, fewest(int64(u.cores), coreLimit, func(sl Slice) int64 { return int64(sl.Cores) }))
	return least, true
}

// tryGPU looks at GPU i's sets of k movable slices after whose leaving the request fits, from
// the cheapest, and keeps the first that can be placed if it comes before the best so far.
func (s *search) tryGPU(i, k int) {
	g, r := &s.p.GPUs[i], s.p.Request
	var eligible []int
	for j, sl := range g.Slices {
		if sl.Movable && s.p.Budget[sl.Job] > 0 {
			eligible = append(eligible, j)
		}
	}
	var sets []candidate
	lost := map[string]int{}
	set := make([]int, 0, k)
	var pick func(from int, u usage)
	pick = func(from int, u usage) {
		if s.work--; s.work < 0 {
			return
		}
		if len(set) == k {
			if fits(g, u, r.memoryOn(g), r.Cores) {
				c := candidate{gpu: i, slices: slices.Clone(set)}
				for _, j := range set {
					c.memory += g.Slices[j].Memory
					c.priority += int64(g.Slices[j].Priority)
				}
				sets = append(sets, c)
			}
			return
		}
		for n := from; n <= len(eligible)-(k-len(set)); n++ {
			sl := g.Slices[eligible[n]]
			if lost[sl.Job] >= s.p.Budget[sl.Job] {
				continue
			}
			lost[sl.Job]++
			set = append(set, eligible[n])
			pick(n+1, u.remove(sl))
			set = set[:len(set)-1]
			lost[sl.Job]--
		}
	}
	pick(0, s.used[i])
	slices.SortStableFunc(sets, func(a, b candidate) int { return a.compare(&b) })
	for _, c := range sets {
		if s.work <= 0 || (s.found && c.compare(&s.best) >= 0) {
			return
		}
		if s.place(&c) {
			s.best, s.found = c, true
			return
		}
	}
}

// place finds a GPU other than c's for each of c's slices, in room free before any move, and
// records them in c.to.
func (s *search) place(c *candidate) bool {
	g := &s.p.GPUs[c.gpu]
	order := slices.Clone(c.slices)
	slices.SortStableFunc(order, func(a, b int) int {
		return cmp.Or(cmp.Compare(g.Slices[b].Memory, g.Slices[a].Memory), cmp.Compare(g.Slices[b].Cores, g.Slices[a].Cores))
	})
	to := map[int]int{}
	u := s.used
	type state struct {
		memory int64
		split  int
		u      usage
	}
	var next func(n int) bool
	next = func(n int) bool {
		if n == len(order) {
			return true
		}
		sl := g.Slices[order[n]]
		var tried []state
		for t := range s.p.GPUs {
			if s.work--; s.work < 0 {
				return false
			}
			dst := &s.p.GPUs[t]
			if t == c.gpu || !fits(dst, u[t], sl.Memory, sl.Cores) || (s.p.Hosts != nil && !s.p.Hosts(&sl, dst)) {
				continue
			}
			// GPUs alike are alike for the pods placed after this one only while any GPU
			// with room may host them.
			if st := (state{dst.Memory, dst.Split, u[t]}); s.p.Hosts == nil {
				if slices.Contains(tried, st) {
					continue
				}
				tried = append(tried, st)
			}
			u[t] = u[t].add(sl)
			to[order[n]] = t
			ok := next(n + 1)
			u[t] = u[t].remove(sl)
			if ok {
				return true
			}
		}
		return false
	}
	if !next(0) {
		return false
	}
	c.to = make([]int, len(c.slices))
	for j, i := range c.slices {
		c.to[j] = to[i]
	}
	return true
}

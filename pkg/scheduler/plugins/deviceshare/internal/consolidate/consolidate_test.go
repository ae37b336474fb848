package consolidate

import (
	"fmt"
	"math/bits"
	"math/rand/v2"
	"slices"
	"testing"
)

// gpuMiB is each GPU's memory in the fragmented shape (a 24 GiB card).
const gpuMiB = 24576

// fragmented is the shape a consolidation exists for: 4 GPUs on 2 nodes, each holding 3 single-pod jobs of 6000
// MiB and 25 % of the cores that a controller recreates. 26,304 MiB are free in all, 6,576 on
// each GPU.
func fragmented() []GPU {
	var gpus []GPU
	for g := range 4 {
		gpu := GPU{ID: fmt.Sprintf("gpu-%d", g), Node: fmt.Sprintf("node-%d", g/2), Memory: gpuMiB, Split: 10}
		for p := range 3 {
			pod := fmt.Sprintf("pod-%d-%d", g, p)
			gpu.Slices = append(gpu.Slices, Slice{Pod: pod, Job: pod, Memory: 6000, Cores: 25, Movable: true})
		}
		gpus = append(gpus, gpu)
	}
	return gpus
}

// budgetOne lets every job of gpus lose one pod (single-pod jobs of minMember 0 after the
// move, or jobs above their minimum by one).
func budgetOne(gpus []GPU) map[string]int {
	b := map[string]int{}
	for _, g := range gpus {
		for _, s := range g.Slices {
			b[s.Job] = 1
		}
	}
	return b
}

func TestFragmentedClusterFreesOneGPU(t *testing.T) {
	gpus := fragmented()
	p := Problem{GPUs: gpus, Budget: budgetOne(gpus), Request: Request{Memory: 20000, Cores: 50}}
	plan, ok := Search(p, DefaultLimits)
	if !ok {
		t.Fatal("no plan for a request that fits once one GPU's 3 pods move")
	}
	if len(plan.Moves) != 3 {
		t.Errorf("%d moves, want 3 (20,000 MiB needs all three 6,000 MiB pods off a 24,576 MiB GPU): %+v", len(plan.Moves), plan)
	}
	if err := validate(p, plan); err != nil {
		t.Error(err)
	}

	// The bound: no set of more than MaxMoves pods is tried, nor more work done than MaxWork.
	if plan, ok := Search(p, Limits{MaxMoves: 2, MaxWork: DefaultLimits.MaxWork}); ok {
		t.Errorf("plan %+v with MaxMoves 2, where 3 moves are needed", plan)
	}
	if plan, ok := Search(p, Limits{MaxMoves: 8, MaxWork: 10}); ok {
		t.Errorf("plan %+v within 10 steps", plan)
	}

	// Only node-1's GPUs may take the request.
	p.Request.Nodes = []string{"node-1"}
	plan, ok = Search(p, DefaultLimits)
	if !ok || len(plan.Moves) != 3 || (plan.GPU != "gpu-2" && plan.GPU != "gpu-3") {
		t.Errorf("request restricted to node-1 got %+v, %v; want 3 moves freeing gpu-2 or gpu-3", plan, ok)
	}
	if err := validate(p, plan); err != nil {
		t.Error(err)
	}
}

func TestPodsThatMayNotMoveStay(t *testing.T) {
	// A gang at its minimum (budget 0) holds gpu-0, a bare pod (no controller) of 6000 MiB
	// gpu-1: the request gets gpu-2 or gpu-3, though the other pods of gpu-0 and gpu-1 are
	// smaller.
	gpus := fragmented()
	budget := budgetOne(gpus)
	for i := range gpus[0].Slices {
		gpus[0].Slices[i].Job = "gang"
		gpus[0].Slices[i].Memory = 5000
	}
	budget["gang"] = 0
	gpus[1].Slices[0].Movable = false
	gpus[1].Slices[1].Memory = 1000
	gpus[1].Slices[2].Memory = 1000
	p := Problem{GPUs: gpus, Budget: budget, Request: Request{Memory: 20000, Cores: 50}}
	plan, ok := Search(p, DefaultLimits)
	if !ok {
		t.Fatal("no plan")
	}
	if plan.GPU != "gpu-2" && plan.GPU != "gpu-3" {
		t.Errorf("the request gets %s, want gpu-2 or gpu-3: %+v", plan.GPU, plan)
	}
	if err := validate(p, plan); err != nil {
		t.Error(err)
	}

	// With every other GPU's pods bare, nothing helps.
	for g := 2; g < 4; g++ {
		for i := range gpus[g].Slices {
			gpus[g].Slices[i].Movable = false
		}
	}
	if plan, ok := Search(p, DefaultLimits); ok {
		t.Errorf("plan %+v moves a pod that may not move", plan)
	}

	// A gang one pod above its minimum loses one pod, not two: a request that needs two of
	// its pods gone fits nowhere.
	budget["gang"] = 1
	p.Request = Request{Memory: 19000, Cores: 10}
	if plan, ok := Search(p, DefaultLimits); ok {
		t.Errorf("plan %+v takes two pods of a gang that may lose one", plan)
	}
	budget["gang"] = 2
	if plan, ok := Search(p, DefaultLimits); !ok || len(plan.Moves) != 2 || plan.GPU != "gpu-0" {
		t.Errorf("gang of budget 2: %+v, %v; want 2 moves freeing gpu-0", plan, ok)
	}
}

func TestPlacementBacktracks(t *testing.T) {
	// gpu-0's pods of 5000, 4000 and 3000 MiB must leave for the request. Placed largest
	// first on the first GPU with room, 5000 goes to gpu-1 and 4000 to gpu-2, leaving no
	// room for 3000; the plan puts 5000 on gpu-2 and the other two on gpu-1.
	slice := func(pod string, memory int64) Slice {
		return Slice{Pod: pod, Job: pod, Memory: memory, Cores: 10, Movable: true}
	}
	gpus := []GPU{
		{ID: "gpu-0", Node: "node-0", Memory: gpuMiB, Split: 4, Slices: []Slice{slice("a", 5000), slice("b", 4000), slice("c", 3000)}},
		{ID: "gpu-1", Node: "node-1", Memory: gpuMiB, Split: 4, Slices: []Slice{slice("d", gpuMiB-7000)}},
		{ID: "gpu-2", Node: "node-1", Memory: gpuMiB, Split: 4, Slices: []Slice{slice("e", gpuMiB-5000)}},
	}
	p := Problem{GPUs: gpus, Budget: budgetOne(gpus), Request: Request{Memory: gpuMiB, Cores: 100, Nodes: []string{"node-0"}}}
	plan, ok := Search(p, DefaultLimits)
	want := Plan{GPU: "gpu-0", Moves: []Move{{"a", "gpu-0", "gpu-2"}, {"b", "gpu-0", "gpu-1"}, {"c", "gpu-0", "gpu-1"}}}
	if !ok || !slices.Equal(plan.Moves, want.Moves) || plan.GPU != want.GPU {
		t.Errorf("got %+v, %v; want %+v", plan, ok, want)
	}
	if err := validate(p, plan); err != nil {
		t.Error(err)
	}
}

// TestSearchMatchesBruteForce compares Search with every subset of the movable pods of every
// GPU placed every possible way, on small generated clusters: the same answer (a plan or
// none), the same number of moves, the same memory and priority moved; and every plan is
// valid.
func TestSearchMatchesBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(52, 1))
	multi := 0
	for c := range 3000 {
		p := generate(rng)
		plan, ok := Search(p, DefaultLimits)
		want, wantOK := bruteForce(p)
		if ok != wantOK {
			t.Fatalf("case %d: Search found a plan %v, brute force %v (%+v)\nproblem %+v", c, ok, wantOK, plan, p)
		}
		if !ok {
			continue
		}
		if len(plan.Moves) > 1 {
			multi++
		}
		if err := validate(p, plan); err != nil {
			t.Fatalf("case %d: %v\nproblem %+v", c, err, p)
		}
		if got := costOf(p, plan); got != want {
			t.Fatalf("case %d: plan %+v costs %+v, the cheapest %+v\nproblem %+v", c, plan, got, want, p)
		}
	}
	if multi < 100 {
		t.Errorf("only %d of 3000 cases need more than one move; the generator should make more", multi)
	}
}

// generate is 2-4 GPUs of up to 5 slices each (sizes, cores, priorities, eligibility and
// jobs at random) and a request for memory and cores, sometimes on one node only.
func generate(rng *rand.Rand) Problem {
	var p Problem
	p.Budget = map[string]int{}
	jobs := []string{"a", "b", "c", "d", "e"}
	for _, j := range jobs {
		p.Budget[j] = rng.IntN(4)
	}
	memories := []int64{12000, gpuMiB, gpuMiB, gpuMiB}
	cores := []int32{0, 10, 10, 25, 25, 30, 50, 100}
	n := 2 + rng.IntN(3)
	for g := range n {
		gpu := GPU{ID: fmt.Sprintf("gpu-%d", g), Node: fmt.Sprintf("node-%d", g/2), Memory: memories[rng.IntN(len(memories))], Split: 3 + rng.IntN(4)}
		u := usage{}
		for i := range 1 + rng.IntN(5) {
			s := Slice{
				Pod: fmt.Sprintf("pod-%d-%d", g, i), Job: jobs[rng.IntN(len(jobs))],
				Memory: 500 * (1 + rng.Int64N(14)), Cores: cores[rng.IntN(len(cores))],
				Priority: rng.Int32N(4), Movable: rng.IntN(4) > 0,
			}
			if fits(&gpu, u, s.Memory, s.Cores) {
				gpu.Slices = append(gpu.Slices, s)
				u = u.add(s)
			}
		}
		p.GPUs = append(p.GPUs, gpu)
	}
	// Mostly a request larger than any GPU's free memory, as the consolidation step asks.
	p.Request = Request{Memory: 1000 * (1 + rng.Int64N(gpuMiB/1000)), Cores: cores[rng.IntN(len(cores))]}
	if rng.IntN(4) > 0 {
		var free int64
		for _, g := range p.GPUs {
			used := int64(0)
			for _, s := range g.Slices {
				used += s.Memory
			}
			free = max(free, g.Memory-used)
		}
		p.Request.Memory = free + 500*(1+rng.Int64N(10))
	}
	if rng.IntN(4) == 0 {
		p.Request.Nodes = []string{"node-1"}
	}
	// Sometimes a GPU the request may not use, or on which it books more (a share of the
	// GPU, a context reserve), and pods that only some GPUs may host.
	for g := range p.GPUs {
		switch rng.IntN(8) {
		case 0:
			p.GPUs[g].Closed = true
		case 1:
			p.GPUs[g].RequestMemory = p.Request.Memory + 500
		}
	}
	if rng.IntN(4) == 0 {
		p.Hosts = hostsByName
	}
	return p
}

// hostsByName lets a pod whose name ends in an odd digit go only to gpu-0 and gpu-2: a
// filter that differs between GPUs alike, as a pod's node or type filters do.
func hostsByName(s *Slice, g *GPU) bool {
	if (s.Pod[len(s.Pod)-1]-'0')%2 == 0 {
		return true
	}
	return g.ID == "gpu-0" || g.ID == "gpu-2"
}

// requestOn is the request's slice on GPU g.
func requestOn(p Problem, g int) Slice {
	return Slice{Pod: "request", Memory: p.Request.memoryOn(&p.GPUs[g]), Cores: p.Request.Cores}
}

type cost struct {
	moves    int
	memory   int64
	priority int64
}

func (c cost) less(d cost) bool {
	if c.moves != d.moves {
		return c.moves < d.moves
	}
	if c.memory != d.memory {
		return c.memory < d.memory
	}
	return c.priority < d.priority
}

type ref struct{ gpu, slice int }

func costOf(p Problem, plan Plan) cost {
	c := cost{moves: len(plan.Moves)}
	for _, m := range plan.Moves {
		for _, g := range p.GPUs {
			for _, s := range g.Slices {
				if s.Pod == m.Pod {
					c.memory += s.Memory
					c.priority += int64(s.Priority)
				}
			}
		}
	}
	return c
}

// bruteForce is the cheapest plan's cost by enumerating every subset of movable pods (of any
// GPU) within the jobs' budgets, every GPU for the request, and every placement of the moved
// pods on GPUs other than their own and the request's, in room free before any move.
func bruteForce(p Problem) (cost, bool) {
	var movable []ref
	for g, gpu := range p.GPUs {
		for i, s := range gpu.Slices {
			if s.Movable {
				movable = append(movable, ref{g, i})
			}
		}
	}
	masks := make([]int, 1<<len(movable))
	for m := range masks {
		masks[m] = m
	}
	slices.SortStableFunc(masks, func(a, b int) int { return bits.OnesCount(uint(a)) - bits.OnesCount(uint(b)) })
	var best cost
	found := false
	for _, mask := range masks {
		var set []ref
		lost := map[string]int{}
		c := cost{}
		for b, r := range movable {
			if mask&(1<<b) != 0 {
				s := p.GPUs[r.gpu].Slices[r.slice]
				set = append(set, r)
				lost[s.Job]++
				c.moves++
				c.memory += s.Memory
				c.priority += int64(s.Priority)
			}
		}
		if found && c.moves > best.moves {
			break
		}
		if found && !c.less(best) {
			continue
		}
		overBudget := false
		for j, n := range lost {
			overBudget = overBudget || n > p.Budget[j]
		}
		if overBudget {
			continue
		}
		for t := range p.GPUs {
			if p.GPUs[t].Closed || (len(p.Request.Nodes) > 0 && !slices.Contains(p.Request.Nodes, p.GPUs[t].Node)) {
				continue
			}
			var left []Slice
			for i, s := range p.GPUs[t].Slices {
				if !slices.Contains(set, ref{t, i}) {
					left = append(left, s)
				}
			}
			if !holds(p.GPUs[t], append(left, requestOn(p, t))) {
				continue
			}
			if placeAll(p, set, t, make([][]Slice, len(p.GPUs))) {
				best, found = c, true
				break
			}
		}
	}
	return best, found
}

// placeAll tries every GPU for set[0], then the rest, each GPU's incoming slices added to all
// it holds now (a GPU that cannot hold some of them cannot hold them all).
func placeAll(p Problem, set []ref, freed int, incoming [][]Slice) bool {
	if len(set) == 0 {
		return true
	}
	r := set[0]
	for g := range p.GPUs {
		if g == freed || g == r.gpu || (p.Hosts != nil && !p.Hosts(&p.GPUs[r.gpu].Slices[r.slice], &p.GPUs[g])) {
			continue
		}
		incoming[g] = append(incoming[g], p.GPUs[r.gpu].Slices[r.slice])
		ok := holds(p.GPUs[g], append(slices.Clone(p.GPUs[g].Slices), incoming[g]...)) &&
			placeAll(p, set[1:], freed, incoming)
		incoming[g] = incoming[g][:len(incoming[g])-1]
		if ok {
			return true
		}
	}
	return false
}

// holds says whether gpu can hold all of ss at once, in the words of the rule and not through
// fits: memory, cores and split; a slice of 100 cores alone; a slice of no core limit only
// where the others book less than 100.
func holds(gpu GPU, ss []Slice) bool {
	var memory int64
	var cores int32
	unlimited, whole := false, false
	for _, s := range ss {
		memory += s.Memory
		cores += s.Cores
		unlimited = unlimited || s.Cores == 0
		whole = whole || s.Cores == wholeGPUCores
	}
	return len(ss) <= gpu.Split && memory <= gpu.Memory && cores <= wholeGPUCores &&
		(!whole || len(ss) == 1) && (!unlimited || cores < wholeGPUCores)
}

// validate checks a plan on its own: each moved pod may move, within its job's budget, from
// the GPU the request gets to another GPU; each GPU that receives pods holds them beside all
// it holds now; the request's GPU is on a node it may use and holds it once the pods left.
func validate(p Problem, plan Plan) error {
	index := map[string]int{}
	for g, gpu := range p.GPUs {
		index[gpu.ID] = g
	}
	freed, ok := index[plan.GPU]
	if !ok {
		return fmt.Errorf("plan %+v: no GPU %s", plan, plan.GPU)
	}
	if p.GPUs[freed].Closed || (len(p.Request.Nodes) > 0 && !slices.Contains(p.Request.Nodes, p.GPUs[freed].Node)) {
		return fmt.Errorf("plan %+v: %s is not a GPU the request may use", plan, plan.GPU)
	}
	incoming := make([][]Slice, len(p.GPUs))
	moved := map[string]bool{}
	lost := map[string]int{}
	for _, m := range plan.Moves {
		if m.From != plan.GPU {
			return fmt.Errorf("plan %+v: %s moves from %s, not the request's GPU", plan, m.Pod, m.From)
		}
		to, ok := index[m.To]
		if !ok || to == freed {
			return fmt.Errorf("plan %+v: %s moves to %s", plan, m.Pod, m.To)
		}
		i := slices.IndexFunc(p.GPUs[freed].Slices, func(s Slice) bool { return s.Pod == m.Pod })
		if i < 0 || moved[m.Pod] {
			return fmt.Errorf("plan %+v: %s is not on %s once", plan, m.Pod, m.From)
		}
		s := p.GPUs[freed].Slices[i]
		if !s.Movable {
			return fmt.Errorf("plan %+v: %s may not move", plan, m.Pod)
		}
		if p.Hosts != nil && !p.Hosts(&s, &p.GPUs[to]) {
			return fmt.Errorf("plan %+v: %s may not go to %s", plan, m.Pod, m.To)
		}
		if lost[s.Job]++; lost[s.Job] > p.Budget[s.Job] {
			return fmt.Errorf("plan %+v: job %s loses %d pods, more than its %d", plan, s.Job, lost[s.Job], p.Budget[s.Job])
		}
		moved[m.Pod] = true
		incoming[to] = append(incoming[to], s)
	}
	for g, in := range incoming {
		if len(in) > 0 && !holds(p.GPUs[g], append(slices.Clone(p.GPUs[g].Slices), in...)) {
			return fmt.Errorf("plan %+v: %s is over memory, cores or split", plan, p.GPUs[g].ID)
		}
	}
	left := []Slice{requestOn(p, freed)}
	for _, s := range p.GPUs[freed].Slices {
		if !moved[s.Pod] {
			left = append(left, s)
		}
	}
	if !holds(p.GPUs[freed], left) {
		return fmt.Errorf("plan %+v: the request does not fit on %s after the moves", plan, plan.GPU)
	}
	return nil
}

package deviceshare

import (
	"slices"

	"k8s.io/klog/v2"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/plugins/deviceshare/internal/consolidate"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/vgpu"
)

// makeRoom is the plugin's answer to the consolidate action (framework.RoomFn): for a pod of
// one vGPU that no GPU has room for, the fewest running vGPU pods to move (see
// internal/consolidate) so that one GPU of a node the pod may otherwise use takes it.
//
// The GPUs are seen as they will be (future.go): releasing pods gone, pipelined pods'
// promises booked. A pod may move when the action allows it, it holds one vGPU on one
// node, and its job's budget allows; it may go to a GPU its own filters accept, of the same
// context reserve (and, for a share of the GPU's memory, the same memory), on a node whose
// other predicates pass and whose free CPU and memory take it (its own node always does).
// Where the pods' bookings on a GPU do not add up to what the ledger books (a booking the
// plugin cannot attribute), the GPU takes no part.
//
// A pod asking for several vGPUs, a MIG instance or its group's spread gets no moves: the
// search frees one GPU for one slice.
func (p *plugin) makeRoom(ask framework.RoomAsk) (framework.Room, bool, bool) {
	r := p.request(ask.Task)
	if r.err != nil || !r.wantsGPUs() {
		return framework.Room{}, false, true
	}
	if r.vgpus != 1 || r.wantsMIG || r.groupSpread {
		return framework.Room{}, false, false
	}
	c := r.containers[slices.IndexFunc(r.containers, func(c vgpu.ContainerRequest) bool { return c.Count > 0 })]
	b := roomBuilder{p: p, ask: ask, nodeOf: map[string]*api.NodeInfo{}, tasks: map[string]*api.TaskInfo{},
		budget: map[string]int{}, requests: map[string]movedRequest{}, hosts: map[hostKey]bool{}, slices: map[string]consolidate.Slice{}}
	for _, node := range ask.Nodes {
		b.addNode(node, r, c)
	}
	problem := consolidate.Problem{GPUs: b.gpus, Budget: b.budget, Hosts: b.mayHost,
		Request: consolidate.Request{Cores: c.Cores}}
	plan, ok := consolidate.Search(problem, consolidate.DefaultLimits)
	if !ok {
		return framework.Room{}, false, false
	}
	room := framework.Room{Node: b.nodeOf[plan.GPU], Device: plan.GPU}
	for _, m := range plan.Moves {
		t := b.tasks[m.Pod]
		room.Moves = append(room.Moves, t)
		if p.heldFor == nil {
			p.heldFor = map[api.TaskID]heldRoom{}
		}
		p.heldFor[t.UID] = heldRoom{job: t.Job, gpu: m.To, slice: b.slices[m.Pod]}
	}
	return room, true, false
}

// heldRoom is the room a moved pod is to find on a GPU: later searches in the session leave
// it alone while the pod is leaving (evicted in a statement not discarded).
type heldRoom struct {
	job   api.JobID
	gpu   string
	slice consolidate.Slice
}

// leaving says whether the task is being evicted in the session.
func (p *plugin) leaving(job api.JobID, uid api.TaskID) bool {
	j := p.jobs[job]
	if j == nil {
		return false
	}
	t := j.Tasks[uid]
	return t != nil && t.Status == api.Releasing
}

// roomBuilder lays the session's GPUs out for the search.
type roomBuilder struct {
	p   *plugin
	ask framework.RoomAsk
	// gpus are the GPUs in node order; nodeOf a GPU's node by ID, tasks a slice's by pod.
	gpus   []consolidate.GPU
	nodeOf map[string]*api.NodeInfo
	tasks  map[string]*api.TaskInfo
	budget map[string]int
	// requests are the moved pods' vGPU requests, reserves and memory their GPUs' (for
	// mayHost); hosts remembers which node takes which pod.
	requests map[string]movedRequest
	hosts    map[hostKey]bool
	// slices are the movable slices by pod.
	slices map[string]consolidate.Slice
}

type hostKey struct{ task, node string }

// movedRequest is what mayHost needs of a movable pod: its request, the context reserve and
// memory of the GPU it is on.
type movedRequest struct {
	r               *podRequest
	reserve, memory int32
	share           bool
}

// addNode adds the node's usable GPUs and their slices.
func (b *roomBuilder) addNode(node *api.NodeInfo, r *podRequest, c vgpu.ContainerRequest) {
	p := b.p
	l := ledgerOf(node)
	if !hasGPUs(l) || p.unusable(l) != nil {
		return
	}
	f := p.future(node, l)
	if f == nil {
		f = l
	}
	target := b.ask.Fits(r.task, node) && onlyDevicesShort(r.task, node, p)
	slicesOf := make([][]consolidate.Slice, len(f.gpus))
	add := func(t *api.TaskInfo, bk booking, movable bool) {
		s := consolidate.Slice{Pod: string(bk.task), Job: string(t.Job), Memory: int64(bk.memory), Cores: bk.cores,
			Priority: p.jobPriority(t), Movable: movable}
		slicesOf[bk.gpu] = append(slicesOf[bk.gpu], s)
		if movable {
			b.slices[s.Pod] = s
		}
	}
	if l.derived != nil {
		for _, bk := range l.derived.bookings {
			t := node.Tasks[bk.task]
			if t == nil || t.Status == api.Releasing {
				continue
			}
			movable := len(l.derived.of(bk.task)) == 1 && (t.Status == api.Running || t.Status == api.Bound) &&
				b.ask.Movable(t) && b.movable(t, f, bk)
			add(t, bk, movable)
		}
	}
	for uid, t := range node.Tasks {
		if pl, ok := p.placed[uid]; ok && t.Status != api.Pipelined {
			for bk := range f.placedBookings(t, pl) {
				add(t, bk, false)
			}
		}
		if pd, ok := p.promised[uid]; ok && t.Status == api.Pipelined {
			for _, bk := range f.appendBookings(nil, t, pd, nil) {
				add(t, bk, false)
			}
		}
	}
	for i := range f.gpus {
		g := &f.gpus[i]
		if g.sharing == nil || g.info.Mode == vgpu.ModeMIG || !g.healthy || !sumsTo(slicesOf[i], g.used) {
			continue
		}
		for uid, h := range p.heldFor {
			if h.gpu == g.info.UUID && p.leaving(h.job, uid) {
				held := h.slice
				held.Movable = false
				slicesOf[i] = append(slicesOf[i], held)
			}
		}
		cg := consolidate.GPU{ID: g.info.UUID, Node: node.Name, Memory: int64(g.memory), Split: int(g.slots),
			Slices: slicesOf[i], Closed: !target || r.filter(g) != fits,
			RequestMemory: int64(c.BookedOn(g.memory, g.reserve))}
		b.nodeOf[cg.ID] = node
		b.gpus = append(b.gpus, cg)
	}
}

// movable records a movable pod's request and GPU for mayHost, and its job's budget.
func (b *roomBuilder) movable(t *api.TaskInfo, f *ledger, bk booking) bool {
	r := newPodRequest(t, b.p.names)
	if r.err != nil || r.vgpus != 1 || r.wantsMIG || r.groupSpread {
		return false
	}
	g := &f.gpus[bk.gpu]
	share := false
	for _, c := range r.containers {
		share = share || (c.Count > 0 && c.Memory == 0)
	}
	b.requests[string(t.UID)] = movedRequest{r: r, reserve: g.reserve, memory: g.memory, share: share}
	b.tasks[string(t.UID)] = t
	if _, ok := b.budget[string(t.Job)]; !ok {
		b.budget[string(t.Job)] = b.ask.Budget(t.Job)
	}
	return true
}

// mayHost says whether the GPU may take the moved slice (see makeRoom).
func (b *roomBuilder) mayHost(s *consolidate.Slice, g *consolidate.GPU) bool {
	m := b.requests[s.Pod]
	node := b.nodeOf[g.ID]
	dst := b.gpuOf(node, g.ID)
	if dst == nil || dst.reserve != m.reserve || (m.share && dst.memory != m.memory) || m.r.filter(dst) != fits {
		return false
	}
	t := b.tasks[s.Pod]
	if t.NodeName == node.Name {
		return true
	}
	key := hostKey{s.Pod, node.Name}
	ok, seen := b.hosts[key]
	if !seen {
		ok = b.ask.Fits(t, node) && onlyDevicesShort(t, node, b.p)
		b.hosts[key] = ok
	}
	return ok
}

// gpuOf is the node's GPU of that UUID in the session's ledger.
func (b *roomBuilder) gpuOf(node *api.NodeInfo, uuid string) *gpu {
	l := ledgerOf(node)
	if l == nil {
		return nil
	}
	if i := l.index(uuid); i >= 0 {
		return &l.gpus[i]
	}
	return nil
}

// onlyDevicesShort: of the task's requests, only the plugin's vGPU resources exceed what the
// node will have free (the devices are the plugin's to judge, GPU by GPU).
func onlyDevicesShort(t *api.TaskInfo, node *api.NodeInfo, p *plugin) bool {
	for _, name := range t.InitResreq.Exceeding(node.FutureIdle(), api.MissingAsZero) {
		if name != p.names.Count && name != p.names.Memory && name != p.names.Cores && name != p.names.MemoryPercentage {
			klog.V(5).InfoS("Node lacks more than GPU room", "pod", klog.KRef(t.Namespace, t.Name), "node", node.Name, "resource", name)
			return false
		}
	}
	return true
}

// sumsTo says whether the slices book exactly what the ledger's usage says.
func sumsTo(ss []consolidate.Slice, u usage) bool {
	var memory int64
	var cores int32
	for _, s := range ss {
		memory += s.Memory
		cores += s.Cores
	}
	return len(ss) == int(u.devices) && memory == u.memory && cores == u.cores
}

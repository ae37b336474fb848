// Package deviceshare is the vGPU plugin: it fits pods' vGPU requests onto the GPUs each node
// publishes, orders GPUs and nodes by binpack or spread, and hands every placed pod its device
// assignment inside the Binding, in the annotation protocol docs/protocol.md describes.
//
// Where the state lives:
//
//   - The cache keeps a GPU ledger per node (Deriver), derived from the node's register
//     annotation and its pods' assignments after every change, so a restarted scheduler never
//     double-books a slot.
//   - A session works on its own copy of each ledger. A tentative placement books its vGPUs in
//     that copy and sets the task's BindAnnotations; undoing it takes back exactly the same
//     vGPUs and annotations. Only Commit sends anything, and then inside the Binding.
//
// Node order: with deviceshare.SchedulePolicy set, a node scores its GPUs with the pod booked
// (see fitter) times deviceshare.ScheduleWeight, which is 1 when left out (upstream: 0, which
// ignores the policy between nodes); an explicit 0 keeps upstream's behaviour.
//
// Cost: what a pod asks is read once per task (podRequest), so checking a node for a pod that
// wants no GPU costs a pointer comparison, and checking one for a vGPU pod allocates nothing
// (the pod-group spread policy aside, which reads its group's assignments). Each node's
// ledger remembers how the last request shape fitted it until a pod is booked there, so
// scoring a node after its check, and checking it for the next pod of the same shape (the
// rest of a gang), do not fit again.
//
// With deviceshare.NodeLockEnable a placed vGPU task carries the node lock as a pre-bind step
// (api.PreBindStep, nodelock.go), which the cache's binder runs before it sends the Binding.
//
// What the ledgers book is reported too: each session close sets upstream's vGPU gauges
// (Shared's, metrics.go) from them, and a task holding vGPUs counts what its devices book in its
// queue's status.allocated (queueUsage).
//
// The vGPU resource names come from the device ConfigMap the deviceshare.KnownGeometriesCM*
// arguments name (the shipped defaults while there is none). It is watched by Shared, the
// plugin's component, which outlives sessions and is configured with every configuration the
// scheduler loads; a session reads the configuration in use when it opens, the same one the
// cache's ledgers follow (see Deriver).
//
// GPUs in mig mode are shared by MIG instances of the ConfigMap's knownMigGeometries (see
// migSharing); one whose type has no geometry there takes no vGPU, and says so.
//
// A vgpu-memory request books, and its assignment carries, the request plus the CUDA context
// reserve the ConfigMap's contextReserves give its GPU's model (vgpu.ContextReserve; none by
// default), so that the MiB asked are the MiB a process can allocate under HAMi-core. The
// ledger tells the reserve apart (booking.reserve): the queue counts requests without it, the
// gauges show it (docs/protocol.md, "Context reserve").
//
// Preemption and reclaim (future.go, victimselect.go): the vGPUs of pods being deleted stay
// booked until they are gone, and a pipelined task books none until it is allocated; but the
// session's checks see a releasing pod's vGPUs as free and a pipelined task's promised ones
// as taken, as FutureIdle does for CPU, and the plugin picks, GPU by GPU, the fewest victims
// that make room for a vGPU preemptor.
//
// Not done yet: writing the handshake back (it is only read, see Deriver).
package deviceshare

import (
	"errors"
	"fmt"
	"iter"
	"time"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/conf"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/vgpu"
)

// PluginName is the name configurations use.
const PluginName = "deviceshare"

// assignmentKeys are the pod annotations a placement sets in the task's BindAnnotations.
var assignmentKeys = [...]string{
	vgpu.AssignedNodeAnnotation, vgpu.AssignedTimeAnnotation, vgpu.AssignedDevicesAnnotation,
	vgpu.DevicesToAllocateAnnotation, vgpu.BindPhaseAnnotation, vgpu.BindTimeAnnotation,
}

// plugin is built for one session. Its checks keep scratch state between calls, which is
// safe because actions run, and search nodes, one at a time.
type plugin struct {
	args arguments
	// shared outlives the session: it is only read, and written at close by publishMetrics.
	shared *Shared
	// names are the resource names of the device ConfigMap in force at session open.
	names    vgpu.ResourceNames
	verdicts verdicts
	// now is the clock: the session's time for the handshake, a placement's for its
	// annotations.
	now func() time.Time

	sessionTime time.Time
	// last is the request of the task checked last: a task is checked against many nodes in
	// a row.
	last *podRequest
	// shapeIDs numbers the shape keys of the requests read (podRequest.appendShapeKey);
	// shapes counts the numbers given. keyBuf is scratch for the keys.
	shapeIDs map[string]uint64
	shapes   uint64
	keyBuf   []byte
	fitter   fitter
	// placed holds the placement of every task this session placed, for the exact undo.
	placed map[api.TaskID]placement
	// promised holds the vGPUs every task this session pipelined is promised on its node's
	// future GPUs (future.go): nothing is booked, and the task gets no assignment until a
	// later cycle allocates it.
	promised map[api.TaskID]vgpu.PodDevices
	// scratch holds the future view of the node checked last (plugin.future).
	scratch ledger
	// jobPriority is the priority of a task's job (its PodGroup's PriorityClass), which ranks
	// victims of different jobs; 0 for a task without one.
	jobPriority func(*api.TaskInfo) int32
	// jobs are the session's jobs; heldFor the room the pods this session moves are to find
	// elsewhere (room.go).
	jobs    map[api.JobID]*api.JobInfo
	heldFor map[api.TaskID]heldRoom
}

// placement is a task's placement in the session: its assignment, and, where it holds some
// context reserve, what each of its devices books on the node's GPUs with the reserve told
// apart (for the metrics and the queue). Without reserves, the common case, the bookings are
// read off the assignment instead (placedBookings), so that a placement allocates nothing
// more.
type placement struct {
	devices vgpu.PodDevices
	// bookings is nil when no device holds a reserve.
	bookings []booking
}

// placedBookings yields the bookings of task t's placement on the ledger's GPUs.
func (l *ledger) placedBookings(t *api.TaskInfo, pl placement) iter.Seq[booking] {
	return func(yield func(booking) bool) {
		if pl.bookings != nil {
			for _, b := range pl.bookings {
				if !yield(b) {
					return
				}
			}
			return
		}
		for _, devices := range pl.devices {
			for _, d := range devices {
				if i := l.index(d.PhysicalUUID()); i >= 0 && !yield(booking{task: t.UID, pod: t.Name, gpu: int32(i), memory: d.UsedMemory, cores: d.UsedCores}) {
					return
				}
			}
		}
	}
}

// NewBuilder is the plugin's builder, over the state every session shares. The builder
// checks the arguments only (a malformed one is an error naming it); which device ConfigMap
// is in use is Shared.Configure's business.
func NewBuilder(shared *Shared) framework.PluginBuilder {
	return func(args conf.Arguments) (framework.Plugin, error) {
		a, err := parseArguments(args)
		if err != nil {
			return nil, err
		}
		p := &plugin{args: a, shared: shared, now: time.Now, placed: map[api.TaskID]placement{},
			promised: map[api.TaskID]vgpu.PodDevices{}, shapeIDs: map[string]uint64{}}
		p.fitter = fitter{policy: a.policy, assignments: p.assignmentOf}
		return p, nil
	}
}

func (p *plugin) Name() string { return PluginName }

func (p *plugin) OnSessionOpen(ssn *framework.Session) {
	if !p.args.vgpuEnable {
		return
	}
	p.open(p.now())
	p.jobs = ssn.Jobs
	p.jobPriority = func(t *api.TaskInfo) int32 {
		if job := ssn.JobFor(t); job != nil {
			return job.Priority
		}
		return 0
	}
	ssn.AddPrePredicateFn(PluginName, p.prePredicate)
	ssn.AddPredicateFn(PluginName, p.predicate)
	ssn.AddSamePredicatesFn(PluginName, p.samePredicates)
	if p.args.weight > 0 {
		ssn.AddNodeOrderFn(PluginName, p.nodeOrder)
	}
	ssn.AddEventHandler(&framework.EventHandler{AllocateFunc: p.allocate, DeallocateFunc: p.deallocate})
	ssn.AddQueueUsageFn(PluginName, p.queueUsage(ssn.Nodes))
	ssn.AddVictimSelectFn(PluginName, p.selectVictims)
	ssn.AddRoomFn(PluginName, p.makeRoom)
}

// open reads what the session holds to: the resource names of the device configuration in
// use (the one the cache's ledgers follow), and the session's time. It never waits.
func (p *plugin) open(now time.Time) {
	p.names = p.shared.devices.InUse().ResourceNames()
	p.verdicts = newVerdicts(p.names)
	p.sessionTime = now
}

// OnSessionClose publishes the vGPU metrics, the session's placements and the vGPU pods
// still waiting included. With vGPU scheduling off there are none, and those an earlier
// configuration published go.
func (p *plugin) OnSessionClose(ssn *framework.Session) {
	if !p.args.vgpuEnable {
		p.publishMetrics(nil, nil)
		return
	}
	p.publishMetrics(ssn.Nodes, p.pendingJobs(ssn.Jobs))
}

// request returns the task's vGPU request, reading it when the task is not the last one seen.
func (p *plugin) request(task *api.TaskInfo) *podRequest {
	if p.last == nil || p.last.task != task {
		r := newPodRequest(task, p.names)
		r.shape = p.shapeOf(r)
		p.last = r
	}
	return p.last
}

// shapeOf numbers the request's shape: pods that ask the same of GPUs, as the pods of a
// gang or a deployment do, share a number and so the nodes' fit memos. A pod-group spread
// request fits by where its group is as well, so it shares its number with no other.
func (p *plugin) shapeOf(r *podRequest) uint64 {
	if r.groupSpread {
		p.shapes++
		return p.shapes
	}
	p.keyBuf = r.appendShapeKey(p.keyBuf[:0])
	if id, ok := p.shapeIDs[string(p.keyBuf)]; ok {
		return id
	}
	p.shapes++
	p.shapeIDs[string(p.keyBuf)] = p.shapes
	return p.shapes
}

// fitOn is how the request fits the node's GPUs (fitter.fit without the assignment),
// through the ledger's memo: a search asks the same of hundreds of nodes for pod after pod
// of one shape, and a node's GPUs change only when a pod is booked there.
func (p *plugin) fitOn(r *podRequest, node *api.NodeInfo, l *ledger) (float64, constraint) {
	if m := l.lastFit; m.shape == r.shape {
		return m.score, m.failed
	}
	score, _, failed := p.fitter.fit(r, node, l, false)
	l.lastFit = fitMemo{shape: r.shape, score: score, failed: failed}
	return score, failed
}

// prePredicate refuses a pod whose vGPU requests or device annotations cannot be read: no
// node can take it, and the error says which container, resource or annotation is wrong.
func (p *plugin) prePredicate(task *api.TaskInfo) error {
	return p.request(task).err
}

// predicate checks that the node's GPUs can take every vGPU of the pod, now or once the
// node's releasing pods are gone (future.go); the reason names the constraint that fails now.
func (p *plugin) predicate(task *api.TaskInfo, node *api.NodeInfo) *api.Status {
	r := p.request(task)
	if r.err != nil {
		return &api.Status{Code: api.UnschedulableAndUnresolvable, Reasons: []string{r.err.Error()}, Plugin: PluginName}
	}
	if !r.wantsGPUs() {
		return nil
	}
	l := ledgerOf(node)
	if s := p.unusable(l); s != nil {
		return s
	}
	if _, failed := p.fitOn(r, node, l); failed != fits && !p.fitsLater(r, node, l) {
		return p.verdicts.constraints[failed]
	}
	return nil
}

// samePredicates says whether predicate answers tasks a and b alike on every node: it reads
// a readable request's shape alone (a pod-group spread request has a shape of its own).
func (p *plugin) samePredicates(a, b *api.TaskInfo) bool {
	ra := p.request(a)
	if ra.err != nil {
		return false
	}
	shape := ra.shape
	rb := p.request(b)
	return rb.err == nil && rb.shape == shape
}

// unusable says why a node's ledger cannot take vGPUs now, or nil.
func (p *plugin) unusable(l *ledger) *api.Status {
	switch {
	case l == nil:
		return p.verdicts.notRegistered
	case l.unavailable != nil:
		return l.unavailable
	case !l.handshakeRequested.IsZero() && p.sessionTime.Sub(l.handshakeRequested) > vgpu.HandshakeTimeout:
		return p.verdicts.handshakeOverdue
	}
	return nil
}

// nodeOrder is the node's device score (see fitter) times the weight; 0 for a pod that wants
// no GPU or a node that cannot take it.
func (p *plugin) nodeOrder(task *api.TaskInfo, node *api.NodeInfo) (float64, error) {
	r := p.request(task)
	if !r.wantsGPUs() || r.err != nil {
		return 0, nil
	}
	l := ledgerOf(node)
	if p.unusable(l) != nil {
		return 0, nil
	}
	score, failed := p.fitOn(r, node, l)
	if failed != fits {
		return 0, nil
	}
	return score * p.args.weight, nil
}

// allocate books the vGPUs of a task placed on a node in the session's ledger and puts the
// assignment in the task's BindAnnotations, which Commit sends inside the Binding. A task
// only pipelined books nothing, as it is not bound in this session: it is promised vGPUs of
// the node's future GPUs (promiseTo). Should the GPUs not take the task after all, the
// placement is refused with the reason; framework.ErrRoomReleasing when they take it only
// once releasing pods are gone.
func (p *plugin) allocate(e *framework.Event) {
	task := e.Task
	if task.Status != api.Allocated && task.Status != api.Pipelined {
		return
	}
	r := p.request(task)
	if r.err != nil {
		e.Err = r.err
		return
	}
	if !r.wantsGPUs() {
		return
	}
	l := ledgerOf(e.Node)
	if s := p.unusable(l); s != nil {
		e.Err = errors.New(s.Reasons[0])
		return
	}
	if task.Status == api.Pipelined {
		e.Err = p.promiseTo(r, e.Node, l)
		return
	}
	_, pd, failed := p.fitter.fit(r, e.Node, l, true)
	if failed != fits {
		if p.fitsLater(r, e.Node, l) {
			e.Err = framework.ErrRoomReleasing
			return
		}
		e.Err = errors.New(p.verdicts.constraints[failed].Reasons[0])
		return
	}
	encoded, err := pd.Encode()
	if err != nil {
		e.Err = fmt.Errorf("device assignment of pod %s on node %s: %w", task.Key(), e.Node.Name, err)
		return
	}
	l.book(pd, 1)
	placed := placement{devices: pd}
	if l.hasReserve() {
		placed.bookings = l.appendBookings(nil, task, pd, r.containers)
	}
	p.placed[task.UID] = placed
	now := vgpu.FormatUnixSeconds(p.now())
	if task.BindAnnotations == nil {
		task.BindAnnotations = make(map[string]string, len(assignmentKeys))
	}
	a := task.BindAnnotations
	a[vgpu.AssignedNodeAnnotation] = e.Node.Name
	a[vgpu.AssignedTimeAnnotation] = now
	a[vgpu.AssignedDevicesAnnotation] = encoded
	a[vgpu.DevicesToAllocateAnnotation] = encoded
	a[vgpu.BindPhaseAnnotation] = vgpu.BindPhaseAllocating
	a[vgpu.BindTimeAnnotation] = now
	if p.args.nodeLock {
		task.AddPreBind(nodeLockStep)
	}
}

// deallocate undoes allocate exactly: the same vGPUs leave the ledger of the node the task
// was on, and the assignment leaves its BindAnnotations; a pipelined task's promise goes.
func (p *plugin) deallocate(e *framework.Event) {
	task := e.Task
	if _, ok := p.promised[task.UID]; ok {
		delete(p.promised, task.UID)
		return
	}
	placed, ok := p.placed[task.UID]
	if !ok {
		return
	}
	delete(p.placed, task.UID)
	if l := ledgerOf(e.Node); l != nil {
		l.book(placed.devices, -1)
	}
	for _, key := range assignmentKeys {
		delete(task.BindAnnotations, key)
	}
	task.RemovePreBind(nodeLockStep)
	if len(task.BindAnnotations) == 0 {
		task.BindAnnotations = nil
	}
}

// assignmentOf is the assignment another task on a node holds: the one this session gave
// it, else the one it carries; nil when unreadable (the deriver reports those).
func (p *plugin) assignmentOf(t *api.TaskInfo) vgpu.PodDevices {
	if placed, ok := p.placed[t.UID]; ok {
		return placed.devices
	}
	pd, _ := assignedDevices(t)
	return pd
}

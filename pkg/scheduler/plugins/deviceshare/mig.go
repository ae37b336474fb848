package deviceshare

import (
	"cmp"
	"math/bits"
	"slices"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/vgpu"
)

// maxMIGPositions is how many instances of one geometry group a GPU can hold here: usage
// keeps them as the bits of a uint32. MIG GPUs have at most 7 instances; positions beyond
// are never offered, and an assignment naming one is counted without its instance.
const maxMIGPositions = 32

// migSharing shares a GPU in mig mode by MIG instances: the GPU is partitioned by
// one geometry group of the device ConfigMap's knownMigGeometries at a time, and each vGPU is
// one instance of that group. The device plugin repartitions the GPU for the group the
// assignment names, so the group is fixed while any of its instances is held; once all are
// free another group may be chosen.
//
// A vGPU of m units (gpuMemoryFactor MiB) takes, in the group in use or else in the first
// group (in the order listed) that has one, the smallest instance profile of at least m
// units with a free instance, and in it the lowest free position. It books the instance's
// memory, not m, so a 3000 MiB request on an A100-40GB takes a 1g.5gb instance and books
// 5120 MiB; cores are booked as requested, as upstream does. The GPU-wide checks of
// hami-core (slots, cores, memory) come first, as upstream runs them for every mode.
//
// Positions count the group's instances in the order the ConfigMap lists the profiles, not
// in the order tried: in upstream's A100 group2, 2g.10gb x3 then 1g.5gb x1, the 1g.5gb
// instance is position 3 and is tried first. That is upstream's numbering (its id decoder
// walks the listed profiles), which the device plugin reads to pick the instance, and the
// one vgpu.MIGSlot documents: "earlier instances" there means earlier in the list.
//
// A migSharing is built per GPU when its ledger is derived and shared, unchanged, by the
// ledger's clones; what is held lives in the GPU's usage (migInstances).
type migSharing struct {
	groups []migGroup
}

// migGroup is one geometry group as this GPU uses it.
type migGroup struct {
	name string
	// profiles are the group's instance profiles, by ascending memory; profiles of equal
	// memory keep the listed order.
	profiles []migProfile
	// ids are the device ids of the group's positions on this GPU, made once so that an
	// assignment costs no formatting.
	ids []string
}

// migProfile is the instances of one profile in a group.
type migProfile struct {
	// memory of one instance, in units of gpuMemoryFactor MiB.
	memory int32
	// positions has bit p set for each position p of the profile's instances.
	positions uint32
}

// migInstances are the instances vGPUs hold on a GPU in mig mode.
type migInstances struct {
	// group is the index of the geometry group in use; 0 while held is 0, so that undoing
	// placements leaves the usage exactly as it was.
	group int32
	// held has bit p set when position p of the group is held.
	held uint32
}

// plus is the instances of both; vGPUs of one GPU only ever hold instances of one group.
func (m migInstances) plus(n migInstances) migInstances {
	if m.held == 0 {
		return n
	}
	return migInstances{group: m.group, held: m.held | n.held}
}

// migSharingFor is the MIG sharing of the GPU d in mig mode: the geometry groups of the first
// knownMigGeometries entry with a model in the GPU's type. nil when there is none, or when
// none of its groups has an instance: the GPU then takes no vGPU, since without a geometry
// the device plugin cannot partition it (upstream falls back to hami-core, which the device
// plugin in mig mode does not enforce).
func migSharingFor(d vgpu.NodeDevice, c vgpu.NvidiaConfig) sharing {
	geometries, ok := c.MIGGeometriesFor(d.Type)
	if !ok {
		return nil
	}
	// Upstream's device plugin, which serves MIG GPUs (ours shares in hami-core only),
	// takes 1 for a factor left out.
	factor := max(c.GPUMemoryFactor, 1)
	m := &migSharing{}
	for _, geometry := range geometries {
		if g, ok := newMIGGroup(d.UUID, geometry, factor); ok {
			m.groups = append(m.groups, g)
		}
	}
	if len(m.groups) == 0 {
		return nil
	}
	return m
}

// newMIGGroup is the geometry group on the GPU with the given UUID; ok is false when it has
// no instance, or its name cannot be part of a device id (the ConfigMap's validation already
// refuses such names).
func newMIGGroup(uuid string, geometry vgpu.MIGGeometryGroup, factor int32) (migGroup, bool) {
	g := migGroup{name: geometry.Group}
	for _, profile := range geometry.Geometries {
		p := migProfile{memory: profile.Memory / factor}
		for range profile.Count {
			position := len(g.ids)
			if position == maxMIGPositions {
				break
			}
			id, err := vgpu.FormatMIGID(uuid, vgpu.MIGSlot{Group: geometry.Group, Position: position})
			if err != nil {
				return migGroup{}, false
			}
			g.ids = append(g.ids, id)
			p.positions |= 1 << position
		}
		if p.positions != 0 {
			g.profiles = append(g.profiles, p)
		}
	}
	slices.SortStableFunc(g.profiles, func(a, b migProfile) int { return cmp.Compare(a.memory, b.memory) })
	return g, len(g.ids) > 0
}

// fit ignores the reserve: a MIG instance is memory of its own, which HAMi-core does not
// limit.
func (m *migSharing) fit(g *gpu, u usage, memory, _, cores int32) (usage, constraint) {
	adds, failed := hamiCore{}.fit(g, u, memory, 0, cores)
	if failed != fits {
		return usage{}, failed
	}
	if bits.OnesCount32(u.mig.held) != int(u.devices) {
		// Some vGPU on the GPU holds no instance this scheduler knows (an assignment from
		// before a geometry change, or from hami-core mode), so how the GPU is partitioned
		// is unknown: repartitioning it could break that vGPU.
		return usage{}, migUnknownHolder
	}
	first, groups := 0, m.groups
	if u.mig.held != 0 {
		first = int(u.mig.group)
		groups = groups[first : first+1]
	}
	for gi := range groups {
		for _, p := range groups[gi].profiles {
			if p.memory < memory {
				continue
			}
			if free := p.positions &^ u.mig.held; free != 0 {
				adds.memory = int64(p.memory)
				adds.mig = migInstances{group: int32(first + gi), held: free & -free}
				return adds, fits
			}
		}
	}
	return usage{}, noMIGInstance
}

func (m *migSharing) device(_ *gpu, adds usage) vgpu.ContainerDevice {
	id := m.groups[adds.mig.group].ids[bits.TrailingZeros32(adds.mig.held)]
	return vgpu.ContainerDevice{UUID: id, Type: vgpu.DeviceTypeNVIDIA, UsedMemory: int32(adds.memory), UsedCores: adds.cores}
}

// holdMIGInstance marks the MIG instance id names as held on g (sign 1) or frees it (sign
// -1). It returns false, changing nothing, when g has no such instance or cannot take that
// change: the GPU is not shared by MIG, the group or position is unknown, another group is
// in use, or the instance is already held (sign 1) or not held (sign -1). The vGPU is then
// counted without an instance, which keeps new vGPUs off the GPU (migUnknownHolder) rather
// than risk a second holder.
func holdMIGInstance(g *gpu, id string, sign int32) bool {
	m, ok := g.sharing.(*migSharing)
	if !ok {
		return false
	}
	_, slot, isMIG, err := vgpu.ParseMIGID(id)
	if err != nil || !isMIG {
		return false
	}
	group := slices.IndexFunc(m.groups, func(mg migGroup) bool { return mg.name == slot.Group })
	if group < 0 || slot.Position >= len(m.groups[group].ids) {
		return false
	}
	bit := uint32(1) << slot.Position
	held := &g.used.mig
	inGroup := held.held == 0 || held.group == int32(group)
	switch {
	case sign > 0 && inGroup && held.held&bit == 0:
		held.group = int32(group)
		held.held |= bit
	case sign < 0 && inGroup && held.held&bit != 0:
		held.held &^= bit
		if held.held == 0 {
			held.group = 0
		}
	default:
		return false
	}
	return true
}

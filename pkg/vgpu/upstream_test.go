package vgpu_test

import (
	"testing"
	"time"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/vgpu"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/vgpu/upstreamtest"
)

// TestDecodesUpstreamPluginNodes: the register and handshake annotations exactly as the
// upstream device plugin v1.11 and v1.12 write them (golden Nodes in
// upstreamtest/testdata) decode to the GPUs an upstream scheduler reads from them, in the
// same order, and encode back to the same bytes; the handshake reads as a report.
func TestDecodesUpstreamPluginNodes(t *testing.T) {
	// What each golden holds, so that a golden edited by mistake fails here too.
	want := map[string]struct {
		gpus, unhealthy int
		mode            string
	}{
		"node-plugin-v1.11.yaml":     {gpus: 2, mode: vgpu.ModeHAMiCore},
		"node-plugin-v1.12.yaml":     {gpus: 4, unhealthy: 1, mode: vgpu.ModeHAMiCore},
		"node-plugin-v1.12-mig.yaml": {gpus: 1, mode: vgpu.ModeMIG},
	}
	for _, g := range upstreamtest.Nodes() {
		t.Run(g.File, func(t *testing.T) {
			register := g.Node.Annotations[vgpu.NodeDevicesAnnotation]
			ours, err := vgpu.DecodeNodeDevices(register)
			if err != nil {
				t.Fatalf("DecodeNodeDevices: %v", err)
			}
			theirs, err := upstreamtest.DecodeNodeDevices(register)
			if err != nil {
				t.Fatalf("upstream scheduler: %v", err)
			}
			w, ok := want[g.File]
			if !ok {
				t.Fatalf("no expectation for %s", g.File)
			}
			if len(ours) != w.gpus || len(theirs) != w.gpus {
				t.Fatalf("%d GPUs (upstream reads %d), want %d", len(ours), len(theirs), w.gpus)
			}
			unhealthy := 0
			for i, d := range ours {
				u := theirs[i]
				if u.Index != i || d.UUID != u.UUID || d.Count != u.Count || d.Memory != u.Devmem || d.Type != u.Type ||
					d.Healthy != u.Health || d.Mode != u.Mode {
					t.Errorf("GPU %d: we read %+v, upstream reads %+v", i, d, u)
				}
				if d.Mode != w.mode {
					t.Errorf("GPU %d mode %q, want %q", i, d.Mode, w.mode)
				}
				if !d.Healthy {
					unhealthy++
				}
			}
			if unhealthy != w.unhealthy {
				t.Errorf("%d unhealthy GPUs, want %d", unhealthy, w.unhealthy)
			}
			encoded, err := vgpu.EncodeNodeDevices(ours)
			if err != nil || encoded != register {
				t.Errorf("EncodeNodeDevices = %q, %v; want the upstream bytes %q", encoded, err, register)
			}
			handshake := g.Node.Annotations[vgpu.NodeHandshakeAnnotation]
			if h, err := vgpu.ParseHandshake(handshake); err != nil || h.State != vgpu.HandshakeReported {
				t.Errorf("ParseHandshake(%q) = %+v, %v; want a report", handshake, h, err)
			}
		})
	}
}

// TestReadsUpstreamSchedulerHandshakes: the requests and deletions an upstream scheduler of
// the handshake era writes, in whatever zone it runs, carry for us the time it reads back
// from them itself (its local wall clock taken as UTC), so we find a request overdue exactly
// when it does.
func TestReadsUpstreamSchedulerHandshakes(t *testing.T) {
	now := time.Date(2026, 5, 9, 9, 11, 16, 0, time.UTC)
	zones := []*time.Location{time.UTC, time.FixedZone("CST", 8*3600), time.FixedZone("EST", -5*3600)}
	for _, zone := range zones {
		t.Run(zone.String(), func(t *testing.T) {
			node := upstreamtest.Nodes()[0].Node
			view := upstreamtest.SchedulerV1_13.ReadNode(node, now, zone)
			wall := now.In(zone)
			asked := time.Date(wall.Year(), wall.Month(), wall.Day(), wall.Hour(), wall.Minute(), wall.Second(), 0, time.UTC)

			h, err := vgpu.ParseHandshake(view.HandshakeWrite)
			if err != nil || h.State != vgpu.HandshakeRequesting || !h.Time.Equal(asked) {
				t.Errorf("ParseHandshake(%q) = %+v, %v; want a request at %v", view.HandshakeWrite, h, err, asked)
			}
			upstreamtest.ApplyHandshake(node, view)
			late := asked.Add(vgpu.HandshakeTimeout + time.Second)
			view = upstreamtest.SchedulerV1_13.ReadNode(node, late, zone)
			if view.HandshakeWrite == "" {
				t.Fatalf("upstream did not give up on the node at %v: %+v", late, view)
			}
			if h, err := vgpu.ParseHandshake(view.HandshakeWrite); err != nil || h.State != vgpu.HandshakeDeleted {
				t.Errorf("ParseHandshake(%q) = %+v, %v; want a deletion", view.HandshakeWrite, h, err)
			}
		})
	}
}

package vgpu

import (
	"strings"
	"testing"
)

func TestMIGID(t *testing.T) {
	const uuid = "GPU-0fc3eda5-e98b-a25b-5b0d-cf5c855d1448"
	id, err := FormatMIGID(uuid, MIGSlot{Group: "group2", Position: 3})
	if err != nil {
		t.Fatal(err)
	}
	if want := uuid + "[group2-3]"; id != want {
		t.Fatalf("FormatMIGID = %q, want %q", id, want)
	}
	gotUUID, slot, isMIG, err := ParseMIGID(id)
	if err != nil || !isMIG || gotUUID != uuid || slot != (MIGSlot{Group: "group2", Position: 3}) {
		t.Fatalf("ParseMIGID(%q) = %q, %+v, %v, %v", id, gotUUID, slot, isMIG, err)
	}
	if d := (ContainerDevice{UUID: id}); d.PhysicalUUID() != uuid {
		t.Fatalf("PhysicalUUID = %q, want %q", d.PhysicalUUID(), uuid)
	}

	gotUUID, _, isMIG, err = ParseMIGID(uuid)
	if err != nil || isMIG || gotUUID != uuid {
		t.Fatalf("ParseMIGID(plain uuid) = %q, %v, %v", gotUUID, isMIG, err)
	}
}

func TestMIGIDRejects(t *testing.T) {
	for _, id := range []string{
		"GPU-a[group2]", "GPU-a[group2-]", "GPU-a[-3]", "GPU-a[group2-3", "GPU-a[group2-3]x",
		"GPU-a[group2-x]", "GPU-a[group2-+3]", "GPU-a[g-2147483648]", "[group2-3]", "GPU-a[g[-3]",
		"GPU-a[g-3]]", "GPU a", "",
	} {
		if _, _, _, err := ParseMIGID(id); err == nil {
			t.Errorf("ParseMIGID(%q) succeeded, want an error", id)
		} else if id != "" && !strings.Contains(err.Error(), quote(id)) {
			t.Errorf("ParseMIGID(%q) error %q does not quote the id", id, err)
		}
	}
	for _, slot := range []MIGSlot{{Group: "", Position: 1}, {Group: "a-b", Position: 1}, {Group: "g", Position: -1}, {Group: "g]", Position: 0}} {
		if id, err := FormatMIGID("GPU-a", slot); err == nil {
			t.Errorf("FormatMIGID(%+v) = %q, want an error", slot, id)
		}
	}
}

// FuzzParseMIGID: parsing never panics, and a parsed MIG id formats back to a string that
// parses to the same GPU and slot.
func FuzzParseMIGID(f *testing.F) {
	f.Add("GPU-0fc3eda5-e98b-a25b-5b0d-cf5c855d1448[group2-3]")
	f.Add("GPU-a[g-007]")
	f.Add("GPU-a")
	f.Add("[-]")
	f.Fuzz(func(t *testing.T, id string) {
		uuid, slot, isMIG, err := ParseMIGID(id)
		if err != nil || !isMIG {
			return
		}
		formatted, err := FormatMIGID(uuid, slot)
		if err != nil {
			t.Fatalf("%q parsed to %q %+v, which does not format: %v", id, uuid, slot, err)
		}
		uuid2, slot2, isMIG2, err := ParseMIGID(formatted)
		if err != nil || !isMIG2 || uuid2 != uuid || slot2 != slot {
			t.Fatalf("%q parsed to %q %+v; its formatting %q parsed to %q %+v %v %v", id, uuid, slot, formatted, uuid2, slot2, isMIG2, err)
		}
	})
}

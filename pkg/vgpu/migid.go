package vgpu

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// MIGSlot names one MIG instance the scheduler picked on a GPU in ModeMIG: a geometry group
// of knownMigGeometries and a position in it. Positions count the instances of the group in
// the order its geometries are listed: with "2g.20gb" x3 then "1g.10gb" x1, position 3 is the
// 1g.10gb instance.
type MIGSlot struct {
	Group    string
	Position int
}

// migGroupForbidden are the characters a geometry group name cannot hold: the id syntax
// "uuid[group-position]" and the pod assignment encoding around it would become ambiguous.
const migGroupForbidden = "-[]" + fieldSeparator + recordTerminator + containerSeparator + " \t\r\n"

// FormatMIGID renders the device id of a MIG slot on the GPU with the given UUID, as it
// appears in pod assignments: "GPU-...[group2-3]".
func FormatMIGID(uuid string, slot MIGSlot) (string, error) {
	if err := checkUUID("uuid", uuid); err != nil {
		return "", err
	}
	if err := checkMIGGroup(slot.Group); err != nil {
		return "", err
	}
	if slot.Position < 0 || slot.Position > math.MaxInt32 {
		return "", fmt.Errorf("MIG position %d: want 0 to %d", slot.Position, math.MaxInt32)
	}
	return uuid + "[" + slot.Group + "-" + strconv.Itoa(slot.Position) + "]", nil
}

func checkMIGGroup(group string) error {
	return checkText("MIG group", group, migGroupForbidden)
}

// ParseMIGID splits a device id from a pod assignment into the GPU's UUID and, when the id
// names a MIG instance, its slot. isMIG is false for a plain GPU UUID.
func ParseMIGID(id string) (uuid string, slot MIGSlot, isMIG bool, err error) {
	open := strings.IndexByte(id, '[')
	if open < 0 {
		if err := checkUUID("uuid", id); err != nil {
			return "", MIGSlot{}, false, err
		}
		return id, MIGSlot{}, false, nil
	}
	uuid = id[:open]
	if err := checkUUID("uuid", uuid); err != nil {
		return "", MIGSlot{}, false, fmt.Errorf("MIG id %s: %w", quote(id), err)
	}
	inner, ok := strings.CutSuffix(id[open+1:], "]")
	group, position, dash := strings.Cut(inner, "-")
	if !ok || !dash {
		return "", MIGSlot{}, false, fmt.Errorf("MIG id %s: want uuid[group-position]", quote(id))
	}
	if err := checkMIGGroup(group); err != nil {
		return "", MIGSlot{}, false, fmt.Errorf("MIG id %s: %w", quote(id), err)
	}
	if !isDigits(position) {
		return "", MIGSlot{}, false, fmt.Errorf("MIG id %s: position %s: want a non-negative decimal integer", quote(id), quote(position))
	}
	n, convErr := strconv.ParseInt(position, 10, 32)
	if convErr != nil {
		return "", MIGSlot{}, false, fmt.Errorf("MIG id %s: position %s: out of range", quote(id), quote(position))
	}
	return uuid, MIGSlot{Group: group, Position: int(n)}, true, nil
}

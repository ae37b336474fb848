package register

import (
	"time"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/vgpu"
)

// HandshakeSpacing is the least time between two handshake answers.
//
// Volcano v1.13 to v1.14.2 and v1.15.0 (and v1.9 to v1.12 before them)
// answer every "Reported" value with a "Requesting_<time>" of their own,
// and drop the node when a request stays unanswered for
// vgpu.HandshakeTimeout (60 s); they never look at how old a "Reported"
// value is. Answering each request at once would turn the two into a PATCH
// ping-pong as fast as the API server allows (the storm reported as
// Project-HAMi/volcano-vgpu-device-plugin issue #132); never answering
// loses the node. A request is always newer than the answer before it, so answering no sooner than 30 s after the
// previous answer still answers within 30 s of the request, well inside
// the timeout. Later Volcano releases never write a request, so there the
// handshake is written once and then left alone.
const HandshakeSpacing = 30 * time.Second

// handshakeAction is what a pass does to vgpu.NodeHandshakeAnnotation.
type handshakeAction int

const (
	handshakeKeep handshakeAction = iota
	// handshakeWrite: write "Reported <now>", after the wait handshakeStep
	// returns.
	handshakeWrite
	// handshakeRemove: delete the annotation.
	handshakeRemove
)

// handshakeStep says what to do with the handshake whose current value is
// value (present false: the node has none). legacy is
// --legacy-handshake; lastAnswer is when this process last wrote the
// handshake, zero if never.
//
// With legacy on, the plugin keeps the handshake the older Volcano
// releases need (handshakeAnswer). With it off the node carries no
// handshake at all: a value found there is removed, once. Such a value is
// either an older Volcano's request or verdict, or a report of an earlier
// device plugin; left in place, a "Deleted_" or an unanswered
// "Requesting_" would hide the node's GPUs from every scheduler that still
// reads the annotation (this repository's included), while an older
// Volcano finds no handshake to answer and writes nothing more, so the
// removal is one PATCH.
func handshakeStep(legacy bool, value string, present bool, lastAnswer, now time.Time) (handshakeAction, time.Duration) {
	if !legacy {
		if present {
			return handshakeRemove, 0
		}
		return handshakeKeep, 0
	}
	if needed, wait := handshakeAnswer(value, present, lastAnswer, now); needed {
		return handshakeWrite, wait
	}
	return handshakeKeep, 0
}

// handshakeAnswer says whether the handshake needs writing and, if so, how
// long to wait before writing it (0: now). lastAnswer is when this process
// last wrote it, zero if never.
//
// A missing or unreadable value is written at once. A request or a
// deletion is answered no sooner than HandshakeSpacing after this
// process's previous answer: a deletion normally comes only after a
// minute without answer, so the spacing has long passed; one that comes
// sooner means the scheduler misreads its own requests (one writing its
// local time in a zone west of UTC, which it parses back as UTC, finds
// every request over 60 s old), and answering it at once would make the
// same ping-pong as answering every request at once.
func handshakeAnswer(value string, present bool, lastAnswer, now time.Time) (needed bool, wait time.Duration) {
	if !present {
		return true, 0
	}
	handshake, err := vgpu.ParseHandshake(value)
	if err != nil {
		// Unreadable for every scheduler too: replace it.
		return true, 0
	}
	if handshake.State == vgpu.HandshakeReported {
		return false, 0
	}
	if lastAnswer.IsZero() {
		return true, 0
	}
	if wait := lastAnswer.Add(HandshakeSpacing).Sub(now); wait > 0 {
		return true, wait
	}
	return true, 0
}

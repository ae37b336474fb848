package register

import (
	"time"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/vgpu"
)

// HandshakeSpacing is the least time between two handshake answers.
//
// Volcano v1.9 to v1.14.2 and v1.15.0 answer every "Reported" value with a
// "Requesting_<time>" of their own, and drop the node when a request stays
// unanswered for vgpu.HandshakeTimeout (60 s); they never look at how old a
// "Reported" value is. Answering each request at once would turn the two
// into a PATCH ping-pong as fast as the API server allows (the storm of
// upstream issue #132); never answering loses the node. A request is always
// newer than the answer before it, so answering no sooner than 30 s after
// the previous answer still answers within 30 s of the request, well inside
// the timeout. Later Volcano releases never write a request, so there the
// handshake is written once and then left alone.
const HandshakeSpacing = 30 * time.Second

// handshakeAnswer says whether the handshake needs writing and, if so, how
// long to wait before writing it (0: now). lastAnswer is when this process
// last wrote it, zero if never.
func handshakeAnswer(value string, present bool, lastAnswer, now time.Time) (needed bool, wait time.Duration) {
	if !present {
		return true, 0
	}
	handshake, err := vgpu.ParseHandshake(value)
	if err != nil {
		// Unreadable for every scheduler too: replace it.
		return true, 0
	}
	switch handshake.State {
	case vgpu.HandshakeReported:
		return false, 0
	case vgpu.HandshakeDeleted:
		// The scheduler has already dropped the node; only an answer
		// brings it back, and it asks nothing until it gets one.
		return true, 0
	}
	if lastAnswer.IsZero() {
		return true, 0
	}
	if wait := lastAnswer.Add(HandshakeSpacing).Sub(now); wait > 0 {
		return true, wait
	}
	return true, 0
}

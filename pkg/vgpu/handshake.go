package vgpu

import (
	"fmt"
	"strings"
	"time"
)

// The handshake in NodeHandshakeAnnotation, which Volcano v1.9 to v1.14.2 and v1.15.0 need
// before they use a node's GPUs: the device plugin keeps writing "Reported <time>"; the
// scheduler answers "Requesting_<time>" and, when it finds its own request unanswered for
// HandshakeTimeout, writes "Deleted_<time>" and stops using the node. Later Volcano releases
// ignore the annotation.
const (
	handshakeReported   = "Reported "
	handshakeRequesting = "Requesting_"
	handshakeDeleted    = "Deleted_"
	// HandshakeTimeLayout is the layout of the scheduler's timestamps.
	HandshakeTimeLayout = "2006.01.02 15:04:05"
	// HandshakeTimeout is how long a request may go unanswered before the node is dropped.
	HandshakeTimeout = 60 * time.Second
)

// HandshakeState is who wrote the handshake last, as the scheduler reads it.
type HandshakeState int

const (
	// HandshakeReported: anything that is not a request or a deletion, normally the device
	// plugin's "Reported <time>". The node is alive.
	HandshakeReported HandshakeState = iota
	// HandshakeRequesting: the scheduler asked at Handshake.Time and awaits a report.
	HandshakeRequesting
	// HandshakeDeleted: the scheduler gave up on the node at Handshake.Time.
	HandshakeDeleted
)

// Handshake is a decoded NodeHandshakeAnnotation value.
type Handshake struct {
	State HandshakeState
	// Time is when the scheduler wrote a request or deletion, in UTC; zero for
	// HandshakeReported.
	Time time.Time
}

// FormatReported is the device plugin's handshake value. The text after "Reported " is
// informational (upstream writes Go's time.String); the monotonic clock reading is left out.
func FormatReported(t time.Time) string {
	return handshakeReported + t.Round(0).String()
}

// FormatRequesting is the scheduler's request value. The time is written in UTC because
// upstream schedulers parse it as UTC.
func FormatRequesting(t time.Time) string {
	return handshakeRequesting + t.UTC().Format(HandshakeTimeLayout)
}

// FormatDeleted is the scheduler's value for a node whose device plugin stopped answering.
func FormatDeleted(t time.Time) string {
	return handshakeDeleted + t.UTC().Format(HandshakeTimeLayout)
}

// ParseHandshake reads a NodeHandshakeAnnotation value the way upstream schedulers do: a
// value containing "Requesting" or "Deleted" is the scheduler's, with the time after the
// first "_"; anything else counts as a report.
func ParseHandshake(value string) (Handshake, error) {
	var state HandshakeState
	switch {
	case strings.Contains(value, "Requesting"):
		state = HandshakeRequesting
	case strings.Contains(value, "Deleted"):
		state = HandshakeDeleted
	default:
		return Handshake{State: HandshakeReported}, nil
	}
	_, stamp, ok := strings.Cut(value, "_")
	if !ok {
		return Handshake{}, fmt.Errorf("handshake %s: no \"_\" before the time", quote(value))
	}
	t, err := time.Parse(HandshakeTimeLayout, stamp)
	if err != nil {
		return Handshake{}, fmt.Errorf("handshake %s: time %s: want layout %q", quote(value), quote(stamp), HandshakeTimeLayout)
	}
	// Go's parser also takes fractional seconds, which the layout cannot write back.
	return Handshake{State: state, Time: t.Truncate(time.Second)}, nil
}

package vgpu

import (
	"strings"
	"testing"
	"time"
)

func TestHandshakeValues(t *testing.T) {
	at := time.Date(2026, 5, 9, 17, 11, 16, 120000000, time.FixedZone("CST", 8*3600))
	if got, want := FormatReported(at), "Reported 2026-05-09 17:11:16.12 +0800 CST"; got != want {
		t.Errorf("FormatReported = %q, want %q", got, want)
	}
	if got := FormatReported(time.Now()); strings.Contains(got, "m=") {
		t.Errorf("FormatReported kept the monotonic clock: %q", got)
	}
	if got, want := FormatRequesting(at), "Requesting_2026.05.09 09:11:16"; got != want {
		t.Errorf("FormatRequesting = %q, want %q", got, want)
	}
	if got, want := FormatDeleted(at), "Deleted_2026.05.09 09:11:16"; got != want {
		t.Errorf("FormatDeleted = %q, want %q", got, want)
	}
}

func TestParseHandshake(t *testing.T) {
	stamp := time.Date(2026, 5, 9, 9, 11, 16, 0, time.UTC)
	for _, tc := range []struct {
		value string
		want  Handshake
	}{
		{"Reported 2026-05-09 17:11:16.12 +0800 CST m=+30.2", Handshake{State: HandshakeReported}},
		{"", Handshake{State: HandshakeReported}},
		{"Requesting_2026.05.09 09:11:16", Handshake{State: HandshakeRequesting, Time: stamp}},
		{"Deleted_2026.05.09 09:11:16", Handshake{State: HandshakeDeleted, Time: stamp}},
		{"Requesting_2026.05.09 09:11:16.75", Handshake{State: HandshakeRequesting, Time: stamp}},
	} {
		got, err := ParseHandshake(tc.value)
		if err != nil || got != tc.want {
			t.Errorf("ParseHandshake(%q) = %+v, %v; want %+v", tc.value, got, err, tc.want)
		}
	}
	for _, value := range []string{"Requesting", "Requesting_yesterday", "Deleted_2026-05-09 09:11:16"} {
		_, err := ParseHandshake(value)
		if err == nil || !strings.Contains(err.Error(), quote(value)) {
			t.Errorf("ParseHandshake(%q) error = %v, want one quoting the value", value, err)
		}
	}
}

// FuzzParseHandshake: parsing never panics, and a scheduler handshake formats back to a
// value that parses the same.
func FuzzParseHandshake(f *testing.F) {
	f.Add("Reported 2026-05-09 17:11:16.12 +0800 CST m=+30.2")
	f.Add("Requesting_2026.05.09 09:11:16")
	f.Add("Deleted_2026.05.09 09:11:16.999")
	f.Add("xRequesting_9999.12.31 23:59:59")
	f.Fuzz(func(t *testing.T, value string) {
		h, err := ParseHandshake(value)
		if err != nil {
			return
		}
		var formatted string
		switch h.State {
		case HandshakeRequesting:
			formatted = FormatRequesting(h.Time)
		case HandshakeDeleted:
			formatted = FormatDeleted(h.Time)
		default:
			return
		}
		again, err := ParseHandshake(formatted)
		if err != nil || again != h {
			t.Fatalf("%q parses to %+v; its formatting %q parses to %+v, %v", value, h, formatted, again, err)
		}
	})
}

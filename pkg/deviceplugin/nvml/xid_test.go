package nvml

import (
	"strings"
	"testing"
)

func TestXIDPolicyFromEnv(t *testing.T) {
	tests := []struct {
		name            string
		disable, enable string
		critical        []uint64
		ignored         []uint64
		enabled         bool
		wantErr         string
	}{
		{name: "defaults", critical: []uint64{48, 79, 94, 95}, ignored: []uint64{13, 31, 43, 45, 68, 109}, enabled: true},
		{name: "disable all", disable: "all", ignored: []uint64{13, 48, 79}, enabled: false},
		{name: "disable xids, any case", disable: "XIDs", ignored: []uint64{48, 79}, enabled: false},
		{name: "extra ignored", disable: "79, 94", critical: []uint64{48}, ignored: []uint64{13, 79, 94}, enabled: true},
		{name: "force a default-ignored XID", enable: "13", critical: []uint64{13, 79}, ignored: []uint64{31}, enabled: true},
		{name: "enable wins over disable", disable: "79", enable: "79", critical: []uint64{79}, enabled: true},
		{name: "all disabled but some forced", disable: "all", enable: "79,48", critical: []uint64{48, 79}, ignored: []uint64{13, 94}, enabled: true},
		{name: "enable all", disable: "79", enable: "all", critical: []uint64{13, 31, 79, 109}, enabled: true},
		{name: "typo is reported, rest applies", disable: "79,abc", critical: []uint64{48}, ignored: []uint64{79}, enabled: true,
			wantErr: `DP_DISABLE_HEALTHCHECKS: "abc" is not an XID number`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := map[string]string{EnvDisableHealthChecks: tt.disable, EnvEnableHealthChecks: tt.enable}
			p, err := XIDPolicyFromEnv(func(k string) string { return env[k] })
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("error = %v, want one containing %q", err, tt.wantErr)
			}
			if p.Enabled() != tt.enabled {
				t.Errorf("Enabled() = %v, want %v (policy %s)", p.Enabled(), tt.enabled, p)
			}
			for _, xid := range tt.critical {
				if !p.Critical(xid) {
					t.Errorf("XID %d not critical, want critical (policy %s)", xid, p)
				}
			}
			for _, xid := range tt.ignored {
				if p.Critical(xid) {
					t.Errorf("XID %d critical, want ignored (policy %s)", xid, p)
				}
			}
		})
	}
}

func TestXIDPolicyString(t *testing.T) {
	if got, want := DefaultXIDPolicy().String(), "all XIDs are critical except 13,31,43,45,68,109"; got != want {
		t.Errorf("default policy = %q, want %q", got, want)
	}
	p, _ := XIDPolicyFromEnv(func(k string) string {
		return map[string]string{EnvEnableHealthChecks: "31"}[k]
	})
	if got, want := p.String(), "all XIDs are critical except 13,43,45,68,109"; got != want {
		t.Errorf("policy with 31 forced = %q, want %q", got, want)
	}
}

package nvml

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Environment variables that tune health checking; the names and their
// meaning follow the upstream (NVIDIA-derived) device plugin so existing
// DaemonSet settings keep working.
const (
	// EnvDisableHealthChecks: "all" or "xids" turns XID health checks off;
	// otherwise a comma-separated list of extra XIDs to ignore.
	EnvDisableHealthChecks = "DP_DISABLE_HEALTHCHECKS"
	// EnvEnableHealthChecks: a comma-separated list of XIDs that always make
	// a GPU unhealthy, even when ignored by default or by
	// EnvDisableHealthChecks; "all" or "xids" makes every XID critical.
	EnvEnableHealthChecks = "DP_ENABLE_HEALTHCHECKS"
)

// DefaultIgnoredXIDs are XIDs that report an application's own fault rather
// than a broken GPU, so they must not take the GPU away from other pods:
// 13 graphics engine exception, 31 GPU memory page fault, 43 GPU stopped
// processing (the app was killed), 45 preemptive cleanup, 68 video
// processor exception, 109 context switch timeout. It is a variable so a
// build can extend it; XIDPolicyFromEnv is the per-node knob.
var DefaultIgnoredXIDs = []uint64{13, 31, 43, 45, 68, 109}

// XIDPolicy decides which XID critical-error events make a GPU unhealthy.
// The zero value treats every XID as critical.
type XIDPolicy struct {
	ignoreAll bool
	ignored   map[uint64]bool
	forced    map[uint64]bool
}

// DefaultXIDPolicy ignores DefaultIgnoredXIDs and nothing else.
func DefaultXIDPolicy() XIDPolicy {
	p := XIDPolicy{ignored: map[uint64]bool{}}
	for _, xid := range DefaultIgnoredXIDs {
		p.ignored[xid] = true
	}
	return p
}

// XIDPolicyFromEnv builds the policy from EnvDisableHealthChecks and
// EnvEnableHealthChecks (read through getenv, e.g. os.Getenv). Words are
// separated by commas or spaces and are case-insensitive. An explicit
// enable wins over a disable. A word that is neither a keyword nor a
// decimal XID is reported in the error and skipped; the returned policy
// still holds everything else, so a typo does not turn health checks off.
func XIDPolicyFromEnv(getenv func(string) string) (XIDPolicy, error) {
	p := DefaultXIDPolicy()
	p.forced = map[uint64]bool{}
	var errs []error

	enableAll := false
	for _, word := range envWords(getenv(EnvEnableHealthChecks)) {
		if word == "all" || word == "xids" {
			enableAll = true
			continue
		}
		xid, err := strconv.ParseUint(word, 10, 64)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %q is not an XID number, \"all\" or \"xids\"", EnvEnableHealthChecks, word))
			continue
		}
		p.forced[xid] = true
	}
	for _, word := range envWords(getenv(EnvDisableHealthChecks)) {
		if word == "all" || word == "xids" {
			p.ignoreAll = true
			continue
		}
		xid, err := strconv.ParseUint(word, 10, 64)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %q is not an XID number, \"all\" or \"xids\"", EnvDisableHealthChecks, word))
			continue
		}
		p.ignored[xid] = true
	}
	if enableAll {
		p.ignoreAll = false
		p.ignored = map[uint64]bool{}
	}
	return p, errors.Join(errs...)
}

func envWords(value string) []string {
	return strings.FieldsFunc(strings.ToLower(value), func(r rune) bool {
		return r == ',' || r == ' ' || r == '\t'
	})
}

// Enabled says whether any XID can make a GPU unhealthy; when it is false
// there is no point in watching events at all.
func (p XIDPolicy) Enabled() bool {
	return !p.ignoreAll || len(p.forced) > 0
}

// Critical says whether an XID event makes the GPU unhealthy.
func (p XIDPolicy) Critical(xid uint64) bool {
	if p.forced[xid] {
		return true
	}
	return !p.ignoreAll && !p.ignored[xid]
}

// String describes the policy for the start-up log.
func (p XIDPolicy) String() string {
	switch {
	case !p.Enabled():
		return "disabled"
	case p.ignoreAll:
		return "only XIDs " + joinXIDs(p.forced) + " are critical"
	}
	skipped := map[uint64]bool{}
	for xid, on := range p.ignored {
		skipped[xid] = on && !p.forced[xid]
	}
	s := "all XIDs are critical"
	if except := joinXIDs(skipped); except != "" {
		s += " except " + except
	}
	return s
}

func joinXIDs(set map[uint64]bool) string {
	xids := make([]uint64, 0, len(set))
	for xid, on := range set {
		if on {
			xids = append(xids, xid)
		}
	}
	sort.Slice(xids, func(i, j int) bool { return xids[i] < xids[j] })
	words := make([]string, len(xids))
	for i, xid := range xids {
		words[i] = strconv.FormatUint(xid, 10)
	}
	return strings.Join(words, ",")
}

package conf

// testNames is the registry the tests validate against: upstream's action
// and plugin names, as the framework is expected to register them.
var testNames = NewNameSet(
	[]string{"enqueue", "allocate", "backfill", "preempt", "reclaim", "shuffle"},
	[]string{"priority", "gang", "conformance", "overcommit", "drf", "predicates",
		"proportion", "capacity", "nodeorder", "binpack", "deviceshare"},
)

func boolPtr(b bool) *bool { return &b }

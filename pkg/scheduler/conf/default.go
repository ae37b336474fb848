package conf

// DefaultActions is the action list of the built-in configuration.
const DefaultActions = "enqueue, allocate, backfill"

// DefaultConfiguration returns the configuration the scheduler runs with when
// no --scheduler-conf is given: upstream vc-scheduler's built-in default, not
// the Helm chart's (which adds binpack and enablePreemptable: false on gang
// and drf). It returns a new value on every call, so a caller may change it.
//
// It is not validated here: the plugins it names (overcommit among them)
// must be registered for Validate to accept it.
//
// Upstream, when the flag is absent, goes on to unmarshal an empty string
// over this default and ends up with an empty configuration; we do not copy
// that: no file means this default.
func DefaultConfiguration() *SchedulerConfiguration {
	return &SchedulerConfiguration{
		Actions: DefaultActions,
		Tiers: []Tier{
			{Plugins: []PluginOption{
				{Name: "priority"},
				{Name: "gang"},
				{Name: "conformance"},
			}},
			{Plugins: []PluginOption{
				{Name: "overcommit"},
				{Name: "drf"},
				{Name: "predicates"},
				{Name: "proportion"},
				{Name: "nodeorder"},
			}},
		},
	}
}

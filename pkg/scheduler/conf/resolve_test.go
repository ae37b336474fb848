package conf

import (
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// fullNames implements every optional interface Resolve asks of a KnownNames.
type fullNames struct{ declaredNames }

func (fullNames) Upstream(kind SkipKind) map[string]string {
	if kind == SkippedAction {
		return map[string]string{"preempt": "evicts lower-priority pods"}
	}
	return map[string]string{"nodegroup": "keeps pods on their queue's node group"}
}
func (fullNames) ActionNames() []string               { return []string{"enqueue", "allocate"} }
func (fullNames) PluginNames() []string               { return []string{"gang", "binpack", "capacity"} }
func (fullNames) HonoursHierarchy(plugin string) bool { return plugin == "drf" }
func (fullNames) IgnoredArgument(plugin, key string) (string, bool) {
	return "not implemented here", plugin == "binpack" && key == "binpack.later"
}

// CheckPluginArguments refuses a negative binpack.weight or a binpack.mode that is not a
// string, as a plugin builder would, one at a time.
func (fullNames) CheckPluginArguments(plugin string, args Arguments) error {
	if plugin != "binpack" {
		return nil
	}
	w := 1
	if err := args.GetInt(&w, "binpack.weight"); err != nil {
		return err
	}
	if w < 0 {
		return InvalidArgument("binpack.weight", w, "weight -1 is negative")
	}
	var mode string
	return args.GetString(&mode, "binpack.mode")
}

var full = fullNames{declaredNames{NameSet: NewNameSet([]string{"enqueue", "allocate"}, []string{"gang", "binpack", "capacity", "drf"}),
	keys: map[string]ArgumentKeys{"binpack": {"binpack.weight", "binpack.mode", "binpack.later", "binpack.cpu"}}}}

// Everything the scheduler cannot apply is skipped with a reason, and the rest applies: a
// refused value gives way to the plugin's default and the plugin keeps its other arguments.
func TestResolveSkipsWhatItCannotApply(t *testing.T) {
	cfg, skipped, err := Parse([]byte(`actions: "enqueue, preempt, alocate, allocate"
tiers:
- plugins:
  - name: gnag
  - name: nodegroup
  - name: capacity
    enableHierarchy: true
  - name: drf
    enableHierarchy: true
- plugins:
  - name: binpack
    arguments:
      binpack.weight: -1
      binpack.mode: [a]
      binpack.later: true
      binpack.cpu: 2
`), full)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`actions: action "preempt" is skipped: not implemented by this scheduler; in Volcano it evicts lower-priority pods`,
		`actions: action "alocate" is skipped: no action of this name in this scheduler or in Volcano; did you mean "allocate"?`,
		`tiers[0].plugins[0]: plugin "gnag" is skipped: no plugin of this name in this scheduler or in Volcano; did you mean "gang"?`,
		`tiers[0].plugins[1]: plugin "nodegroup" is skipped: not implemented by this scheduler; in Volcano it keeps pods on their queue's node group`,
		`tiers[0].plugins[2]: plugin capacity: enableHierarchy is ignored: not implemented by this plugin here; it runs as with flat queues`,
		`tiers[1].plugins[0]: plugin binpack: argument "binpack.later" is ignored: not implemented here`,
		`tiers[1].plugins[0]: plugin binpack: argument "binpack.weight": weight -1 is negative; the plugin's default applies`,
		`tiers[1].plugins[0]: plugin binpack: argument "binpack.mode": cannot use [a] ([]interface {}) as string; the plugin's default applies`,
	}
	var got []string
	for _, s := range skipped {
		got = append(got, s.Error())
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("skipped (-want +got):\n%s", diff)
	}
	if got, want := SkippedLabels(skipped), []string{"action preempt", "action alocate", "plugin gnag", "plugin nodegroup",
		"setting capacity/enableHierarchy", "argument binpack/binpack.later", "argument-value binpack/binpack.weight",
		"argument-value binpack/binpack.mode"}; !reflect.DeepEqual(got, want) {
		t.Errorf("labels %q, want %q", got, want)
	}
	if got, want := cfg.ActionNames(), []string{"enqueue", "allocate"}; !reflect.DeepEqual(got, want) {
		t.Errorf("actions %q, want %q", got, want)
	}
	if got, want := pluginNames(cfg), [][]string{{"capacity", "drf"}, {"binpack"}}; !reflect.DeepEqual(got, want) {
		t.Errorf("plugins %q, want %q", got, want)
	}
	if cfg.Tiers[0].Plugins[0].HierarchyEnabled() || !cfg.Tiers[0].Plugins[1].HierarchyEnabled() {
		t.Errorf("capacity's hierarchy is in force, or drf's (which it honours) is not")
	}
	if got, want := cfg.Tiers[1].Plugins[0].Arguments, (Arguments{"binpack.later": true, "binpack.cpu": 2}); !reflect.DeepEqual(got, want) {
		t.Errorf("binpack runs with %v, want %v", got, want)
	}
}

// Resolve leaves the configuration it is given as it was: a Watcher's fallback and a
// caller's copy are shared.
func TestResolveDoesNotChangeItsInput(t *testing.T) {
	in := &SchedulerConfiguration{Actions: "enqueue, preempt", Tiers: []Tier{{Plugins: []PluginOption{
		{Name: "binpack", Arguments: Arguments{"binpack.weight": -1}}, {Name: "gnag"}}}}}
	before := strings.TrimSpace(in.Actions)
	if _, _, err := Resolve(in, full); err != nil {
		t.Fatal(err)
	}
	if in.Actions != before || len(in.Tiers[0].Plugins) != 2 || in.Tiers[0].Plugins[0].Arguments["binpack.weight"] != -1 {
		t.Errorf("input changed: %+v", in)
	}
}

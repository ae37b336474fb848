package conf

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestArgumentKeysHas(t *testing.T) {
	keys := ArgumentKeys{"binpack.weight", "binpack.resources", "binpack.resources.*"}
	for key, want := range map[string]bool{
		"binpack.weight":                       true,
		"binpack.resources":                    true,
		"binpack.resources.nvidia.com/gpu":     true,
		"binpack.Weight":                       false,
		"binpack.weigth":                       false,
		"binpack.resource.volcano.sh/vgpu-mem": false,
		"":                                     false,
	} {
		if got := keys.Has(key); got != want {
			t.Errorf("Has(%q) = %t, want %t", key, got, want)
		}
	}
}

func TestArgumentKeysNearest(t *testing.T) {
	keys := ArgumentKeys{"deviceshare.VGPUEnable", "deviceshare.SchedulePolicy", "deviceshare.ScheduleWeight", "binpack.resources.*"}
	tests := []struct {
		key, want string
	}{
		{"deviceshare.SchedulePolcy", "deviceshare.SchedulePolicy"},
		{"deviceshare.vgpuenable", "deviceshare.VGPUEnable"},
		{"deviceshare.ScheduleWieght", "deviceshare.ScheduleWeight"},
		{"deviceshare.VGPUEnabled", "deviceshare.VGPUEnable"},
		{"binpack.resource.nvidia.com/gpu", "binpack.resources.*"},
		{"overcommit-factor", ""},
		{"x", ""},
	}
	for _, tt := range tests {
		got, ok := keys.Nearest(tt.key)
		if got != tt.want || ok != (tt.want != "") {
			t.Errorf("Nearest(%q) = %q, %t; want %q", tt.key, got, ok, tt.want)
		}
	}
	if got, ok := (ArgumentKeys{}).Nearest("a"); ok || got != "" {
		t.Errorf("no keys: Nearest = %q, %t", got, ok)
	}
}

func TestEditDistance(t *testing.T) {
	for _, tt := range []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"", "abc", 3}, {"abc", "", 3}, {"kitten", "sitting", 3}, {"SchedulePolcy", "SchedulePolicy", 1},
		{"flaw", "lawn", 2},
	} {
		if got := editDistance(tt.a, tt.b); got != tt.want {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
}

// declaredNames adds declared argument keys to testNames.
type declaredNames struct {
	NameSet
	keys map[string]ArgumentKeys
}

func (d declaredNames) PluginArgumentKeys(plugin string) (ArgumentKeys, bool) {
	keys, ok := d.keys[plugin]
	return keys, ok
}

var withKeys = declaredNames{NameSet: testNames, keys: map[string]ArgumentKeys{
	"deviceshare": {"deviceshare.VGPUEnable", "deviceshare.SchedulePolicy"},
	"gang":        {},
}}

const misspelt = `actions: "enqueue, allocate"
tiers:
- plugins:
  - name: gang
    arguments:
      gang.minAvailable: 1
  - name: priority
    arguments:
      anything: 1
- plugins:
  - name: deviceshare
    arguments:
      deviceshare.VGPUEnable: true
      deviceshare.SchedulePolcy: binpack
      zzz: 1
`

func TestUnknownArgumentsAreSkipped(t *testing.T) {
	cfg, skipped, err := Parse([]byte(misspelt), withKeys)
	if err != nil {
		t.Fatalf("unknown arguments must not reject the file: %v", err)
	}
	want := []*Skipped{
		{Kind: SkippedArgument, Where: "tiers[0].plugins[0]", Name: "gang", Key: "gang.minAvailable", Reason: "the plugin reads no arguments"},
		// priority declared no keys: not checked.
		{Kind: SkippedArgument, Where: "tiers[1].plugins[0]", Name: "deviceshare", Key: "deviceshare.SchedulePolcy",
			Reason: `the plugin does not read it; did you mean "deviceshare.SchedulePolicy"?`},
		{Kind: SkippedArgument, Where: "tiers[1].plugins[0]", Name: "deviceshare", Key: "zzz", Reason: "the plugin does not read it"},
	}
	if diff := cmp.Diff(want, skipped); diff != "" {
		t.Fatalf("skipped (-want +got):\n%s", diff)
	}
	if got, want := skipped[1].Error(), `tiers[1].plugins[0]: plugin deviceshare: argument "deviceshare.SchedulePolcy" is ignored: the plugin does not read it; did you mean "deviceshare.SchedulePolicy"?`; got != want {
		t.Errorf("message\n got %q\nwant %q", got, want)
	}
	if cfg.Tiers[1].Plugins[0].Name != "deviceshare" {
		t.Errorf("the plugin with a misspelt argument is not in force")
	}
	if _, skipped, _ := Parse([]byte(misspelt), testNames); skipped != nil {
		t.Errorf("names without declared keys: %v, want nothing checked", skipped)
	}
}

// The watcher keeps what the file in force skips, for the caller's Events and metrics.
func TestWatcherReportsSkipped(t *testing.T) {
	v := newConfigMapVolume(t, misspelt)
	w := NewWatcher(v.path(), withKeys, DefaultConfiguration)
	if w.Skipped() != nil || w.FromFile() {
		t.Errorf("fallback has warnings: %v", w.Skipped())
	}
	if _, err := w.Reload(); err != nil {
		t.Fatal(err)
	}
	if got := w.Skipped(); len(got) != 3 || got[1].Key != "deviceshare.SchedulePolcy" || !w.FromFile() {
		t.Fatalf("skipped %v, want the three of the file", got)
	}
	v.update("v2", strings.NewReplacer("SchedulePolcy", "SchedulePolicy", "      zzz: 1\n", "",
		"    arguments:\n      gang.minAvailable: 1\n", "").Replace(misspelt))
	cfg, err := w.Reload()
	if err != nil || cfg == nil {
		t.Fatalf("reload of the fixed file: %v, %v", cfg, err)
	}
	if got := w.Skipped(); len(got) != 0 {
		t.Errorf("fixed file still warns: %v", got)
	}
	// A rejected file leaves the configuration in force, and what it skips.
	v.update("v3", "actions: \"\"\n")
	if _, err := w.Reload(); err == nil {
		t.Fatal("file without actions accepted")
	}
	if got := w.Skipped(); len(got) != 0 {
		t.Errorf("skipped %v after a rejected file, want those of the configuration in force", got)
	}
}

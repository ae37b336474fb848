package conf

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

func TestLoadSeedConfigUnchanged(t *testing.T) {
	path := filepath.Join("..", "..", "..", "config", "lab8-scheduler.conf")
	cfg, _, err := Load(path, testNames)
	if err != nil {
		t.Fatalf("Load(%s): %v", path, err)
	}
	if got, want := cfg.ActionNames(), []string{"enqueue", "allocate", "backfill"}; !reflect.DeepEqual(got, want) {
		t.Errorf("ActionNames() = %q, want %q", got, want)
	}
	if got, want := pluginNames(cfg), [][]string{
		{"priority", "gang", "conformance"},
		{"drf", "deviceshare", "predicates", "proportion", "nodeorder", "binpack"},
	}; !reflect.DeepEqual(got, want) {
		t.Errorf("plugins = %q, want %q", got, want)
	}

	deviceshare := cfg.Tiers[1].Plugins[1].Arguments
	vgpuEnable, policy := false, ""
	if err := deviceshare.GetBool(&vgpuEnable, "deviceshare.VGPUEnable"); err != nil || !vgpuEnable {
		t.Errorf("deviceshare.VGPUEnable = %v (err %v), want true", vgpuEnable, err)
	}
	if err := deviceshare.GetString(&policy, "deviceshare.SchedulePolicy"); err != nil || policy != "binpack" {
		t.Errorf("deviceshare.SchedulePolicy = %q (err %v), want binpack", policy, err)
	}
	for _, tier := range cfg.Tiers {
		for _, p := range tier.Plugins {
			if !IsEnabled(p.EnabledPreemptable) || !IsEnabled(p.EnabledJobOrder) {
				t.Errorf("plugin %s: flags not written in the file must count as enabled", p.Name)
			}
		}
	}
}

func TestLoadShippedDefaultFlags(t *testing.T) {
	cfg, _, err := Load(filepath.Join("..", "..", "..", "config", "volcano-scheduler.conf"), testNames)
	if err != nil {
		t.Fatal(err)
	}
	gang, drf, priority := cfg.Tiers[0].Plugins[1], cfg.Tiers[1].Plugins[1], cfg.Tiers[0].Plugins[0]
	if IsEnabled(gang.EnabledPreemptable) || IsEnabled(drf.EnabledPreemptable) {
		t.Errorf("enablePreemptable: false on gang and drf was not honoured")
	}
	if !IsEnabled(priority.EnabledPreemptable) || priority.EnabledPreemptable != nil {
		t.Errorf("priority has no flag in the file: want nil (enabled), got %v", priority.EnabledPreemptable)
	}
}

func TestLoadMissingFileNamesIt(t *testing.T) {
	path := filepath.Join(t.TempDir(), "volcano-scheduler.conf")
	_, _, err := Load(path, testNames)
	var cfgErr *ConfigError
	if !errors.As(err, &cfgErr) || cfgErr.Stage != StageRead || cfgErr.Path != path {
		t.Fatalf("Load(missing) error = %v, want *ConfigError at stage read for %s", err, path)
	}
	if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), path) {
		t.Errorf("error %q should wrap fs.ErrNotExist and name the file", err)
	}
}

func TestParse(t *testing.T) {
	tests := []struct {
		name        string
		conf        string
		wantStage   Stage    // "" means success
		wantSkipped []string // SkippedLabels of what a loaded file skips
		wantInSkip  string   // text the first skipped entry's message must contain
		wantIs      error    // a sentinel the error must wrap
		wantInError string   // text the message must contain
		check       func(*testing.T, *SchedulerConfiguration)
	}{
		{
			name: "actions are trimmed and empty entries dropped",
			conf: "actions: \"  enqueue ,allocate,\\tbackfill , \"\ntiers:\n- plugins:\n  - name: gang\n",
			check: func(t *testing.T, cfg *SchedulerConfiguration) {
				if got, want := cfg.ActionNames(), []string{"enqueue", "allocate", "backfill"}; !reflect.DeepEqual(got, want) {
					t.Errorf("ActionNames() = %q, want %q", got, want)
				}
			},
		},
		{
			name:      "malformed YAML",
			conf:      "actions: \"enqueue\"\ntiers:\n- plugins:\n  - name: gang\n   bad-indent: [\n",
			wantStage: StageParse,
		},
		{
			name:      "document of the wrong shape",
			conf:      "- enqueue\n- allocate\n",
			wantStage: StageParse,
		},
		{
			name:        "unknown plugin is skipped, the rest applies",
			conf:        "actions: enqueue\ntiers:\n- plugins:\n  - name: gang\n  - name: gnag\n",
			wantSkipped: []string{"plugin gnag"},
			wantInSkip:  `tiers[0].plugins[1]: plugin "gnag" is skipped: no plugin of this name in this scheduler or in Volcano`,
			check: func(t *testing.T, cfg *SchedulerConfiguration) {
				if got, want := pluginNames(cfg), [][]string{{"gang"}}; !reflect.DeepEqual(got, want) {
					t.Errorf("plugins = %q, want %q", got, want)
				}
			},
		},
		{
			name:        "unknown action is skipped, the rest applies",
			conf:        "actions: \"enqueue, alocate\"\n",
			wantSkipped: []string{"action alocate"},
			wantInSkip:  `actions: action "alocate" is skipped`,
			check: func(t *testing.T, cfg *SchedulerConfiguration) {
				if got, want := cfg.ActionNames(), []string{"enqueue"}; !reflect.DeepEqual(got, want) {
					t.Errorf("ActionNames() = %q, want %q", got, want)
				}
			},
		},
		{
			name:        "every skipped part is listed, in file order",
			conf:        "actions: \"enqueue, foo\"\ntiers:\n- plugins:\n  - name: bar\n- plugins:\n  - name: baz\n  - name: gang\nconfigurations:\n- name: qux\n- name: foo\n- name: enqueue\n",
			wantSkipped: []string{"action foo", "plugin bar", "plugin baz", "action qux"},
			check: func(t *testing.T, cfg *SchedulerConfiguration) {
				if got, want := pluginNames(cfg), [][]string{nil, {"gang"}}; !reflect.DeepEqual(got, want) {
					t.Errorf("plugins = %q, want %q", got, want)
				}
				if len(cfg.Configurations) != 1 || cfg.Configurations[0].Name != "enqueue" {
					t.Errorf("configurations = %+v, want enqueue's only", cfg.Configurations)
				}
			},
		},
		{
			name:      "no actions",
			conf:      "actions: \" , \"\ntiers:\n- plugins:\n  - name: gang\n",
			wantStage: StageValidate,
			wantIs:    ErrNoActions,
		},
		{
			name:        "no action the scheduler has",
			conf:        "actions: \"foo, bar\"\n",
			wantStage:   StageValidate,
			wantIs:      ErrNoActions,
			wantInError: `actions: action "bar" is skipped`,
		},
		{
			name:      "empty file",
			conf:      "  \n\n",
			wantStage: StageValidate,
			wantIs:    ErrNoActions,
		},
		{
			name:        "plugin without a name",
			conf:        "actions: enqueue\ntiers:\n- plugins:\n  - enableJobOrder: false\n",
			wantSkipped: []string{"plugin "},
			wantInSkip:  "tiers[0].plugins[0]: plugin without a name is skipped: a plugin entry needs a name",
		},
		{
			name: "hierarchical drf with capacity is fine",
			conf: "actions: enqueue\ntiers:\n- plugins:\n  - name: drf\n    enableHierarchy: true\n  - name: capacity\n",
		},
		{
			name: "every flag is read, with upstream's spelling",
			conf: `actions: allocate
tiers:
- plugins:
  - name: gang
    enableJobOrder: false
    enableHierarchy: true
    enableJobReady: false
    enableJobPipelined: false
    enableTaskOrder: false
    enablePreemptable: false
    enableReclaimable: false
    enablePreemptive: false
    enableQueueOrder: false
    EnabledClusterOrder: false
    enablePredicate: false
    enableBestNode: false
    enableNodeOrder: false
    enableTargetJob: false
    enableReservedNodes: false
    enableJobEnqueued: false
    enabledVictim: false
    enableJobStarving: false
    enabledOverused: false
    enabledAllocatable: false
    enabledHyperNodeOrder: false
    enabledSubJobReady: false
    enabledSubJobPipelined: false
    enabledSubJobOrder: false
    enabledHyperNodeGradient: false
`,
			check: func(t *testing.T, cfg *SchedulerConfiguration) {
				p := reflect.ValueOf(cfg.Tiers[0].Plugins[0])
				for i := 0; i < p.NumField(); i++ {
					field := p.Type().Field(i)
					flag, ok := p.Field(i).Interface().(*bool)
					if !ok {
						continue
					}
					want := field.Name == "EnabledHierarchy"
					if flag == nil || *flag != want {
						t.Errorf("%s = %v, want %v: its YAML key was not read", field.Name, flag, want)
					}
				}
			},
		},
		{
			name: "unknown keys are ignored, as upstream ignores them",
			conf: "actions: enqueue\nnewTopLevelKey: 1\ntiers:\n- plugins:\n  - name: gang\n    enableSomethingNew: false\n",
		},
		{
			name: "argument and configuration types",
			conf: `actions: "allocate, backfill"
tiers:
- plugins:
  - name: binpack
    arguments:
      binpack.weight: 10
      binpack.cpu: 1.5
      binpack.whole: 2.0
      binpack.resources: volcano.sh/vgpu-memory
      binpack.enabled: yes
      nested: {a: 1, b: [1, x]}
configurations:
- name: allocate
  arguments:
    predicateErrorCacheEnable: false
metrics:
  type: prometheus
  interval: 30
`,
			check: func(t *testing.T, cfg *SchedulerConfiguration) {
				want := Arguments{
					"binpack.weight":    10,
					"binpack.cpu":       1.5,
					"binpack.whole":     2,
					"binpack.resources": "volcano.sh/vgpu-memory",
					"binpack.enabled":   true,
					"nested":            map[string]interface{}{"a": 1, "b": []interface{}{1, "x"}},
				}
				if got := cfg.Tiers[0].Plugins[0].Arguments; !reflect.DeepEqual(got, want) {
					t.Errorf("arguments = %#v, want %#v", got, want)
				}
				cache := true
				if err := cfg.ActionArguments("allocate").GetBool(&cache, "predicateErrorCacheEnable"); err != nil || cache {
					t.Errorf("allocate predicateErrorCacheEnable = %v (err %v), want false", cache, err)
				}
				if args := cfg.ActionArguments("backfill"); args != nil {
					t.Errorf("backfill has no configuration, got %v", args)
				}
				if got, want := cfg.Metrics, map[string]string{"type": "prometheus", "interval": "30"}; !reflect.DeepEqual(got, want) {
					t.Errorf("metrics = %v, want %v", got, want)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, skipped, err := Parse([]byte(tt.conf), testNames)
			if tt.wantStage == "" {
				if err != nil {
					t.Fatalf("Parse: %v", err)
				}
				if got := SkippedLabels(skipped); !reflect.DeepEqual(got, tt.wantSkipped) && len(got)+len(tt.wantSkipped) > 0 {
					t.Errorf("skipped = %q, want %q", got, tt.wantSkipped)
				}
				if tt.wantInSkip != "" && (len(skipped) == 0 || !strings.Contains(skipped[0].Error(), tt.wantInSkip)) {
					t.Errorf("skipped %v: the first does not contain %q", skipped, tt.wantInSkip)
				}
				if tt.check != nil {
					tt.check(t, cfg)
				}
				return
			}
			var cfgErr *ConfigError
			if !errors.As(err, &cfgErr) || cfgErr.Stage != tt.wantStage {
				t.Fatalf("Parse error = %v, want *ConfigError at stage %s", err, tt.wantStage)
			}
			if cfg != nil {
				t.Errorf("Parse returned a configuration along with the error")
			}
			if tt.wantIs != nil && !errors.Is(err, tt.wantIs) {
				t.Errorf("error %q does not wrap %q", err, tt.wantIs)
			}
			if !strings.Contains(err.Error(), tt.wantInError) {
				t.Errorf("error %q does not contain %q", err, tt.wantInError)
			}
		})
	}
}

func TestDefaultConfiguration(t *testing.T) {
	cfg := DefaultConfiguration()
	if _, skipped, err := Resolve(cfg, testNames); err != nil || skipped != nil {
		t.Fatalf("default configuration does not resolve whole: %v, skipped %v", err, skipped)
	}
	if got, want := cfg.ActionNames(), []string{"enqueue", "allocate", "backfill"}; !reflect.DeepEqual(got, want) {
		t.Errorf("ActionNames() = %q, want %q", got, want)
	}
	if got, want := pluginNames(cfg), [][]string{
		{"priority", "gang", "conformance"},
		{"overcommit", "drf", "predicates", "proportion", "nodeorder"},
	}; !reflect.DeepEqual(got, want) {
		t.Errorf("plugins = %q, want %q", got, want)
	}
	cfg.Tiers[0].Plugins[0].Name = "changed"
	if DefaultConfiguration().Tiers[0].Plugins[0].Name != "priority" {
		t.Errorf("changing one default changed the next")
	}
}

func pluginNames(cfg *SchedulerConfiguration) [][]string {
	var tiers [][]string
	for _, tier := range cfg.Tiers {
		var names []string
		for _, p := range tier.Plugins {
			names = append(names, p.Name)
		}
		tiers = append(tiers, names)
	}
	return tiers
}

// FuzzParse: Parse never panics; a rejected document gets a *ConfigError at stage parse or
// validate whose cause says something; an accepted one validates again, names only known
// actions and plugins, its arguments read without panicking through every getter, and
// written back as YAML it parses to the same configuration.
func FuzzParse(f *testing.F) {
	for _, name := range []string{"volcano-scheduler.conf", "lab8-scheduler.conf"} {
		data, err := os.ReadFile(filepath.Join("..", "..", "..", "config", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(data))
	}
	f.Add(misspelt)
	f.Add("actions: enqueue\ntiers:\n- plugins:\n  - name: drf\n    enableHierarchy: true\n  - name: proportion\n")
	f.Add("actions: \"allocate, backfill\"\ntiers:\n- plugins:\n  - name: binpack\n    arguments:\n" +
		"      binpack.weight: 10\n      binpack.cpu: 1.5\n      binpack.whole: 2.0\n      binpack.enabled: yes\n" +
		"      binpack.list: [1, a, {b: 2}]\nconfigurations:\n- name: allocate\n  arguments:\n    n: 9223372036854775808\n")
	f.Add("actions: enqueue\nconfigurations:\n- arguments: {}\n")
	f.Add("- enqueue\n")
	f.Add("")
	f.Fuzz(func(t *testing.T, text string) {
		cfg, skipped, err := Parse([]byte(text), withKeys)
		if err != nil {
			var cfgErr *ConfigError
			if !errors.As(err, &cfgErr) || (cfgErr.Stage != StageParse && cfgErr.Stage != StageValidate) {
				t.Fatalf("Parse(%q) error %v (%T), want a *ConfigError at stage parse or validate", text, err, err)
			}
			if cfgErr.Err == nil || strings.TrimSpace(cfgErr.Err.Error()) == "" {
				t.Fatalf("Parse(%q) error %q does not say what is wrong", text, err)
			}
			return
		}
		if _, again, err := Resolve(cfg, withKeys); err != nil || len(again) > len(skipped) {
			t.Fatalf("Parse(%q) returned a configuration that does not resolve whole: %v, skipped %v", text, err, again)
		}
		actions := cfg.ActionNames()
		if len(actions) == 0 {
			t.Fatalf("Parse(%q) accepted a configuration without actions", text)
		}
		for _, action := range actions {
			if !withKeys.IsAction(action) {
				t.Fatalf("Parse(%q) accepted unknown action %q", text, action)
			}
		}
		for _, tier := range cfg.Tiers {
			for _, plugin := range tier.Plugins {
				if !withKeys.IsPlugin(plugin.Name) {
					t.Fatalf("Parse(%q) accepted unknown plugin %q", text, plugin.Name)
				}
				readEveryArgument(t, plugin.Arguments)
			}
		}
		for _, c := range cfg.Configurations {
			readEveryArgument(t, c.Arguments)
		}
		for _, s := range skipped {
			if s.Error() == "" || s.Reason == "" {
				t.Fatalf("skipped %+v says nothing", s)
			}
		}

		out, err := yaml.Marshal(cfg)
		if err != nil {
			t.Fatalf("accepted configuration %+v does not marshal: %v", cfg, err)
		}
		again, _, err := Parse(out, withKeys)
		if err != nil {
			t.Fatalf("accepted %q, but not its re-encoding %q: %v", text, out, err)
		}
		if !reflect.DeepEqual(again, cfg) {
			t.Fatalf("%q parses to %+v, its re-encoding %q to %+v", text, cfg, out, again)
		}
	})
}

// readEveryArgument reads each argument with each getter: none may panic, and a refusal
// must name the key.
func readEveryArgument(t *testing.T, args Arguments) {
	t.Helper()
	for key := range args {
		var (
			n int
			x float64
			b bool
			s string
		)
		for _, err := range []error{args.GetInt(&n, key), args.GetFloat64(&x, key), args.GetBool(&b, key), args.GetString(&s, key)} {
			if err != nil && !strings.Contains(err.Error(), strconv.Quote(key)) {
				t.Fatalf("argument error %q does not name the key %q", err, key)
			}
		}
	}
}

package main

import (
	"maps"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/actions/allocate"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/conf"
)

// readmeTableHeader opens the README's table of Volcano's actions and plugins.
const readmeTableHeader = "| name | kind | here | follows |"

// The README's table of Volcano's actions and plugins says of each name what the registry
// does with it: "implemented" for a name registered as itself, "runs as `<action>`" for an
// action registered as another's second name, "skipped with a warning" for a name described
// as one of Volcano's that this binary lacks; and it lists every name Volcano v1.15 has and
// every name registered, each once.
func TestReadmeNamesEveryVolcanoName(t *testing.T) {
	text, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{} // "kind name" -> what the table says here
	_, table, found := strings.Cut(string(text), readmeTableHeader+"\n")
	if !found {
		t.Fatalf("README.md has no line %q", readmeTableHeader)
	}
	for i, line := range strings.Split(table, "\n") {
		if !strings.HasPrefix(line, "|") {
			break
		}
		if i == 0 {
			continue // the separator row
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		if len(cells) != 4 {
			t.Errorf("README row %q: want 4 cells", line)
			continue
		}
		key := strings.TrimSpace(cells[1]) + " " + strings.Trim(strings.TrimSpace(cells[0]), "`")
		if _, twice := got[key]; twice {
			t.Errorf("README names %s twice", key)
		}
		got[key] = strings.TrimSpace(cells[2])
	}

	registry := newRegistry(allocate.Options{})
	want := map[string]string{}
	for _, kind := range []struct {
		name       string
		skip       conf.SkipKind
		volcano    []string
		registered []string
		is         func(string) bool
	}{
		{"action", conf.SkippedAction, volcanoActions, registry.ActionNames(), registry.IsAction},
		{"plugin", conf.SkippedPlugin, volcanoPlugins, registry.PluginNames(), registry.IsPlugin},
	} {
		for _, name := range slices.Concat(kind.volcano, kind.registered) {
			_, lacking := registry.Upstream(kind.skip)[name]
			here := "skipped with a warning"
			switch {
			case kind.is(name):
				here = "implemented"
			case !lacking:
				t.Errorf("%s %q is neither registered nor described as Volcano's", kind.name, name)
			}
			want[kind.name+" "+name] = here
		}
	}
	for _, key := range slices.Sorted(maps.Keys(want)) {
		if got[key] != want[key] {
			t.Errorf("README says %s is %q, want %q", key, got[key], want[key])
		}
	}
	for key := range got {
		if _, ok := want[key]; !ok {
			t.Errorf("README names %s, which is neither Volcano's nor registered", key)
		}
	}
}

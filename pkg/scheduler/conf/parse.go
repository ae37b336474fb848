package conf

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"

	"k8s.io/klog/v2"
	"sigs.k8s.io/yaml"
)

// Stage names the step at which loading a configuration failed.
type Stage string

const (
	StageRead     Stage = "read"     // the file could not be read
	StageParse    Stage = "parse"    // the content is not a valid configuration document
	StageValidate Stage = "validate" // the document leaves no action to run
)

// ConfigError is the error Parse, Load and the Watcher return: which file,
// which step, and the cause. Unwrap reaches the cause, so errors.Is finds ErrNoActions or
// fs.ErrNotExist.
type ConfigError struct {
	Path  string // the configuration file; empty when the data did not come from a file
	Stage Stage
	Err   error
}

func (e *ConfigError) Error() string {
	source := e.Path
	if source == "" {
		source = "<data>"
	}
	return fmt.Sprintf("scheduler configuration %s: %s: %v", source, e.Stage, e.Err)
}

func (e *ConfigError) Unwrap() error { return e.Err }

// Parse decodes one volcano-scheduler.conf document and resolves it against names (Resolve):
// it returns the configuration to run and what of the file is skipped.
//
// Keys the format does not know are ignored, as upstream ignores them, so a file written for
// a newer Volcano still loads; the first such key is logged so that a typo such as
// "enablePreemtable" does not pass unseen. Reporting what is skipped is the caller's.
func Parse(data []byte, names KnownNames) (*SchedulerConfiguration, []*Skipped, error) {
	return parse("", data, names)
}

// Load reads path and parses it with Parse. Errors are *ConfigError naming path.
func Load(path string, names KnownNames) (*SchedulerConfiguration, []*Skipped, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, &ConfigError{Path: path, Stage: StageRead, Err: err}
	}
	return parse(path, data, names)
}

func parse(path string, data []byte, names KnownNames) (*SchedulerConfiguration, []*Skipped, error) {
	data = bytes.TrimSpace(data)
	cfg := &SchedulerConfiguration{}
	// Numbers are decoded as json.Number and then turned into int or float64,
	// so an argument written as 10 is an int as it is upstream, not float64.
	if err := yaml.Unmarshal(data, cfg, useNumber); err != nil {
		return nil, nil, &ConfigError{Path: path, Stage: StageParse, Err: err}
	}
	normalizeArguments(cfg)

	if err := yaml.UnmarshalStrict(data, &SchedulerConfiguration{}); err != nil {
		klog.InfoS("Scheduler configuration has an unknown or duplicate key; ignoring it",
			"path", path, "detail", err.Error())
	}

	resolved, skipped, err := Resolve(cfg, names)
	if err != nil {
		return nil, skipped, &ConfigError{Path: path, Stage: StageValidate, Err: err}
	}
	return resolved, skipped, nil
}

func useNumber(decoder *json.Decoder) *json.Decoder {
	decoder.UseNumber()
	return decoder
}

func normalizeArguments(cfg *SchedulerConfiguration) {
	for t := range cfg.Tiers {
		for p := range cfg.Tiers[t].Plugins {
			normalizeNumbers(cfg.Tiers[t].Plugins[p].Arguments)
		}
	}
	for i := range cfg.Configurations {
		normalizeNumbers(cfg.Configurations[i].Arguments)
	}
}

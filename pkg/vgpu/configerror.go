package vgpu

import (
	"encoding/json"
	"errors"
	"fmt"
)

// ConfigError says which field of a configuration file is wrong and what it holds.
type ConfigError struct {
	// File is DeviceConfigKey or NodeConfigKey.
	File string
	// Field is the path of the field, e.g. "nvidia.deviceSplitCount" or
	// "nodeconfig[1].operatingmode"; empty when the file as a whole cannot be read.
	Field string
	// Value is the offending value as text; empty when the field is missing.
	Value  string
	Reason string
}

func (e *ConfigError) Error() string {
	switch {
	case e.Field == "":
		return fmt.Sprintf("%s: %s", e.File, e.Reason)
	case e.Value == "":
		return fmt.Sprintf("%s: %s: %s", e.File, e.Field, e.Reason)
	}
	return fmt.Sprintf("%s: %s %s: %s", e.File, e.Field, quote(e.Value), e.Reason)
}

// syntaxConfigError turns a decoding error into a ConfigError, keeping the field path when the
// decoder reported one (a value of the wrong JSON type).
func syntaxConfigError(file string, err error) *ConfigError {
	var typeErr *json.UnmarshalTypeError
	if errors.As(err, &typeErr) {
		return &ConfigError{File: file, Field: typeErr.Field,
			Reason: fmt.Sprintf("got %s, want %s", typeErr.Value, typeErr.Type)}
	}
	return &ConfigError{File: file, Reason: err.Error()}
}

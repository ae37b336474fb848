package conf

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Arguments are the free-form arguments of a plugin or an action.
//
// After Parse, values have nearly the types upstream's YAML decoder produced:
// int for whole numbers, float64 for other numbers, bool, string,
// []interface{}, and map[string]interface{} for nested maps. Two differences:
// upstream gives nested maps as map[interface{}]interface{}, and a whole
// number written with a decimal point (2.0) arrives here as int. Prefer the
// getters, which accept either.
type Arguments map[string]interface{}

// ArgumentError says why an argument's value cannot be used: it does not read as the wanted
// type, or a plugin refuses what it reads (Reason). Plugin builders return it for every
// refused value, so that loading can drop that one key and build the plugin again with its
// default there.
type ArgumentError struct {
	Key   string      // the argument's key, e.g. "binpack.weight"
	Value interface{} // the value found in the file
	Want  string      // the Go type asked for: "int", "float64", "bool", "string"
	// Reason, when set, is why a value of the right type is refused ("weight -1 is negative").
	Reason string
}

// InvalidArgument is the error of a plugin that read key's value and refuses it, for reason.
func InvalidArgument(key string, value interface{}, reason string) *ArgumentError {
	return &ArgumentError{Key: key, Value: value, Reason: reason}
}

func (e *ArgumentError) Error() string {
	if e.Reason != "" {
		return fmt.Sprintf("argument %q: %s", e.Key, e.Reason)
	}
	return fmt.Sprintf("argument %q: cannot use %v (%T) as %s", e.Key, e.Value, e.Value, e.Want)
}

// The getters below leave *ptr untouched when the key is absent (so callers
// preset the default) or when the value does not convert; in the latter case
// they return an *ArgumentError and the caller decides how loudly to say so.
// They do not log themselves: plugins are rebuilt every cycle, and a warning
// per cycle would bury the one line that matters.
//
// Upstream accepts only values that already have the exact YAML type and
// silently keeps the default otherwise; a quoted `deviceshare.VGPUEnable:
// "true"` then switches vGPU off without a word. We accept every form that
// upstream accepts and, in addition, strings that spell the wanted type and
// whole-number floats for ints.

// GetInt reads key as an int. Accepted: any integer, a float64 with no
// fractional part, and a decimal string such as "10".
func (a Arguments) GetInt(ptr *int, key string) error {
	value, found := a[key]
	if !found || ptr == nil {
		return nil
	}
	if n, ok := toInt(value); ok {
		*ptr = n
		return nil
	}
	return &ArgumentError{Key: key, Value: value, Want: "int"}
}

// GetFloat64 reads key as a float64. Accepted: any number (ints included, as
// upstream) and a string such as "1.2".
func (a Arguments) GetFloat64(ptr *float64, key string) error {
	value, found := a[key]
	if !found || ptr == nil {
		return nil
	}
	if f, ok := toFloat64(value); ok {
		*ptr = f
		return nil
	}
	return &ArgumentError{Key: key, Value: value, Want: "float64"}
}

// GetBool reads key as a bool. Accepted: a YAML bool (true, false, yes, no,
// on, off unquoted) and a string strconv.ParseBool reads ("true", "1", "F").
func (a Arguments) GetBool(ptr *bool, key string) error {
	value, found := a[key]
	if !found || ptr == nil {
		return nil
	}
	switch v := value.(type) {
	case bool:
		*ptr = v
		return nil
	case string:
		if b, err := strconv.ParseBool(strings.TrimSpace(v)); err == nil {
			*ptr = b
			return nil
		}
	}
	return &ArgumentError{Key: key, Value: value, Want: "bool"}
}

// GetString reads key as a string. Accepted: a string, and a bool or number
// written unquoted, formatted back the way YAML would print it.
func (a Arguments) GetString(ptr *string, key string) error {
	value, found := a[key]
	if !found || ptr == nil {
		return nil
	}
	switch v := value.(type) {
	case string:
		*ptr = v
		return nil
	case bool:
		*ptr = strconv.FormatBool(v)
		return nil
	case int:
		*ptr = strconv.Itoa(v)
		return nil
	case int64:
		*ptr = strconv.FormatInt(v, 10)
		return nil
	case float64:
		*ptr = strconv.FormatFloat(v, 'g', -1, 64)
		return nil
	}
	return &ArgumentError{Key: key, Value: value, Want: "string"}
}

func toInt(value interface{}) (int, bool) {
	switch v := value.(type) {
	case int:
		return v, true
	case int32:
		return int(v), true
	case int64:
		if v < math.MinInt || v > math.MaxInt {
			return 0, false
		}
		return int(v), true
	case uint64:
		if v > math.MaxInt {
			return 0, false
		}
		return int(v), true
	case float64:
		if v != math.Trunc(v) || v < math.MinInt || v >= math.MaxInt {
			return 0, false
		}
		return int(v), true
	case string:
		n, err := strconv.Atoi(strings.TrimSpace(v))
		return n, err == nil
	}
	return 0, false
}

func toFloat64(value interface{}) (float64, bool) {
	switch v := value.(type) {
	case float64:
		return v, true
	case float32:
		return float64(v), true
	case int:
		return float64(v), true
	case int32:
		return float64(v), true
	case int64:
		return float64(v), true
	case uint64:
		return float64(v), true
	case string:
		f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		return f, err == nil
	}
	return 0, false
}

// normalizeNumbers rewrites the json.Number values the decoder produced into
// int (when the number is a whole number that fits) or float64, walking
// nested maps and lists, so arguments look like upstream's yaml.v2 output.
func normalizeNumbers(value interface{}) interface{} {
	switch v := value.(type) {
	case json.Number:
		if n, err := strconv.ParseInt(string(v), 10, 64); err == nil && n >= math.MinInt && n <= math.MaxInt {
			return int(n)
		}
		if f, err := v.Float64(); err == nil {
			return f
		}
		return string(v)
	case map[string]interface{}:
		for key, item := range v {
			v[key] = normalizeNumbers(item)
		}
		return v
	case Arguments:
		for key, item := range v {
			v[key] = normalizeNumbers(item)
		}
		return v
	case []interface{}:
		for i, item := range v {
			v[i] = normalizeNumbers(item)
		}
		return v
	}
	return value
}

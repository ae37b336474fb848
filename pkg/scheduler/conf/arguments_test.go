package conf

import (
	"errors"
	"strings"
	"testing"
)

func TestArgumentsGetInt(t *testing.T) {
	tests := []struct {
		name    string
		value   interface{} // nil: key absent
		want    int
		wantErr bool
	}{
		{name: "absent keeps default", want: 7},
		{name: "int", value: 10, want: 10},
		{name: "int64", value: int64(-3), want: -3},
		{name: "whole float", value: 2.0, want: 2},
		{name: "decimal string", value: " 12 ", want: 12},
		{name: "fractional float", value: 1.5, want: 7, wantErr: true},
		{name: "word", value: "ten", want: 7, wantErr: true},
		{name: "bool", value: true, want: 7, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := Arguments{}
			if tt.value != nil {
				args["k"] = tt.value
			}
			got := 7
			err := args.GetInt(&got, "k")
			checkArgument(t, err, tt.wantErr, "int")
			if got != tt.want {
				t.Errorf("GetInt = %d, want %d", got, tt.want)
			}
		})
	}
}

func TestArgumentsGetFloat64(t *testing.T) {
	tests := []struct {
		name    string
		value   interface{}
		want    float64
		wantErr bool
	}{
		{name: "absent keeps default", want: 1.2},
		{name: "float", value: 2.5, want: 2.5},
		{name: "int, as upstream", value: 3, want: 3},
		{name: "string", value: "0.75", want: 0.75},
		{name: "word", value: "much", want: 1.2, wantErr: true},
		{name: "list", value: []interface{}{1}, want: 1.2, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := Arguments{}
			if tt.value != nil {
				args["k"] = tt.value
			}
			got := 1.2
			err := args.GetFloat64(&got, "k")
			checkArgument(t, err, tt.wantErr, "float64")
			if got != tt.want {
				t.Errorf("GetFloat64 = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestArgumentsGetBool(t *testing.T) {
	tests := []struct {
		name    string
		value   interface{}
		want    bool
		wantErr bool
	}{
		{name: "absent keeps default", want: true},
		{name: "bool false", value: false, want: false},
		{name: "quoted true", value: "true", want: true},
		{name: "quoted False", value: "False", want: false},
		{name: "quoted 0", value: "0", want: false},
		{name: "quoted yes is not a Go bool", value: "yes", want: true, wantErr: true},
		{name: "number", value: 1, want: true, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := Arguments{}
			if tt.value != nil {
				args["k"] = tt.value
			}
			got := true
			err := args.GetBool(&got, "k")
			checkArgument(t, err, tt.wantErr, "bool")
			if got != tt.want {
				t.Errorf("GetBool = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestArgumentsGetString(t *testing.T) {
	tests := []struct {
		name    string
		value   interface{}
		want    string
		wantErr bool
	}{
		{name: "absent keeps default", want: "spread"},
		{name: "string", value: "binpack", want: "binpack"},
		{name: "int", value: 30, want: "30"},
		{name: "float", value: 0.5, want: "0.5"},
		{name: "bool", value: true, want: "true"},
		{name: "map", value: map[string]interface{}{"a": 1}, want: "spread", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := Arguments{}
			if tt.value != nil {
				args["k"] = tt.value
			}
			got := "spread"
			err := args.GetString(&got, "k")
			checkArgument(t, err, tt.wantErr, "string")
			if got != tt.want {
				t.Errorf("GetString = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestArgumentsNilSafe(t *testing.T) {
	var args Arguments // an action without configuration
	n := 5
	if err := args.GetInt(&n, "k"); err != nil || n != 5 {
		t.Errorf("nil Arguments: GetInt = %d, %v; want 5, nil", n, err)
	}
	if err := (Arguments{"k": 1}).GetInt(nil, "k"); err != nil {
		t.Errorf("nil pointer: %v", err)
	}
}

func checkArgument(t *testing.T, err error, wantErr bool, want string) {
	t.Helper()
	if !wantErr {
		if err != nil {
			t.Errorf("unexpected error: %v", err)
		}
		return
	}
	var argErr *ArgumentError
	if !errors.As(err, &argErr) || argErr.Key != "k" || argErr.Want != want {
		t.Fatalf("error = %v, want *ArgumentError for key k as %s", err, want)
	}
	if !strings.Contains(err.Error(), `argument "k"`) {
		t.Errorf("error %q does not name the key", err)
	}
}

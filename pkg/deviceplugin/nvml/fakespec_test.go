package nvml

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseFakeSpec(t *testing.T) {
	tests := []struct {
		spec string
		want []FakeGPU
	}{
		{"1xNVIDIA GeForce RTX 3070 Ti:8192", []FakeGPU{{"NVIDIA GeForce RTX 3070 Ti", 8192}}},
		{"5xRTX 4090:24564", []FakeGPU{
			{"RTX 4090", 24564}, {"RTX 4090", 24564}, {"RTX 4090", 24564}, {"RTX 4090", 24564}, {"RTX 4090", 24564},
		}},
		{"2xNVIDIA H200:143771,1xTesla T4:15360", []FakeGPU{
			{"NVIDIA H200", 143771}, {"NVIDIA H200", 143771}, {"Tesla T4", 15360},
		}},
		{" 1x NVIDIA H200 : 143771 , 1XTesla T4:15360 ", []FakeGPU{{"NVIDIA H200", 143771}, {"Tesla T4", 15360}}},
		// The name may itself contain "x" and ":"; the count ends at the
		// first x, the memory starts after the last colon.
		{"1xA100x:SXM4:81920", []FakeGPU{{"A100x:SXM4", 81920}}},
	}
	for _, tt := range tests {
		t.Run(tt.spec, func(t *testing.T) {
			got, err := ParseFakeSpec(tt.spec)
			if err != nil {
				t.Fatalf("ParseFakeSpec(%q): %v", tt.spec, err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("ParseFakeSpec(%q) = %v, want %v", tt.spec, got, tt.want)
			}
		})
	}
}

func TestParseFakeSpecErrors(t *testing.T) {
	tests := []struct {
		spec string
		// wantIn are substrings the error must contain: the offending
		// group and why it is wrong.
		wantIn []string
	}{
		{"", []string{"empty"}},
		{"NVIDIA H200:143771", []string{`group 1 "NVIDIA H200:143771"`, "no GPU count"}},
		{"2xNVIDIA H200:143771,Tesla T4:15360", []string{`group 2 "Tesla T4:15360"`, "no GPU count"}},
		{"0xT4:15360", []string{`"0xT4:15360"`, "positive"}},
		{"2xT4", []string{`"2xT4"`, "no memory size"}},
		{"2x:15360", []string{"name is empty"}},
		{"2xT4:", []string{"memory"}},
		{"2xT4:16G", []string{`"16G"`, "whole number of MiB"}},
		{"2xT4:0", []string{`"0"`, "whole number of MiB"}},
		{"2xT4:-5", []string{"whole number of MiB"}},
		{"2xT4:15360,", []string{"group 2", "empty group"}},
		{"100xT4:15360,29xT4:15360", []string{"group 2", "more than 128 GPUs"}},
		{"99999999999999999999xT4:1", []string{"positive"}},
	}
	for _, tt := range tests {
		t.Run(tt.spec, func(t *testing.T) {
			_, err := ParseFakeSpec(tt.spec)
			if err == nil {
				t.Fatalf("ParseFakeSpec(%q) succeeded, want an error", tt.spec)
			}
			for _, want := range tt.wantIn {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("ParseFakeSpec(%q) error %q does not contain %q", tt.spec, err, want)
				}
			}
		})
	}
}

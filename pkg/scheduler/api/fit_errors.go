package api

import (
	"fmt"
	"sort"
	"strings"
)

// StatusCode says how a node failed a predicate.
type StatusCode int

const (
	Success StatusCode = iota
	Error
	Unschedulable
	UnschedulableAndUnresolvable
	Wait
	Skip
)

// Status is one predicate's verdict on a node; Reasons are the phrases users see in
// "0/3 nodes are unavailable: 2 Insufficient volcano.sh/vgpu-memory."
type Status struct {
	Code    StatusCode
	Reasons []string
	// Plugin names who said it, for logs.
	Plugin string
}

// NewStatus is a verdict with one reason.
func NewStatus(code StatusCode, reason string) *Status {
	return &Status{Code: code, Reasons: []string{reason}}
}

// Failed: the node is out for this task.
func (s *Status) Failed() bool {
	return s != nil && s.Code != Success
}

// FitErrors records why each node failed one task.
type FitErrors struct {
	nodes map[string][]string // node -> reasons
}

// NewFitErrors is an empty record.
func NewFitErrors() *FitErrors { return &FitErrors{nodes: map[string][]string{}} }

// SetNodeError records the node's failure reasons.
func (f *FitErrors) SetNodeError(node string, s *Status) {
	f.nodes[node] = append(f.nodes[node], s.Reasons...)
}

// Nodes is the number of nodes that recorded a failure.
func (f *FitErrors) Nodes() int { return len(f.nodes) }

// Error renders upstream's message: "0/<N> nodes are unavailable: <count> <reason>, ... ."
// N counts the nodes that recorded a failure; reasons are counted over nodes and sorted.
func (f *FitErrors) Error() string {
	head := fmt.Sprintf("0/%d nodes are unavailable", len(f.nodes))
	if len(f.nodes) == 0 {
		return head
	}
	counts := map[string]int{}
	for _, reasons := range f.nodes {
		for _, r := range reasons {
			counts[r]++
		}
	}
	return head + ": " + histogram(counts) + "."
}

// histogram renders counts as "<count> <name>" entries, sorted as strings, joined by ", ".
func histogram(counts map[string]int) string {
	parts := make([]string, 0, len(counts))
	for name, n := range counts {
		parts = append(parts, fmt.Sprintf("%d %s", n, name))
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}

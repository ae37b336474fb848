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
	nodes map[string][]string // node -> reasons, from SetNodeError
	// counted are the nodes AddNodes recorded, by status: a search that fails on thousands
	// of nodes records how many failed each way, not each node's name.
	counted map[*Status]int
	// message is Error's text, kept until the record changes: a failed task's message is
	// read for its pod's condition and its job's.
	message string
}

// NewFitErrors is an empty record.
func NewFitErrors() *FitErrors { return &FitErrors{nodes: map[string][]string{}} }

// SetNodeError records the node's failure reasons.
func (f *FitErrors) SetNodeError(node string, s *Status) {
	f.nodes[node] = append(f.nodes[node], s.Reasons...)
	f.message = ""
}

// AddNodes records n more nodes that failed with s, each of them distinct from every node
// recorded before (a search visits each node once).
func (f *FitErrors) AddNodes(n int, s *Status) {
	if f.counted == nil {
		f.counted = map[*Status]int{}
	}
	f.counted[s] += n
	f.message = ""
}

// Nodes is the number of nodes that recorded a failure.
func (f *FitErrors) Nodes() int {
	n := len(f.nodes)
	for _, c := range f.counted {
		n += c
	}
	return n
}

// Error renders upstream's message: "0/<N> nodes are unavailable: <count> <reason>, ... ."
// N counts the nodes that recorded a failure; reasons are counted over nodes and sorted.
func (f *FitErrors) Error() string {
	if f.message != "" {
		return f.message
	}
	head := fmt.Sprintf("0/%d nodes are unavailable", f.Nodes())
	if f.Nodes() == 0 {
		return head
	}
	counts := map[string]int{}
	for _, reasons := range f.nodes {
		for _, r := range reasons {
			counts[r]++
		}
	}
	for s, n := range f.counted {
		for _, r := range s.Reasons {
			counts[r] += n
		}
	}
	f.message = head + ": " + histogram(counts) + "."
	return f.message
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

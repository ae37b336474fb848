package metrics

import (
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// report is one complete set of series for a group of gauge vectors: every series that
// should exist after it is published, with its value.
type report map[*prometheus.GaugeVec]map[string]series

type series struct {
	labels []string
	value  float64
}

// set adds the series of vec with the given label values to the report.
func (r report) set(vec *prometheus.GaugeVec, value float64, labels ...string) {
	if r[vec] == nil {
		r[vec] = map[string]series{}
	}
	r[vec][seriesKey(labels)] = series{labels: labels, value: value}
}

// seriesKey joins label values with a byte that valid UTF-8, and so any label value, never
// holds, so two different label sets never share a key.
func seriesKey(labels []string) string { return strings.Join(labels, "\xff") }

// publisher writes successive reports of the same gauge vectors. The series of the previous
// report that the new one leaves out (a deleted queue, a finished job, a resource a queue no
// longer has) are deleted once the new values are set. Series that live on are overwritten
// in place and never missing from a scrape, as they would be after a Reset.
type publisher struct {
	mu sync.Mutex
	// last holds the label values of every series the previous report set.
	last map[*prometheus.GaugeVec]map[string][]string
}

func (p *publisher) publish(r report) {
	p.mu.Lock()
	defer p.mu.Unlock()
	next := make(map[*prometheus.GaugeVec]map[string][]string, len(r))
	for vec, all := range r {
		next[vec] = make(map[string][]string, len(all))
		for key, s := range all {
			vec.WithLabelValues(s.labels...).Set(s.value)
			next[vec][key] = s.labels
		}
	}
	for vec, all := range p.last {
		for key, labels := range all {
			if _, kept := next[vec][key]; !kept {
				vec.DeleteLabelValues(labels...)
			}
		}
	}
	p.last = next
}

package metrics

import (
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// Report is one complete set of series for a group of gauge vectors: every series that
// should exist after it is published, with its value. Metrics kept outside this package
// (the deviceshare plugin's vGPU gauges) build their reports the same way.
type Report map[*prometheus.GaugeVec]map[string]series

type series struct {
	labels []string
	value  float64
}

// Set adds the series of vec with the given label values to the report.
func (r Report) Set(vec *prometheus.GaugeVec, value float64, labels ...string) {
	r.series(vec)[seriesKey(labels)] = series{labels: labels, value: value}
}

// Add adds value to the series of vec with the given label values, which starts at 0 when
// the report does not hold it yet: for a series that sums several things.
func (r Report) Add(vec *prometheus.GaugeVec, value float64, labels ...string) {
	all := r.series(vec)
	key := seriesKey(labels)
	s, ok := all[key]
	if !ok {
		s.labels = labels
	}
	s.value += value
	all[key] = s
}

func (r Report) series(vec *prometheus.GaugeVec) map[string]series {
	all := r[vec]
	if all == nil {
		all = map[string]series{}
		r[vec] = all
	}
	return all
}

// seriesKey joins label values with a byte that valid UTF-8, and so any label value, never
// holds, so two different label sets never share a key.
func seriesKey(labels []string) string { return strings.Join(labels, "\xff") }

// Publisher writes successive reports of the same gauge vectors. The series of the previous
// report that the new one leaves out (a deleted queue, a finished job, a resource a queue no
// longer has) are deleted once the new values are set. Series that live on are overwritten
// in place and never missing from a scrape, as they would be after a Reset. The vectors must
// change only through their publisher: it keeps the gauges it set, to set them again without
// looking them up.
type Publisher struct {
	mu sync.Mutex
	// last holds every series the previous report set.
	last map[*prometheus.GaugeVec]map[string]published
}

type published struct {
	labels []string
	gauge  prometheus.Gauge
}

// Publish makes r the series of its gauge vectors.
func (p *Publisher) Publish(r Report) {
	p.mu.Lock()
	defer p.mu.Unlock()
	next := make(map[*prometheus.GaugeVec]map[string]published, len(r))
	for vec, all := range r {
		prev := p.last[vec]
		cur := make(map[string]published, len(all))
		for key, s := range all {
			g, ok := prev[key]
			if !ok {
				g = published{labels: s.labels, gauge: vec.WithLabelValues(s.labels...)}
			}
			g.gauge.Set(s.value)
			cur[key] = g
		}
		next[vec] = cur
	}
	for vec, all := range p.last {
		for key, g := range all {
			if _, kept := next[vec][key]; !kept {
				vec.DeleteLabelValues(g.labels...)
			}
		}
	}
	p.last = next
}

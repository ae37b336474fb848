package metrics

import (
	"fmt"
	"math"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// maxLabels is the most labels a gauge vector published through a Publisher may have.
const maxLabels = 3

// labelKey is a series' label values, held by value so that keying a series costs no
// allocation: a session close keys tens of thousands of them.
type labelKey struct {
	n      int
	values [maxLabels]string
}

func keyOf(labels []string) labelKey {
	if len(labels) > maxLabels {
		panic(fmt.Sprintf("metrics: a published series has %d labels, at most %d are kept", len(labels), maxLabels))
	}
	k := labelKey{n: len(labels)}
	copy(k.values[:], labels)
	return k
}

func (k *labelKey) labels() []string { return k.values[:k.n] }

// Publisher writes successive reports of the same gauge vectors, each one complete set of
// series: every series that should exist after it is published, with its value. The series
// of the previous report that the new one leaves out (a deleted queue, a
// finished job, a resource a queue no longer has) are deleted once the new values are set.
// Series that live on are overwritten in place and never missing from a scrape, as they
// would be after a Reset. The vectors must change only through their publisher: it keeps
// the gauges it set and the values they show, to set only the values that changed, without
// looking the gauges up.
type Publisher struct {
	mu sync.Mutex
	// report counts the reports published; a series the latest one holds is marked with it.
	report uint64
	// series holds every series of the previous report, and those the report being
	// published has added so far.
	series map[*prometheus.GaugeVec]map[labelKey]*published
}

type published struct {
	gauge prometheus.Gauge
	// value is the series' value in the report that marked it; shown is what the gauge shows.
	value, shown float64
	report       uint64
}

// Report is the report being published: fill sets its series through it.
type Report struct{ p *Publisher }

// Set adds the series of vec with the given label values to the report.
func (r Report) Set(vec *prometheus.GaugeVec, value float64, labels ...string) {
	r.p.entry(vec, labels).value = value
}

// Add adds value to the series of vec with the given label values, which starts at 0 when
// the report does not hold it yet: for a series that sums several things.
func (r Report) Add(vec *prometheus.GaugeVec, value float64, labels ...string) {
	r.p.entry(vec, labels).value += value
}

// entry is the series of vec with the given labels, marked as held by the report being
// published; its value is 0 if the report did not hold it yet.
func (p *Publisher) entry(vec *prometheus.GaugeVec, labels []string) *published {
	all := p.series[vec]
	if all == nil {
		all = map[labelKey]*published{}
		p.series[vec] = all
	}
	key := keyOf(labels)
	s := all[key]
	if s == nil {
		s = &published{}
		all[key] = s
	}
	if s.report != p.report {
		s.value, s.report = 0, p.report
	}
	return s
}

// Publish makes the series fill sets the series of their gauge vectors. The gauges show
// the new values only once fill has returned, so that no scrape sees part of a sum.
func (p *Publisher) Publish(fill func(Report)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.report++
	if p.series == nil {
		p.series = map[*prometheus.GaugeVec]map[labelKey]*published{}
	}
	fill(Report{p})
	for vec, all := range p.series {
		for key, s := range all {
			switch {
			case s.report != p.report:
				// A series without a gauge was added by a fill that panicked.
				if s.gauge != nil {
					vec.DeleteLabelValues(key.labels()...)
				}
				delete(all, key)
			case s.gauge == nil:
				s.gauge = vec.WithLabelValues(key.labels()...)
				s.gauge.Set(s.value)
				s.shown = s.value
			// Bits, not ==: a NaN is set again, and -0 replaces 0.
			case math.Float64bits(s.shown) != math.Float64bits(s.value):
				s.gauge.Set(s.value)
				s.shown = s.value
			}
		}
		if len(all) == 0 {
			delete(p.series, vec)
		}
	}
}

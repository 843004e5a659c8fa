// Package promtext reads Prometheus text-format scrapes (the API server's
// and the manager's /metrics) for the e2e suites and the benchmarks.
package promtext

import (
	"bytes"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Sample is one series of a scrape.
type Sample struct {
	Labels map[string]string
	// Value is a counter's or gauge's value, or a histogram's sum.
	Value float64
	// Count is a histogram's sample count (0 for other types).
	Count float64
}

// Scrape holds the samples of a scrape, by metric name.
type Scrape map[string][]Sample

// Parse reads a text-format scrape.
func Parse(raw []byte) (Scrape, error) {
	parser := expfmt.NewTextParser(model.LegacyValidation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	out := Scrape{}
	for name, f := range families {
		for _, m := range f.GetMetric() {
			s := Sample{Labels: map[string]string{}}
			for _, l := range m.GetLabel() {
				s.Labels[l.GetName()] = l.GetValue()
			}
			switch {
			case m.GetCounter() != nil:
				s.Value = m.GetCounter().GetValue()
			case m.GetGauge() != nil:
				s.Value = m.GetGauge().GetValue()
			case m.GetHistogram() != nil:
				s.Value = m.GetHistogram().GetSampleSum()
				s.Count = float64(m.GetHistogram().GetSampleCount())
			}
			out[name] = append(out[name], s)
		}
	}
	return out, nil
}

// Sum adds the values (and histogram counts) of the samples of a metric
// whose labels include every given pair; a pair with an empty value also
// matches a sample without that label.
func (s Scrape) Sum(name string, match map[string]string) (value, count float64) {
	for _, smp := range s[name] {
		if matches(smp.Labels, match) {
			value += smp.Value
			count += smp.Count
		}
	}
	return value, count
}

// SumBy is Sum grouped by the value of one label.
func (s Scrape) SumBy(name string, match map[string]string, by string) map[string]float64 {
	out := map[string]float64{}
	for _, smp := range s[name] {
		if matches(smp.Labels, match) {
			out[smp.Labels[by]] += smp.Value
		}
	}
	return out
}

func matches(labels, match map[string]string) bool {
	for k, v := range match {
		if labels[k] != v {
			return false
		}
	}
	return true
}

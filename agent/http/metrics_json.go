package http

import (
	"fmt"
	nethttp "net/http"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/drover/drover/api"
)

// MetricsSummary is Nomad's JSON metrics shape (GET /v1/metrics?format=json).
type MetricsSummary struct {
	Timestamp string         `json:"Timestamp"`
	Gauges    []GaugeValue   `json:"Gauges"`
	Counters  []SampledValue `json:"Counters"`
	Samples   []SampledValue `json:"Samples"`
	Points    []struct{}     `json:"Points"`
}

// GaugeValue is one gauge.
type GaugeValue struct {
	Name   string            `json:"Name"`
	Value  float64           `json:"Value"`
	Labels map[string]string `json:"Labels"`
}

// SampledValue is one counter or distribution (histograms and summaries:
// Count and Sum, Mean derived).
type SampledValue struct {
	Name   string            `json:"Name"`
	Count  uint64            `json:"Count"`
	Sum    float64           `json:"Sum"`
	Mean   float64           `json:"Mean"`
	Labels map[string]string `json:"Labels"`
}

// metrics serves GET /v1/metrics: Prometheus text (the default) or, with
// ?format=json, Nomad's JSON summary.
func (h *agentHandlers) metrics(w nethttp.ResponseWriter, r *nethttp.Request) {
	switch f := r.URL.Query().Get("format"); f {
	case "", "prometheus":
		h.prom.ServeHTTP(w, r)
	case "json":
		h.s.wrap(h.metricsJSON)(w, r)
	default:
		h.s.wrap(func(nethttp.ResponseWriter, *nethttp.Request) (any, error) {
			return nil, api.Errorf(api.ErrBadRequest, fmt.Sprintf("format=%q: want prometheus or json", f))
		})(w, r)
	}
}

func (h *agentHandlers) metricsJSON(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	families, err := h.s.cfg.Registry.Gather()
	if err != nil {
		return nil, fmt.Errorf("gather metrics: %w", err)
	}
	out := &MetricsSummary{Timestamp: time.Now().UTC().Format("2006-01-02 15:04:05 -0700 MST"),
		Gauges: []GaugeValue{}, Counters: []SampledValue{}, Samples: []SampledValue{}, Points: []struct{}{}}
	for _, mf := range families {
		name := mf.GetName()
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			switch mf.GetType() {
			case dto.MetricType_GAUGE:
				out.Gauges = append(out.Gauges, GaugeValue{Name: name, Value: m.GetGauge().GetValue(), Labels: labels})
			case dto.MetricType_UNTYPED:
				out.Gauges = append(out.Gauges, GaugeValue{Name: name, Value: m.GetUntyped().GetValue(), Labels: labels})
			case dto.MetricType_COUNTER:
				v := m.GetCounter().GetValue()
				out.Counters = append(out.Counters, SampledValue{Name: name, Count: uint64(v), Sum: v, Mean: 1, Labels: labels})
			case dto.MetricType_HISTOGRAM:
				h := m.GetHistogram()
				out.Samples = append(out.Samples, sampled(name, h.GetSampleCount(), h.GetSampleSum(), labels))
			case dto.MetricType_SUMMARY:
				sm := m.GetSummary()
				out.Samples = append(out.Samples, sampled(name, sm.GetSampleCount(), sm.GetSampleSum(), labels))
			}
		}
	}
	return out, nil
}

func sampled(name string, n uint64, sum float64, labels map[string]string) SampledValue {
	v := SampledValue{Name: name, Count: n, Sum: sum, Labels: labels}
	if n > 0 {
		v.Mean = sum / float64(n)
	}
	return v
}

package server

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the server's Prometheus collectors.
type metrics struct {
	collectors      []prometheus.Collector
	placements      prometheus.Counter
	planApply       prometheus.Histogram
	heartbeats      prometheus.Counter
	heartbeatMisses prometheus.Counter
}

func newMetrics(s *Server) *metrics {
	m := &metrics{
		placements: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "drover_server_placements_total", Help: "Allocations committed by the plan applier."}),
		planApply: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "drover_server_plan_apply_seconds", Help: "Time to verify and commit one plan.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14)}),
		heartbeats: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "drover_server_heartbeats_total", Help: "Node heartbeats received by the leader."}),
		heartbeatMisses: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "drover_server_heartbeat_misses_total", Help: "Nodes marked down after a missed heartbeat."}),
	}
	gauge := func(name, help string, f func() float64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, f)
	}
	m.collectors = []prometheus.Collector{
		m.placements, m.planApply, m.heartbeats, m.heartbeatMisses,
		gauge("drover_broker_ready", "Evaluations ready for a worker.", func() float64 { return float64(s.broker.Stats().TotalReady) }),
		gauge("drover_broker_unacked", "Evaluations in flight.", func() float64 { return float64(s.broker.Stats().TotalUnacked) }),
		gauge("drover_broker_pending", "Evaluations waiting behind another of the same job.", func() float64 { return float64(s.broker.Stats().TotalPending) }),
		gauge("drover_broker_delayed", "Evaluations waiting for their WaitUntil.", func() float64 { return float64(s.broker.Stats().TotalDelayed) }),
		gauge("drover_broker_blocked", "Blocked evaluations waiting for capacity.", func() float64 { return float64(s.blocked.Stats().TotalBlocked) }),
		gauge("drover_plan_queue_depth", "Plans waiting for the applier.", func() float64 { return float64(s.planQueue.Depth()) }),
		queueCollector{s: s},
	}
	return m
}

// register adds the collectors; one already registered (a second server
// in the same process on a shared registry) is not an error.
func (m *metrics) register(r prometheus.Registerer) error {
	for _, c := range m.collectors {
		if err := r.Register(c); err != nil {
			var are prometheus.AlreadyRegisteredError
			if errors.As(err, &are) {
				continue
			}
			return err
		}
	}
	return nil
}

package server

import (
	"sort"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/drover/drover/api"
	"github.com/drover/drover/server/state"
)

// Per-queue gauges. The usage ones come from the usage ledger: cumulative
// finished usage (which retention does not drop) plus the running allocs
// up to the scrape, so they only grow, like counters, while the server
// keeps its state. The allocated (the queue's subtree), guaranteed and
// fair-share ones come from the queue statuses (Server.queueStatus, by
// default the state's QueueStatuses, whose FairShare is nil: no fair-share
// gauge until the fair-share calculator installs a QueueStatusFunc that
// fills it).
var (
	descQueueGPUSeconds = prometheus.NewDesc("drover_queue_usage_gpu_seconds",
		"GPU-seconds a queue's allocs used, by GPU model (usage ledger, running allocs up to now).", []string{"queue", "model"}, nil)
	descQueueCPUSeconds = prometheus.NewDesc("drover_queue_usage_cpu_core_seconds",
		"CPU-core-seconds a queue's allocs used (usage ledger, running allocs up to now).", []string{"queue"}, nil)
	descQueueMemSeconds = prometheus.NewDesc("drover_queue_usage_memory_gib_seconds",
		"Memory GiB-seconds a queue's allocs used (usage ledger, running allocs up to now).", []string{"queue"}, nil)
)

// queueResourceDescs are drover_queue_<kind>_{gpus,cpu,memory}: GPUs
// (also by model, label model, "" for the total), CPU MHz, memory MB.
func queueResourceDescs(kind, what string) [3]*prometheus.Desc {
	return [3]*prometheus.Desc{
		prometheus.NewDesc("drover_queue_"+kind+"_gpus", "GPUs "+what+" (model \"\": all models).", []string{"queue", "model"}, nil),
		prometheus.NewDesc("drover_queue_"+kind+"_cpu", "CPU MHz "+what+".", []string{"queue"}, nil),
		prometheus.NewDesc("drover_queue_"+kind+"_memory", "Memory MB "+what+".", []string{"queue"}, nil),
	}
}

var (
	descQueueAllocated  = queueResourceDescs("allocated", "the queue's non-terminal allocs hold")
	descQueueGuaranteed = queueResourceDescs("guaranteed", "guaranteed to the queue")
	descQueueFairShare  = queueResourceDescs("fair_share", "of the queue's current fair share")
)

// QueueStatusFunc lists the queues with what they hold and their fair
// share, for the drover_queue_{allocated,guaranteed,fair_share}_* gauges:
// set Server.queueStatus before the server serves to replace it (nil
// reads the state's QueueStatuses with the leader's fair shares).
type QueueStatusFunc func() ([]*api.QueueStatus, error)

// queueCollector collects the per-queue gauges at scrape time.
type queueCollector struct {
	s *Server
}

func (c queueCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descQueueGPUSeconds
	ch <- descQueueCPUSeconds
	ch <- descQueueMemSeconds
	for _, ds := range [][3]*prometheus.Desc{descQueueAllocated, descQueueGuaranteed, descQueueFairShare} {
		for _, d := range ds {
			ch <- d
		}
	}
}

func (c queueCollector) Collect(ch chan<- prometheus.Metric) {
	collectUsage(ch, c.s.State(), c.s.core.clock.Now().UnixNano())
	f := c.s.queueStatus
	if f == nil {
		f = func() ([]*api.QueueStatus, error) {
			qs, err := c.s.State().QueueStatuses(nil, "")
			for i, q := range qs {
				if q != nil && q.Queue != nil && q.FairShare == nil {
					cp := *q
					cp.FairShare = c.s.fair.share(q.Queue.Name)
					qs[i] = &cp
				}
			}
			return qs, err
		}
	}
	qs, err := f()
	if err != nil {
		c.s.core.log.Warn("queue gauges", "err", err)
		return
	}
	collectQueueStatus(ch, qs)
}

// collectUsage emits the ledger's per-queue usage at now (Unix ns).
func collectUsage(ch chan<- prometheus.Metric, st *state.StateStore, now int64) {
	totals, err := st.UsageTotals(now)
	if err != nil {
		return
	}
	queues := make([]string, 0, len(totals))
	for q := range totals {
		queues = append(queues, q)
	}
	sort.Strings(queues)
	for _, q := range queues {
		u := totals[q]
		for m, v := range u.GPUSeconds {
			ch <- prometheus.MustNewConstMetric(descQueueGPUSeconds, prometheus.GaugeValue, v, q, m)
		}
		ch <- prometheus.MustNewConstMetric(descQueueCPUSeconds, prometheus.GaugeValue, u.CPUCoreSeconds, q)
		ch <- prometheus.MustNewConstMetric(descQueueMemSeconds, prometheus.GaugeValue, u.MemoryGiBSeconds, q)
	}
}

// collectQueueStatus emits allocated, guaranteed (when set) and fair share
// (when computed) per queue.
func collectQueueStatus(ch chan<- prometheus.Metric, qs []*api.QueueStatus) {
	for _, s := range qs {
		if s == nil || s.Queue == nil {
			continue
		}
		name := s.Queue.Name
		emitResources(ch, descQueueAllocated, name, &s.Allocated)
		if s.Queue.Guaranteed != nil {
			emitResources(ch, descQueueGuaranteed, name, s.Queue.Guaranteed)
		}
		if s.FairShare != nil {
			emitResources(ch, descQueueFairShare, name, s.FairShare)
		}
	}
}

func emitResources(ch chan<- prometheus.Metric, d [3]*prometheus.Desc, queue string, r *api.QueueResources) {
	ch <- prometheus.MustNewConstMetric(d[0], prometheus.GaugeValue, float64(r.GPUs), queue, "")
	for m, n := range r.GPUsByModel {
		ch <- prometheus.MustNewConstMetric(d[0], prometheus.GaugeValue, float64(n), queue, m)
	}
	ch <- prometheus.MustNewConstMetric(d[1], prometheus.GaugeValue, float64(r.CPU), queue)
	ch <- prometheus.MustNewConstMetric(d[2], prometheus.GaugeValue, float64(r.MemoryMB), queue)
}

package state

import (
	"fmt"
	"strings"

	"github.com/drover/drover/api"
	"github.com/hashicorp/go-memdb"
)

// QueueStatuses returns the status of each queue whose name starts with
// prefix, sorted by name. A queue's Allocated, RunningAllocs and
// PendingJobs cover its subtree (its own jobs and its descendants'), what
// its Limit and Guaranteed are compared with. PendingJobs counts the
// queue's jobs that are not stopped and have allocs waiting to be placed
// (job status pending or a group with queued allocs). FairShare is left
// nil (the fair-share calculator fills it).
func (r *reads) QueueStatuses(ws memdb.WatchSet, prefix string) ([]*api.QueueStatus, error) {
	queues, err := r.Queues(ws, prefix)
	if err != nil {
		return nil, err
	}
	if len(queues) == 0 {
		return []*api.QueueStatus{}, nil
	}
	rows, err := list[QueueUsageRow](r, ws, nil, TableQueueUsage, "id")
	if err != nil {
		return nil, fmt.Errorf("read queue usage: %w", err)
	}
	jobs, err := r.Jobs(ws, AllNamespaces, "")
	if err != nil {
		return nil, fmt.Errorf("read jobs: %w", err)
	}
	pending := map[string]int{}
	for _, j := range jobs {
		if j.Stop || j.Status == api.JobStatusDead {
			continue
		}
		waiting := j.Status == api.JobStatusPending
		if !waiting {
			sum, err := r.JobSummaryByID(ws, j.Namespace, j.ID)
			if err != nil {
				return nil, fmt.Errorf("read job summary: %w", err)
			}
			for _, tg := range summaryGroups(sum) {
				waiting = waiting || tg.Queued > 0
			}
		}
		if waiting {
			pending[api.JobQueue(j)]++
		}
	}
	gpuUsed, gpuIdle, err := r.queueGPUUse(ws)
	if err != nil {
		return nil, err
	}
	out := make([]*api.QueueStatus, 0, len(queues))
	for _, q := range queues {
		st := &api.QueueStatus{Queue: q}
		for name, used := range gpuUsed {
			if inSubtree(name, q.Name) {
				st.GPUsUsed += used
				st.GPUIdleAllocs += gpuIdle[name]
			}
		}
		for _, row := range rows {
			if inSubtree(row.Queue, q.Name) {
				st.Allocated.Add(row.Usage, 1)
				st.RunningAllocs += row.Allocs
			}
		}
		for name, n := range pending {
			if inSubtree(name, q.Name) {
				st.PendingJobs += n
			}
		}
		out = append(out, st)
	}
	return out, nil
}

// QueueStatus returns one queue's status (see QueueStatuses) or nil, nil.
func (r *reads) QueueStatus(ws memdb.WatchSet, name string) (*api.QueueStatus, error) {
	all, err := r.QueueStatuses(ws, name)
	if err != nil {
		return nil, err
	}
	for _, st := range all {
		if st.Queue.Name == name {
			return st, nil
		}
	}
	return nil, nil
}

func summaryGroups(sum *api.JobSummary) map[string]api.TaskGroupSummary {
	if sum == nil {
		return nil
	}
	return sum.Summary
}

// inSubtree reports whether queue is root or one of its descendants.
func inSubtree(queue, root string) bool {
	return queue == root || strings.HasPrefix(queue, root+"/")
}

// queueGPUUse is, by queue (its own jobs only), the GPUs' worth of
// utilization of the live allocs that report GPU usage, and how many of
// them hold idle GPUs.
func (r *reads) queueGPUUse(ws memdb.WatchSet) (used map[string]float64, idle map[string]int, err error) {
	allocs, err := r.Allocs(ws, AllNamespaces, "")
	if err != nil {
		return nil, nil, fmt.Errorf("read allocs: %w", err)
	}
	used, idle = map[string]float64{}, map[string]int{}
	for _, a := range allocs {
		u := a.GPUUsage
		if u == nil || a.Job == nil || a.TerminalStatus() {
			continue
		}
		q := api.JobQueue(a.Job)
		used[q] += float64(u.GPUs) * u.UtilPercent / 100
		if u.IdleSince != 0 {
			idle[q]++
		}
	}
	return used, idle, nil
}

package server

import (
	"fmt"

	"github.com/drover/drover/api"
	"github.com/drover/drover/server/fairshare"
	"github.com/drover/drover/server/state"
)

// queueLimitWarnings says, for each group whose allocation asks more GPUs
// than a limit of the job's queue (or of an ancestor) allows by itself,
// that it can never run under that limit. The job is accepted all the
// same and its group stays pending, blocked with that reason (as Nomad's
// quotas and Kueue's inadmissible workloads): an operator may raise the
// limit, and then it runs.
func queueLimitWarnings(st *state.StateStore, job *api.Job) ([]string, error) {
	var limits []*api.Queue
	for _, name := range api.QueueAncestry(api.JobQueue(job)) {
		q, err := st.QueueByName(nil, name)
		if err != nil {
			return nil, err
		}
		if q != nil && q.Limit != nil && q.Limit.GPUs > 0 {
			limits = append(limits, q)
		}
	}
	if len(limits) == 0 {
		return nil, nil
	}
	var out []string
	for _, tg := range job.TaskGroups {
		gpus := fairshare.GroupAsk(tg).GPUs
		for _, q := range limits {
			if api.RoundGPUs(gpus) > q.Limit.GPUs {
				out = append(out, fmt.Sprintf("group %q asks %s GPUs per allocation, more than queue %s's limit of %s: it can never run under this limit and stays pending until the limit is raised",
					tg.Name, api.FormatGPUs(gpus), q.Name, api.FormatGPUs(q.Limit.GPUs)))
				break
			}
		}
	}
	return out, nil
}

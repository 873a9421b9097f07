package server

import (
	"sort"

	"github.com/drover/drover/api"
	"github.com/drover/drover/server/scheduler"
	"github.com/drover/drover/server/state"
)

// The expected GPU workload (scheduler.Workload) the leader's workers
// score fragmentation against: the shapes of recent GPU asks. It lives on
// the leader only. A new leader seeds it from the jobs in state, oldest
// submission first (so the newest weigh most), then each eval a
// submission triggers adds its job's asks.

// seedWorkload resets w to the live jobs of st.
func seedWorkload(w *scheduler.Workload, st *state.StateStore) error {
	jobs, err := st.Jobs(nil, "*", "")
	if err != nil {
		return err
	}
	sort.SliceStable(jobs, func(i, j int) bool { return jobs[i].SubmitTime < jobs[j].SubmitTime })
	w.Reset()
	for _, j := range jobs {
		if !j.Stop {
			w.Observe(j)
		}
	}
	return nil
}

// submitted reports whether an eval of this trigger follows a new
// submission of its job's asks (not a re-run over the same ones).
func submitted(trigger string) bool {
	switch trigger {
	case api.EvalTriggerJobRegister, api.EvalTriggerJobScaling, api.EvalTriggerPeriodicJob:
		return true
	}
	return false
}

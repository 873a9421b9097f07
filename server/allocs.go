package server

import (
	"context"
	"fmt"

	"github.com/drover/drover/api"
)

// Allocs is the component of an operator's (or a job owner's) writes to
// one allocation: stop it and let the scheduler replace it. The clients'
// own alloc updates come through Nodes. It is safe for concurrent use.
type Allocs struct{ serverCore }

// StopAlloc asks the scheduler to stop and replace an allocation.
func (al *Allocs) StopAlloc(ctx context.Context, id string) (*api.AllocStopResponse, error) {
	if !al.isLeader() {
		return nil, errNotLeader()
	}
	st := al.state()
	a, err := st.AllocByID(nil, id)
	if err != nil {
		return nil, fmt.Errorf("alloc %s: %w", id, err)
	}
	if a == nil {
		return nil, fmt.Errorf("alloc %s: %w", id, api.ErrAllocNotFound)
	}
	job, _ := st.JobByID(nil, a.Namespace, a.JobID)
	if job == nil {
		job = a.Job
	}
	if job == nil {
		return nil, fmt.Errorf("job %q of alloc %s: %w", a.JobID, id, api.ErrJobNotFound)
	}
	t := true
	tr := map[string]*api.DesiredTransition{id: {Migrate: &t}}
	eval := al.newJobEval(job, api.EvalTriggerAllocStop)
	idx, err := al.applyDesiredTransitions(ctx, tr, []*api.Evaluation{eval})
	if err != nil {
		return nil, fmt.Errorf("stop alloc %s: %w", id, err)
	}
	return &api.AllocStopResponse{EvalID: eval.ID, Index: idx}, nil
}

package api

import (
	"context"
	"net/http"
)

// DefragPlan is what one defragmentation round decided (POST
// /v1/operator/defrag): the moves of restartable allocs that make room
// for pending work, and that work. A dry run computes it without
// committing; otherwise Applied says which moves were made.
type DefragPlan struct {
	Moves []*DefragMove `json:"Moves,omitempty"`
	// Unblocks names the pending groups the moves make room for,
	// "namespace/job.group" (namespace "default" left out: "job.group").
	Unblocks []string `json:"Unblocks,omitempty"`
	// FreedNodes are the nodes the moves empty enough for the pending
	// work.
	FreedNodes []string `json:"FreedNodes,omitempty"`
	DryRun     bool     `json:"DryRun,omitempty"`
	// EvalIDs are the evals created to apply the moves (one per job).
	EvalIDs []string `json:"EvalIDs,omitempty"`
}

// DefragMove is one alloc to move: it is stopped on From (desired
// description "defragmentation") and placed again on To in the same plan;
// when it does not fit there the move is not made and the alloc keeps
// running.
type DefragMove struct {
	AllocID   string `json:"AllocID"`
	AllocName string `json:"AllocName"`
	Namespace string `json:"Namespace"`
	JobID     string `json:"JobID"`
	From      string `json:"From"` // node ID
	FromName  string `json:"FromName,omitempty"`
	To        string `json:"To"`
	ToName    string `json:"ToName,omitempty"`
	// Why says what the move makes room for ("frees node n3 for
	// train.workers (8 GPU)").
	Why string `json:"Why"`
}

// EvalTriggerDefrag is the trigger of the evals that apply a
// defragmentation plan's moves (Evaluation.DefragMoves).
const EvalTriggerDefrag = "defrag"

// DefragDescription is the desired description of an alloc stopped by
// a defragmentation move.
const DefragDescription = "defragmentation"

// Defrag computes a defragmentation plan and, unless dryRun, applies it
// (POST /v1/operator/defrag?dry_run=true|false).
func (c *Client) Defrag(ctx context.Context, dryRun bool) (*DefragPlan, error) {
	var out DefragPlan
	o := &WriteOptions{Params: map[string]string{"dry_run": "false"}}
	if dryRun {
		o.Params["dry_run"] = "true"
	}
	if err := c.Write(ctx, http.MethodPost, "/v1/operator/defrag", nil, &out, o); err != nil {
		return nil, err
	}
	return &out, nil
}

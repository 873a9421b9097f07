package server

import (
	"context"
	"fmt"

	"github.com/drover/drover/api"
	"github.com/drover/drover/server/fsm"
)

// ApplyNodeMIG asks a new MIG layout of some of a node's GPUs
// (`drover node gpu mig-apply`). The node must be ready and report the
// GPUs (its client does, where it can change them), and each layout must
// fit its GPU (api.Node.CheckMIGLayouts); layouts a GPU already has are
// left out, and with nothing left nothing is written (no ChangeID). The
// change is refused with ErrConflict while another of the node is pending
// or a live alloc holds one of the GPUs or their MIG instances: the state
// transaction that writes it checks (state.Txn.UpdateNodeMIG), and from
// then on the scheduler sees those devices unavailable and the plan
// applier refuses placements on them. The node's client applies it and
// reports the outcome with its next registration.
func (n *Nodes) ApplyNodeMIG(ctx context.Context, req *api.NodeMIGApplyRequest) (*api.NodeMIGApplyResponse, error) {
	if req == nil || req.NodeID == "" {
		return nil, fmt.Errorf("mig apply: missing node ID: %w", api.ErrBadRequest)
	}
	node, err := n.leaderNode(req.NodeID)
	if err != nil {
		return nil, err
	}
	if len(node.GPUs) == 0 {
		return nil, api.Errorf(api.ErrBadRequest, fmt.Sprintf("node %s reports no GPUs whose MIG layout its client can change", req.NodeID))
	}
	if err := node.CheckMIGLayouts(req.Layouts); err != nil {
		return nil, api.Errorf(api.ErrBadRequest, fmt.Sprintf("node %s: %v", req.NodeID, err))
	}
	if node.Status != api.NodeStatusReady {
		return nil, api.Errorf(api.ErrConflict, fmt.Sprintf("node %s is %s: its client applies MIG layouts, so it must be ready", req.NodeID, node.Status))
	}
	var layouts []api.MIGLayout
	for _, l := range req.Layouts {
		if !node.GPU(l.GPU).SameMIGLayout(l) {
			layouts = append(layouts, l)
		}
	}
	if len(layouts) == 0 {
		return &api.NodeMIGApplyResponse{NodeModifyIndex: node.ModifyIndex, Index: n.state().LatestIndex()}, nil
	}
	now := n.clock.Now()
	change := &api.NodeMIGChange{ID: newID(), Layouts: layouts, Status: api.MIGChangePending, CreateTime: now.UnixNano()}
	ev := &api.NodeEvent{Message: fmt.Sprintf("MIG layout change of %d GPU(s) asked", len(layouts)), Subsystem: "MIG",
		Details: map[string]string{"change": change.ID}, Timestamp: now}
	idx, err := n.apply(ctx, fsm.NodeMIGUpdateType, &fsm.NodeMIGUpdateRequest{NodeID: node.ID, Change: change, Event: ev})
	if err != nil {
		return nil, fmt.Errorf("MIG change of node %s: %w", node.ID, err)
	}
	n.log.Info("node mig change asked", "node", node.ID, "change", change.ID, "gpus", len(layouts))
	return &api.NodeMIGApplyResponse{ChangeID: change.ID, NodeModifyIndex: idx, Index: idx}, nil
}

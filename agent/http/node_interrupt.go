package http

import (
	"fmt"
	nethttp "net/http"

	"github.com/drover/drover/api"
)

// interrupt serves POST /v1/node/{id}/interrupt (node write, as drain): a
// spot interruption notice. The node drains with the notice's deadline
// and the reason api.DrainReasonSpot, which the migrated allocs carry.
func (h *nodeHandlers) interrupt(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	if err := h.ready(); err != nil {
		return nil, err
	}
	var req api.NodeInterruptRequest
	id, err := decodeNodeBody(r, &req, &req.NodeID)
	if err != nil {
		return nil, err
	}
	if req.Deadline <= 0 || req.Deadline > api.MaxInterruptDeadline {
		return nil, api.Errorf(api.ErrBadRequest, fmt.Sprintf("Deadline %v: want more than 0 and at most %v", req.Deadline, api.MaxInterruptDeadline))
	}
	resp, err := h.b.UpdateNodeDrain(r.Context(), &api.NodeUpdateDrainRequest{NodeID: id,
		DrainSpec: &api.DrainSpec{Deadline: req.Deadline, Reason: api.DrainReasonSpot}})
	if err != nil {
		return nil, fmt.Errorf("interrupt node %q: %w", id, err)
	}
	return resp, nil
}

package http

import (
	"fmt"
	nethttp "net/http"

	memdb "github.com/hashicorp/go-memdb"

	"github.com/drover/drover/api"
)

// migApply serves POST /v1/node/{id}/gpu/mig: a new MIG layout of some of
// the node's GPUs (node write, as drain). 409 while a live alloc holds
// one of them, or another change of the node is pending.
func (h *nodeHandlers) migApply(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	if err := h.ready(); err != nil {
		return nil, err
	}
	var req api.NodeMIGApplyRequest
	id, err := decodeNodeBody(r, &req, &req.NodeID)
	if err != nil {
		return nil, err
	}
	req.NodeID = id
	resp, err := h.b.ApplyNodeMIG(r.Context(), &req)
	if err != nil {
		return nil, fmt.Errorf("MIG layout of node %q: %w", id, err)
	}
	return resp, nil
}

// clientMIG serves GET /v1/node/{id}/client-mig, what a client long-polls
// (its own secret): the node's MIG change, answered again whenever the
// node changes.
func (h *nodeHandlers) clientMIG(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	id := r.PathValue("id")
	return h.s.blocking(w, r, func(st Store, ws memdb.WatchSet) (any, uint64, error) {
		n, err := existingNode(st, ws, id)
		if err != nil {
			return nil, 0, err
		}
		return &api.NodeClientMIGResponse{Change: n.MIGChange}, n.ModifyIndex, nil
	})
}

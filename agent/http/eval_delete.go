package http

import (
	"context"
	nethttp "net/http"

	"github.com/drover/drover/api"
)

// EvalsBackend is the evaluation write side of the server role (errors
// wrap api sentinels: ErrBadRequest while the eval broker is not paused).
type EvalsBackend interface {
	DeleteEvals(ctx context.Context, ids []string) (uint64, error)
}

// delete serves DELETE /v1/evaluations (Nomad's): the body names the
// evals by ID or selects them with a filter (across namespaces).
func (h *evalHandlers) delete(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	if err := h.s.need(h.b != nil && h.s.role.State != nil, "this server cannot delete evaluations"); err != nil {
		return nil, err
	}
	var req api.EvalDeleteRequest
	if err := decodeBody(r, &req); err != nil {
		return nil, err
	}
	if (len(req.EvalIDs) == 0) == (req.Filter == "") {
		return nil, api.Errorf(api.ErrBadRequest, "give EvalIDs or a Filter (one of the two)")
	}
	ids := req.EvalIDs
	if req.Filter != "" {
		evals, err := h.s.state(nil).Evals(nil, allNamespaces, "")
		if err != nil {
			return nil, err
		}
		if evals, err = filterItems(evals, req.Filter); err != nil {
			return nil, err
		}
		if len(evals) == 0 {
			return &api.EvalDeleteResponse{}, nil
		}
		for _, e := range evals {
			ids = append(ids, e.ID)
		}
	}
	idx, err := h.b.DeleteEvals(r.Context(), ids)
	if err != nil {
		return nil, err
	}
	h.s.setMeta(w, idx)
	return &api.EvalDeleteResponse{Count: len(ids)}, nil
}

package http

import (
	"context"
	nethttp "net/http"

	"github.com/drover/drover/api"
)

// EvalDeleter is the optional eval-delete ability of Server (errors wrap
// api sentinels: ErrBadRequest while the eval broker is not paused).
type EvalDeleter interface {
	DeleteEvals(ctx context.Context, ids []string) (uint64, error)
}

// evalDelete serves DELETE /v1/evaluations (Nomad's): the body names the
// evals by ID or selects them with a filter (across namespaces).
func (s *HTTPServer) evalDelete(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	if err := s.needServer(); err != nil {
		return nil, err
	}
	del, ok := s.cfg.Server.(EvalDeleter)
	if !ok {
		return nil, api.Errorf(api.ErrUnavailable, "this server cannot delete evaluations")
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
		evals, err := s.cfg.State.Evals(nil, allNamespaces, "")
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
	idx, err := del.DeleteEvals(r.Context(), ids)
	if err != nil {
		return nil, err
	}
	s.setMeta(w, idx)
	return &api.EvalDeleteResponse{Count: len(ids)}, nil
}

package http

import (
	"context"
	nethttp "net/http"
	"strconv"

	"github.com/drover/drover/api"
)

// Defragger is the operator backend's defragmentation (server.Operator):
// an optional ability, found by type assertion.
type Defragger interface {
	Defrag(ctx context.Context, dryRun bool) (*api.DefragPlan, error)
}

// defrag serves POST /v1/operator/defrag?dry_run=: the plan, applied
// unless dry_run is true (opDefrag checks operator read or write).
func (h *operatorHandlers) defrag(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	if err := h.ready(); err != nil {
		return nil, err
	}
	d, ok := h.b.(Defragger)
	if !ok {
		return nil, api.Errorf(api.ErrBadRequest, "this server cannot defragment")
	}
	dry := false
	if v := r.URL.Query().Get("dry_run"); v != "" {
		var err error
		if dry, err = strconv.ParseBool(v); err != nil {
			return nil, api.Errorf(api.ErrBadRequest, "dry_run: want true or false")
		}
	}
	return d.Defrag(r.Context(), dry)
}

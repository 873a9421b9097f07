package http

import (
	"fmt"
	nethttp "net/http"
	"sort"

	memdb "github.com/hashicorp/go-memdb"

	"github.com/drover/drover/api"
	"github.com/drover/drover/server/acl"
)

// scalingHandlers serve Nomad's scaling policy reads, for external
// autoscalers: the policies live in the jobs' groups (scaling blocks).
type scalingHandlers struct{ s *HTTPServer }

// scalingPolicies lists the policies of the namespace's jobs ("*": all),
// sorted by ID; job filters by job ID.
func scalingPolicies(st JobState, ws memdb.WatchSet, ns, job string) ([]*api.ScalingPolicy, error) {
	jobs, err := st.Jobs(ws, ns, "")
	if err != nil {
		return nil, err
	}
	var out []*api.ScalingPolicy
	for _, j := range jobs {
		if job != "" && j.ID != job {
			continue
		}
		out = append(out, j.ScalingPolicies()...)
	}
	sort.Slice(out, func(a, b int) bool { return out[a].ID < out[b].ID })
	return out, nil
}

func (h *scalingHandlers) list(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	if err := h.s.need(h.s.role.State != nil, "scaling policies are not available on this agent"); err != nil {
		return nil, err
	}
	q := r.URL.Query()
	if t := q.Get("type"); t != "" && t != api.ScalingPolicyTypeHorizontal {
		return []*api.ScalingPolicyListStub{}, nil
	}
	return h.s.blocking(w, r, func(st Store, ws memdb.WatchSet) (any, uint64, error) {
		ps, err := scalingPolicies(st, ws, nsParam(r), q.Get("job"))
		if err != nil {
			return nil, 0, err
		}
		ps = visible(r, ps, func(p *api.ScalingPolicy) string { return p.Namespace }, acl.CapListScaling)
		out := make([]*api.ScalingPolicyListStub, 0, len(ps))
		for _, p := range ps {
			out = append(out, p.Stub())
		}
		out, err = listPage(w, r, out, func(p *api.ScalingPolicyListStub) string { return p.ID })
		return out, maxIndex(st, "jobs"), err
	})
}

func (h *scalingHandlers) get(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	if err := h.s.need(h.s.role.State != nil, "scaling policies are not available on this agent"); err != nil {
		return nil, err
	}
	id := r.PathValue("id")
	return h.s.blocking(w, r, func(st Store, ws memdb.WatchSet) (any, uint64, error) {
		ps, err := scalingPolicies(st, ws, allNamespaces, "")
		if err != nil {
			return nil, 0, err
		}
		for _, p := range ps {
			if p.ID == id {
				return p, maxIndex(st, "jobs"), checkObject(r, p.Namespace)
			}
		}
		return nil, 0, api.Errorf(api.ErrNotFound, fmt.Sprintf("scaling policy %q not found", id))
	})
}

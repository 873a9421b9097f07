package http

import (
	"fmt"
	nethttp "net/http"
	"sort"

	memdb "github.com/hashicorp/go-memdb"

	"github.com/drover/drover/api"
	"github.com/drover/drover/server/acl"
)

// scalingRoutes are Nomad's scaling policy reads, for external
// autoscalers: the policies live in the jobs' groups (scaling blocks).
func (s *HTTPServer) scalingRoutes() {
	h := func(pattern string, f apiFunc) { s.mux.HandleFunc(pattern, s.wrap(f)) }
	h("GET /v1/scaling/policies", s.scalingPolicyList)
	h("GET /v1/scaling/policy/{id}", s.scalingPolicyGet)
}

// scalingPolicies lists the policies of the namespace's jobs ("*": all),
// sorted by ID; job filters by job ID.
func (s *HTTPServer) scalingPolicies(ws memdb.WatchSet, ns, job string) ([]*api.ScalingPolicy, error) {
	jobs, err := s.cfg.State.Jobs(ws, ns, "")
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

func (s *HTTPServer) scalingPolicyList(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	if err := s.needServer(); err != nil {
		return nil, err
	}
	q := r.URL.Query()
	if t := q.Get("type"); t != "" && t != api.ScalingPolicyTypeHorizontal {
		return []*api.ScalingPolicyListStub{}, nil
	}
	return s.blocking(w, r, func(ws memdb.WatchSet) (any, uint64, error) {
		ps, err := s.scalingPolicies(ws, nsParam(r), q.Get("job"))
		if err != nil {
			return nil, 0, err
		}
		ps = visible(r, ps, func(p *api.ScalingPolicy) string { return p.Namespace }, acl.CapListScaling)
		out := make([]*api.ScalingPolicyListStub, 0, len(ps))
		for _, p := range ps {
			out = append(out, p.Stub())
		}
		out, err = listPage(w, r, out, func(p *api.ScalingPolicyListStub) string { return p.ID })
		return out, s.maxIndex("jobs"), err
	})
}

func (s *HTTPServer) scalingPolicyGet(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	if err := s.needServer(); err != nil {
		return nil, err
	}
	id := r.PathValue("id")
	return s.blocking(w, r, func(ws memdb.WatchSet) (any, uint64, error) {
		ps, err := s.scalingPolicies(ws, allNamespaces, "")
		if err != nil {
			return nil, 0, err
		}
		for _, p := range ps {
			if p.ID == id {
				return p, s.maxIndex("jobs"), checkObject(r, p.Namespace)
			}
		}
		return nil, 0, api.Errorf(api.ErrNotFound, fmt.Sprintf("scaling policy %q not found", id))
	})
}

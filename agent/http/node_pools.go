package http

import (
	"context"
	"fmt"
	nethttp "net/http"

	memdb "github.com/hashicorp/go-memdb"

	"github.com/drover/drover/api"
	"github.com/drover/drover/server/acl"
)

// NodePoolState is the optional node-pool read side of State (found by
// type assertion): the built-in pools and the stored ones.
type NodePoolState interface {
	NodePools(ws memdb.WatchSet, prefix string) ([]*api.NodePool, error)
	NodePoolByName(ws memdb.WatchSet, name string) (*api.NodePool, error)
}

// NodePoolServer is the optional node-pool write side of Server. Errors
// wrap api sentinels (ErrBadRequest for a built-in, invalid or busy pool,
// ErrNotFound for an unknown one).
type NodePoolServer interface {
	UpsertNodePools(ctx context.Context, pools []*api.NodePool) (uint64, error)
	DeleteNodePool(ctx context.Context, name string) (uint64, error)
}

// tableNodePools is the state table of the stored pools.
const tableNodePools = "node_pools"

func (s *HTTPServer) nodePoolRoutes() {
	h := func(pattern string, f apiFunc) { s.mux.HandleFunc(pattern, s.wrap(f)) }
	h("GET /v1/node/pools", s.nodePoolList)
	h("PUT /v1/node/pools", s.nodePoolUpsert)
	h("POST /v1/node/pools", s.nodePoolUpsert)
	h("GET /v1/node/pool/{name}", s.nodePoolGet)
	h("DELETE /v1/node/pool/{name}", s.nodePoolDelete)
	h("GET /v1/node/pool/{name}/nodes", s.nodePoolNodes)
	h("GET /v1/node/pool/{name}/jobs", s.nodePoolJobs)
}

func (s *HTTPServer) nodePoolState() (NodePoolState, error) {
	if s.cfg.State == nil {
		return nil, api.Errorf(api.ErrUnavailable, "this agent does not run the server role")
	}
	st, ok := s.cfg.State.(NodePoolState)
	if !ok {
		return nil, api.Errorf(api.ErrUnavailable, "node pools are not available on this agent")
	}
	return st, nil
}

func (s *HTTPServer) nodePoolServer() (NodePoolServer, error) {
	if err := s.needServer(); err != nil {
		return nil, err
	}
	ps, ok := s.cfg.Server.(NodePoolServer)
	if !ok {
		return nil, api.Errorf(api.ErrUnavailable, "this server cannot change node pools")
	}
	return ps, nil
}

func (s *HTTPServer) nodePoolList(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	st, err := s.nodePoolState()
	if err != nil {
		return nil, err
	}
	prefix := r.URL.Query().Get("prefix")
	return s.blocking(w, r, func(ws memdb.WatchSet) (any, uint64, error) {
		idx := s.maxIndex(tableNodePools)
		pools, err := st.NodePools(ws, prefix)
		if err != nil {
			return nil, 0, err
		}
		pools, err = listPage(w, r, pools, func(p *api.NodePool) string { return p.Name })
		return pools, idx, err
	})
}

// nodePool reads one pool or fails with 404.
func nodePool(st NodePoolState, ws memdb.WatchSet, name string) (*api.NodePool, error) {
	p, err := st.NodePoolByName(ws, name)
	if err != nil {
		return nil, err
	}
	if p == nil {
		return nil, api.Errorf(api.ErrNotFound, fmt.Sprintf("node pool %q not found", name))
	}
	return p, nil
}

func (s *HTTPServer) nodePoolGet(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	st, err := s.nodePoolState()
	if err != nil {
		return nil, err
	}
	return s.blocking(w, r, func(ws memdb.WatchSet) (any, uint64, error) {
		p, err := nodePool(st, ws, r.PathValue("name"))
		return p, s.maxIndex(tableNodePools), err
	})
}

// nodePoolUpsert takes one pool (Nomad's body) and answers the Raft index.
func (s *HTTPServer) nodePoolUpsert(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	ps, err := s.nodePoolServer()
	if err != nil {
		return nil, err
	}
	var p api.NodePool
	if err := decodeBody(r, &p); err != nil {
		return nil, err
	}
	idx, err := ps.UpsertNodePools(r.Context(), []*api.NodePool{&p})
	if err != nil {
		return nil, err
	}
	s.setMeta(w, idx)
	return nil, nil
}

func (s *HTTPServer) nodePoolDelete(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	ps, err := s.nodePoolServer()
	if err != nil {
		return nil, err
	}
	idx, err := ps.DeleteNodePool(r.Context(), r.PathValue("name"))
	if err != nil {
		return nil, err
	}
	s.setMeta(w, idx)
	return nil, nil
}

// nodePoolNodes lists the pool's nodes ("all": every node).
func (s *HTTPServer) nodePoolNodes(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	st, err := s.nodePoolState()
	if err != nil {
		return nil, err
	}
	name := r.PathValue("name")
	return s.blocking(w, r, func(ws memdb.WatchSet) (any, uint64, error) {
		idx := s.maxIndex(tableNodePools, "nodes")
		if _, err := nodePool(st, ws, name); err != nil {
			return nil, 0, err
		}
		nodes, err := s.cfg.State.Nodes(ws, "")
		if err != nil {
			return nil, 0, err
		}
		out := []*api.NodeListStub{}
		for _, n := range nodes {
			if name == api.NodePoolAll || n.NodePool == name {
				out = append(out, n.Stub())
			}
		}
		out, err = listPage(w, r, out, func(n *api.NodeListStub) string { return n.ID })
		return out, idx, err
	})
}

// nodePoolJobs lists the jobs of the pool in the request's namespace
// ("*": all).
func (s *HTTPServer) nodePoolJobs(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	st, err := s.nodePoolState()
	if err != nil {
		return nil, err
	}
	name, ns := r.PathValue("name"), nsParam(r)
	return s.blocking(w, r, func(ws memdb.WatchSet) (any, uint64, error) {
		idx := s.maxIndex(tableNodePools, "jobs", "job_summary")
		if _, err := nodePool(st, ws, name); err != nil {
			return nil, 0, err
		}
		jobs, err := s.cfg.State.Jobs(ws, ns, "")
		if err != nil {
			return nil, 0, err
		}
		jobs = visible(r, jobs, jobNamespace, acl.CapListJobs)
		out := []*api.JobListStub{}
		for _, j := range jobs {
			if name != api.NodePoolAll && j.NodePool != name {
				continue
			}
			sum, err := s.cfg.State.JobSummaryByID(ws, j.Namespace, j.ID)
			if err != nil {
				return nil, 0, err
			}
			out = append(out, j.Stub(sum))
		}
		out, err = listPage(w, r, out, func(j *api.JobListStub) string { return nsKey(j.Namespace, j.ID) })
		return out, idx, err
	})
}

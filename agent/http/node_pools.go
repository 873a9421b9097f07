package http

import (
	"context"
	"fmt"
	nethttp "net/http"

	memdb "github.com/hashicorp/go-memdb"

	"github.com/drover/drover/api"
	"github.com/drover/drover/server/acl"
)

// NodePoolState is the node-pool read side of Store: the built-in pools
// and the stored ones.
type NodePoolState interface {
	NodePools(ws memdb.WatchSet, prefix string) ([]*api.NodePool, error)
	NodePoolByName(ws memdb.WatchSet, name string) (*api.NodePool, error)
}

// NodePoolsBackend is the node-pool write side of the server role.
// Errors wrap api sentinels (ErrBadRequest for a built-in, invalid or
// busy pool, ErrNotFound for an unknown one).
type NodePoolsBackend interface {
	UpsertNodePools(ctx context.Context, pools []*api.NodePool) (uint64, error)
	DeleteNodePool(ctx context.Context, name string) (uint64, error)
}

// tableNodePools is the state table of the stored pools.
const tableNodePools = "node_pools"

// nodePoolHandlers serve /v1/node/pools and /v1/node/pool/{name}/...
type nodePoolHandlers struct {
	s *HTTPServer
	b NodePoolsBackend
}

func (h *nodePoolHandlers) ready() error {
	return h.s.need(h.b != nil, "this server cannot change node pools")
}

func (h *nodePoolHandlers) list(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	prefix := r.URL.Query().Get("prefix")
	return h.s.blocking(w, r, func(st Store, ws memdb.WatchSet) (any, uint64, error) {
		idx := maxIndex(st, tableNodePools)
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

func (h *nodePoolHandlers) get(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	return h.s.blocking(w, r, func(st Store, ws memdb.WatchSet) (any, uint64, error) {
		p, err := nodePool(st, ws, r.PathValue("name"))
		return p, maxIndex(st, tableNodePools), err
	})
}

// upsert takes one pool (Nomad's body) and answers the Raft index.
func (h *nodePoolHandlers) upsert(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	if err := h.ready(); err != nil {
		return nil, err
	}
	var p api.NodePool
	if err := decodeBody(r, &p); err != nil {
		return nil, err
	}
	idx, err := h.b.UpsertNodePools(r.Context(), []*api.NodePool{&p})
	if err != nil {
		return nil, err
	}
	h.s.setMeta(w, idx)
	return nil, nil
}

func (h *nodePoolHandlers) delete(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	if err := h.ready(); err != nil {
		return nil, err
	}
	idx, err := h.b.DeleteNodePool(r.Context(), r.PathValue("name"))
	if err != nil {
		return nil, err
	}
	h.s.setMeta(w, idx)
	return nil, nil
}

// nodes lists the pool's nodes ("all": every node).
func (h *nodePoolHandlers) nodes(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	name := r.PathValue("name")
	return h.s.blocking(w, r, func(st Store, ws memdb.WatchSet) (any, uint64, error) {
		idx := maxIndex(st, tableNodePools, "nodes")
		if _, err := nodePool(st, ws, name); err != nil {
			return nil, 0, err
		}
		nodes, err := st.Nodes(ws, "")
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

// jobs lists the jobs of the pool in the request's namespace ("*": all).
func (h *nodePoolHandlers) jobs(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	name, ns := r.PathValue("name"), nsParam(r)
	return h.s.blocking(w, r, func(st Store, ws memdb.WatchSet) (any, uint64, error) {
		idx := maxIndex(st, tableNodePools, "jobs", "job_summary")
		if _, err := nodePool(st, ws, name); err != nil {
			return nil, 0, err
		}
		jobs, err := st.Jobs(ws, ns, "")
		if err != nil {
			return nil, 0, err
		}
		jobs = visible(r, jobs, jobNamespace, acl.CapListJobs)
		out := []*api.JobListStub{}
		for _, j := range jobs {
			if name != api.NodePoolAll && j.NodePool != name {
				continue
			}
			sum, err := st.JobSummaryByID(ws, j.Namespace, j.ID)
			if err != nil {
				return nil, 0, err
			}
			out = append(out, j.Stub(sum))
		}
		out, err = listPage(w, r, out, func(j *api.JobListStub) string { return nsKey(j.Namespace, j.ID) })
		return out, idx, err
	})
}

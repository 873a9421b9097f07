package http

import (
	"context"
	"errors"
	"fmt"
	nethttp "net/http"

	memdb "github.com/hashicorp/go-memdb"

	"github.com/drover/drover/api"
	"github.com/drover/drover/server/acl"
)

// allNamespaces in ?namespace= lists every namespace.
const allNamespaces = "*"

func asAPIError(err error, target **api.Error) bool { return errors.As(err, target) }

// NodeState is the node read side of Store.
type NodeState interface {
	NodeByID(ws memdb.WatchSet, id string) (*api.Node, error)
	Nodes(ws memdb.WatchSet, prefix string) ([]*api.Node, error)
	// NodeAllocsByID returns each ID's alloc when it is on nodeID, else
	// nil, in ids' order.
	NodeAllocsByID(nodeID string, ids []string) ([]*api.Allocation, error)
	// NodeAllocIndex is the last index at which the servers changed an
	// alloc of the node (0: never); a client's own status reports do not
	// move it.
	NodeAllocIndex(ws memdb.WatchSet, nodeID string) (uint64, error)
}

// NodesBackend is the node write side of the server role: the client
// protocol (register, heartbeat, alloc updates) and operators' drain,
// eligibility and introductions. Errors wrap api sentinels.
type NodesBackend interface {
	RegisterNode(ctx context.Context, n *api.Node, intro api.NodeIntro) (*api.NodeRegisterResponse, error)
	// CreateNodeIntro signs an introduction token for new nodes.
	CreateNodeIntro(ctx context.Context, req *api.NodeIntroRequest) (*api.NodeIntroResponse, error)
	HeartbeatNode(ctx context.Context, id, secret string, req *api.NodeHeartbeatRequest) (*api.NodeRegisterResponse, error)
	UpdateAllocsFromClient(ctx context.Context, nodeID, secret string, allocs []*api.Allocation) (uint64, error)
	UpdateNodeDrain(ctx context.Context, req *api.NodeUpdateDrainRequest) (*api.NodeUpdateResponse, error)
	UpdateNodeEligibility(ctx context.Context, req *api.NodeUpdateEligibilityRequest) (*api.NodeUpdateResponse, error)
	ApplyNodeMIG(ctx context.Context, req *api.NodeMIGApplyRequest) (*api.NodeMIGApplyResponse, error)
}

// nodeHandlers serve /v1/nodes and /v1/node/{id}/... (pools, services
// and identities have their own).
type nodeHandlers struct {
	s *HTTPServer
	b NodesBackend
}

func (h *nodeHandlers) ready() error {
	return h.s.need(h.b != nil, "node writes are not available on this agent")
}

func (h *nodeHandlers) list(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	prefix := r.URL.Query().Get("prefix")
	return h.s.blocking(w, r, func(st Store, ws memdb.WatchSet) (any, uint64, error) {
		idx := maxIndex(st, "nodes")
		nodes, err := st.Nodes(ws, prefix)
		if err != nil {
			return nil, 0, err
		}
		out := make([]*api.NodeListStub, 0, len(nodes))
		for _, n := range nodes {
			out = append(out, n.Stub())
		}
		out, err = listPage(w, r, out, func(n *api.NodeListStub) string { return n.ID })
		return out, idx, err
	})
}

// redactNode hides the node's secret from API readers.
func redactNode(n *api.Node) *api.Node {
	if n.SecretID == "" {
		return n
	}
	c := *n
	c.SecretID = ""
	return &c
}

func (h *nodeHandlers) get(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	id := r.PathValue("id")
	return h.s.blocking(w, r, func(st Store, ws memdb.WatchSet) (any, uint64, error) {
		idx := maxIndex(st, "nodes")
		n, err := st.NodeByID(ws, id)
		if err != nil {
			return nil, 0, err
		}
		if n == nil {
			return nil, 0, notFound(api.ErrNodeNotFound, "node", id)
		}
		return redactNode(n), objIndex(n.ModifyIndex, idx), nil
	})
}

// sub serves GET /v1/node/{id}/allocations and client-allocs.
func (h *nodeHandlers) sub(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	switch r.PathValue("sub") {
	case "allocations":
		return h.allocs(w, r)
	case "client-allocs":
		return h.clientAllocs(w, r)
	case "client-mig":
		return h.clientMIG(w, r)
	}
	return nil, api.Errorf(api.ErrNotFound, "no endpoint GET "+r.URL.Path)
}

// allocsOfNode is the allocs of a node that exists (ErrNodeNotFound
// otherwise) with the index of the nodes and allocs tables, watched in ws.
func allocsOfNode(st Store, ws memdb.WatchSet, id string) ([]*api.Allocation, uint64, error) {
	idx := maxIndex(st, "nodes", "allocs")
	if _, err := existingNode(st, ws, id); err != nil {
		return nil, 0, err
	}
	allocs, err := st.AllocsByNode(ws, id)
	return allocs, idx, err
}

// existingNode is the node, or ErrNodeNotFound, watched in ws.
func existingNode(st NodeState, ws memdb.WatchSet, id string) (*api.Node, error) {
	n, err := st.NodeByID(ws, id)
	if err == nil && n == nil {
		err = notFound(api.ErrNodeNotFound, "node", id)
	}
	return n, err
}

// nodeClientAllocs answers a node's alloc IDs with their AllocModifyIndex
// (api.NodeClientAllocsResponse), blocking until the servers change one.
//
// Its index is the node's own: the last index at which the servers
// changed one of its allocs (state.TableNodeAllocIndex, which moves with
// every AllocModifyIndex; the node's ModifyIndex while none ever had
// one), and the poll watches only that and the node. A status the client
// reported, or a write to another node's allocs, so neither ends nor
// wakes the client's long poll. A garbage-collected alloc (always a
// finished one) drops off the list at the next answer, as in Nomad.
func (h *nodeHandlers) clientAllocs(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	id := r.PathValue("id")
	return h.s.blocking(w, r, func(st Store, ws memdb.WatchSet) (any, uint64, error) {
		n, err := existingNode(st, ws, id)
		if err != nil {
			return nil, 0, err
		}
		idx, err := st.NodeAllocIndex(ws, id)
		if err != nil {
			return nil, 0, err
		}
		if idx == 0 {
			idx = n.ModifyIndex
		}
		// Read only when answering: a wake-up that answers nothing (the
		// node changed, not its allocs) lists nothing.
		return lazyAnswer(func() (any, error) {
			allocs, err := h.s.state(nil).AllocsByNode(nil, id)
			if err != nil {
				return nil, err
			}
			out := &api.NodeClientAllocsResponse{Allocs: make(map[string]uint64, len(allocs)), Index: idx}
			for _, a := range allocs {
				out.Allocs[a.ID] = a.AllocModifyIndex
			}
			return out, nil
		}), idx, nil
	})
}

// fetchIndexWait bounds a fetch's wait for its MinIndex (a test shortens it).
var fetchIndexWait = api.MaxFetchIndexWait

// waitIndex waits until the state has applied index (0: no wait), up to
// fetchIndexWait. A store replaced meanwhile (a snapshot restore) is
// waited on in its turn.
func (h *nodeHandlers) waitIndex(r *nethttp.Request, index uint64) error {
	if index == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(r.Context(), fetchIndexWait)
	defer cancel()
	for {
		st, abandoned := h.s.role.State.CurrentState()
		err := st.WaitIndex(ctx, index)
		if err == nil {
			return nil
		}
		if closed(abandoned) && ctx.Err() == nil {
			continue
		}
		if r.Context().Err() != nil {
			return api.Errorf(api.ErrTimeout, "client went away")
		}
		return api.Errorf(api.ErrUnavailable, fmt.Sprintf("this server has not applied index %d within %s; retry", index, fetchIndexWait))
	}
}

// closed reports whether ch is closed (it never carries values).
func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// fetchAllocs serves POST /v1/node/{id}/allocations/fetch: the named
// allocs of that node, in full or, asked Compact, each job once and no
// placement metrics.
func (h *nodeHandlers) fetchAllocs(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	if err := h.s.need(h.b != nil && h.s.role.State != nil, "node allocations are not available on this agent"); err != nil {
		return nil, err
	}
	var req api.NodeAllocFetchRequest
	if err := decodeClientBody(r, &req); err != nil {
		return nil, err
	}
	if len(req.AllocIDs) > api.MaxAllocFetch {
		return nil, api.Errorf(api.ErrBadRequest, fmt.Sprintf("at most %d AllocIDs per fetch", api.MaxAllocFetch))
	}
	id := r.PathValue("id")
	if err := h.waitIndex(r, req.MinIndex); err != nil {
		return nil, err
	}
	st := h.s.state(nil)
	idx := maxIndex(st, "nodes", "allocs")
	out := &api.NodeAllocFetchResponse{Allocs: make([]*api.Allocation, 0, len(req.AllocIDs)), Index: idx}
	type jobKey struct {
		ns, id string
		index  uint64
	}
	var jobs map[jobKey]int
	if req.Compact {
		jobs = map[jobKey]int{}
		out.JobIndexes = make([]int, 0, len(req.AllocIDs))
	}
	found, err := st.NodeAllocsByID(id, req.AllocIDs)
	if err != nil {
		return nil, err
	}
	for _, a := range found {
		if a == nil { // none, or another node's: not this node's to read
			continue
		}
		if req.Compact {
			c := *a // the stored alloc is shared: never modified
			c.Job, c.Metrics = nil, nil
			j := -1
			if a.Job != nil {
				k := jobKey{a.Job.Namespace, a.Job.ID, a.Job.JobModifyIndex}
				var seen bool
				if j, seen = jobs[k]; !seen {
					j = len(out.Jobs)
					jobs[k] = j
					out.Jobs = append(out.Jobs, a.Job)
				}
			}
			out.JobIndexes = append(out.JobIndexes, j)
			a = &c
		}
		out.Allocs = append(out.Allocs, a)
	}
	h.s.setMeta(w, idx)
	return out, nil
}

func (h *nodeHandlers) allocs(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	id := r.PathValue("id")
	return h.s.blocking(w, r, func(st Store, ws memdb.WatchSet) (any, uint64, error) {
		allocs, idx, err := allocsOfNode(st, ws, id)
		if err != nil {
			return nil, 0, err
		}
		// Node read shows the node, not its tenants' allocs: only those of
		// namespaces the token reads jobs in (as Nomad).
		allocs = visible(r, allocs, func(a *api.Allocation) string { return a.Namespace }, acl.CapReadJob)
		if allocs == nil {
			allocs = []*api.Allocation{}
		}
		return allocs, idx, nil
	})
}

// decodeNodeBody decodes a node write's body into req and checks the
// NodeID it names (nodeID, a field of req) against the path's; it
// returns the path's ID.
func decodeNodeBody(r *nethttp.Request, req any, nodeID *string) (string, error) {
	if err := decodeBody(r, req); err != nil {
		return "", err
	}
	id := r.PathValue("id")
	if *nodeID != "" && *nodeID != id {
		return "", api.Errorf(api.ErrBadRequest, fmt.Sprintf("NodeID %q in the body does not match %q in the path", *nodeID, id))
	}
	return id, nil
}

func (h *nodeHandlers) drain(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	if err := h.ready(); err != nil {
		return nil, err
	}
	var req api.NodeUpdateDrainRequest
	id, err := decodeNodeBody(r, &req, &req.NodeID)
	if err != nil {
		return nil, err
	}
	req.NodeID = id
	resp, err := h.b.UpdateNodeDrain(r.Context(), &req)
	if err != nil {
		return nil, fmt.Errorf("drain node %q: %w", id, err)
	}
	return resp, nil
}

func (h *nodeHandlers) eligibility(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	if err := h.ready(); err != nil {
		return nil, err
	}
	var req api.NodeUpdateEligibilityRequest
	id, err := decodeNodeBody(r, &req, &req.NodeID)
	if err != nil {
		return nil, err
	}
	if req.Eligibility != api.NodeSchedulingEligible && req.Eligibility != api.NodeSchedulingIneligible {
		return nil, api.Errorf(api.ErrBadRequest, fmt.Sprintf("Eligibility %q: want %q or %q", req.Eligibility, api.NodeSchedulingEligible, api.NodeSchedulingIneligible))
	}
	req.NodeID = id
	resp, err := h.b.UpdateNodeEligibility(r.Context(), &req)
	if err != nil {
		return nil, fmt.Errorf("set eligibility of node %q: %w", id, err)
	}
	return resp, nil
}

func (h *nodeHandlers) register(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	if err := h.ready(); err != nil {
		return nil, err
	}
	var req api.NodeRegisterRequest
	if err := decodeClientBody(r, &req); err != nil {
		return nil, err
	}
	if req.Node == nil {
		return nil, api.Errorf(api.ErrBadRequest, `request body must be {"Node":{...}}: Node missing`)
	}
	if req.Node.ID == "" || req.Node.SecretID == "" {
		return nil, api.Errorf(api.ErrBadRequest, "Node.ID and Node.SecretID are required")
	}
	if err := h.s.checkNodeAddr(r.Context(), r, req.Node); err != nil {
		return nil, err
	}
	intro := api.NodeIntro{Token: req.IntroToken, Certified: h.s.peerOf(r).certified}
	resp, err := h.b.RegisterNode(r.Context(), req.Node, intro)
	if err != nil {
		return nil, fmt.Errorf("register node %q: %w", req.Node.ID, err)
	}
	return resp, nil
}

// intro serves PUT /v1/node/intro: an introduction token for new
// nodes (node write, as Nomad's node intro create).
func (h *nodeHandlers) intro(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	if err := h.ready(); err != nil {
		return nil, err
	}
	var req api.NodeIntroRequest
	if r.ContentLength != 0 {
		if err := decodeBody(r, &req); err != nil {
			return nil, err
		}
	}
	return h.b.CreateNodeIntro(r.Context(), &req)
}

func (h *nodeHandlers) heartbeat(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	if err := h.ready(); err != nil {
		return nil, err
	}
	var req api.NodeHeartbeatRequest
	if r.ContentLength != 0 {
		if err := decodeClientBody(r, &req); err != nil {
			return nil, err
		}
	}
	id := r.PathValue("id")
	resp, err := h.b.HeartbeatNode(r.Context(), id, r.Header.Get(api.NodeSecretHeader), &req)
	if err != nil {
		return nil, fmt.Errorf("heartbeat of node %q: %w", id, err)
	}
	return resp, nil
}

func (h *nodeHandlers) updateAllocs(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	if err := h.ready(); err != nil {
		return nil, err
	}
	var req api.NodeAllocUpdateRequest
	if err := decodeClientBody(r, &req); err != nil {
		return nil, err
	}
	id := r.PathValue("id")
	for i, a := range req.Allocs {
		if a == nil || a.ID == "" {
			return nil, api.Errorf(api.ErrBadRequest, fmt.Sprintf("Allocs[%d]: ID is required", i))
		}
	}
	idx, err := h.b.UpdateAllocsFromClient(r.Context(), id, r.Header.Get(api.NodeSecretHeader), req.Allocs)
	if err != nil {
		return nil, fmt.Errorf("update allocations of node %q: %w", id, err)
	}
	return map[string]uint64{"Index": idx}, nil
}

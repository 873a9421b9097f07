package http

import (
	"context"
	"fmt"
	nethttp "net/http"
	"strings"

	memdb "github.com/hashicorp/go-memdb"

	"github.com/drover/drover/api"
	"github.com/drover/drover/server/acl"
)

// AllocState is the alloc read side of Store.
type AllocState interface {
	AllocByID(ws memdb.WatchSet, id string) (*api.Allocation, error)
	AllocsByIDPrefix(ws memdb.WatchSet, ns, prefix string) ([]*api.Allocation, error)
	Allocs(ws memdb.WatchSet, ns, prefix string) ([]*api.Allocation, error)
	AllocsByJob(ws memdb.WatchSet, ns, jobID string, all bool) ([]*api.Allocation, error)
	AllocsByNode(ws memdb.WatchSet, nodeID string) ([]*api.Allocation, error)
	AllocsByEval(ws memdb.WatchSet, evalID string) ([]*api.Allocation, error)
}

// AllocsBackend is the alloc write side of the server role.
type AllocsBackend interface {
	StopAlloc(ctx context.Context, id string) (*api.AllocStopResponse, error)
}

// EvalState is the evaluation read side of Store.
type EvalState interface {
	EvalByID(ws memdb.WatchSet, id string) (*api.Evaluation, error)
	EvalsByIDPrefix(ws memdb.WatchSet, ns, prefix string) ([]*api.Evaluation, error)
	Evals(ws memdb.WatchSet, ns, prefix string) ([]*api.Evaluation, error)
	EvalsByJob(ws memdb.WatchSet, ns, jobID string) ([]*api.Evaluation, error)
}

// allocHandlers serve /v1/allocations and /v1/allocation/{id}.
type allocHandlers struct {
	s *HTTPServer
	b AllocsBackend
}

func (h *allocHandlers) list(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	ns, prefix := nsParam(r), r.URL.Query().Get("prefix")
	return h.s.blocking(w, r, func(st Store, ws memdb.WatchSet) (any, uint64, error) {
		idx := maxIndex(st, "allocs")
		allocs, err := st.Allocs(ws, ns, prefix)
		if err != nil {
			return nil, 0, err
		}
		allocs = visible(r, allocs, func(a *api.Allocation) string { return a.Namespace }, acl.CapReadJob)
		out, err := listPage(w, r, stubs(allocs), func(a *api.AllocListStub) string { return a.ID })
		return out, idx, err
	})
}

// uuidLen is the length of a full ID; shorter ones are prefixes.
const uuidLen = 36

func (h *allocHandlers) get(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	id := r.PathValue("id")
	return h.s.blocking(w, r, func(st Store, ws memdb.WatchSet) (any, uint64, error) {
		idx := maxIndex(st, "allocs")
		a, err := lookupAlloc(st, ws, r, id)
		if err != nil {
			return nil, 0, err
		}
		return a, objIndex(a.ModifyIndex, idx), nil
	})
}

// lookupAlloc finds an alloc by ID or unambiguous prefix (read-job in
// its namespace).
func lookupAlloc(st AllocState, ws memdb.WatchSet, r *nethttp.Request, id string) (*api.Allocation, error) {
	return lookupAllocFor(st, ws, r, id, acl.CapReadJob)
}

// lookupAllocFor is lookupAlloc for an action that needs capability c in
// the alloc's namespace (read-logs for its logs, ...).
func lookupAllocFor(st AllocState, ws memdb.WatchSet, r *nethttp.Request, id, c string) (*api.Allocation, error) {
	a, err := st.AllocByID(ws, id)
	if err != nil {
		return nil, err
	}
	if a != nil {
		// An alloc is read in its own namespace, whatever the query says.
		if err := allowObject(r, a.Namespace, c); err != nil {
			return nil, err
		}
		return a, nil
	}
	if len(id) < uuidLen && id != "" {
		ns := r.URL.Query().Get("namespace")
		if ns == "" {
			ns = allNamespaces
		}
		list, err := st.AllocsByIDPrefix(ws, ns, id)
		if err != nil {
			return nil, err
		}
		switch len(list) {
		case 1:
			if err := allowObject(r, list[0].Namespace, c); err != nil {
				return nil, err
			}
			return list[0], nil
		case 0:
		default:
			ids := make([]string, 0, len(list))
			for _, a := range list {
				ids = append(ids, a.ID)
			}
			return nil, api.Errorf(api.ErrBadRequest, fmt.Sprintf("allocation prefix %q is ambiguous: %s", id, strings.Join(ids, ", ")))
		}
	}
	return nil, notFound(api.ErrAllocNotFound, "allocation", id)
}

func (h *allocHandlers) stop(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	if err := h.s.need(h.b != nil && h.s.role.State != nil, "alloc writes are not available on this agent"); err != nil {
		return nil, err
	}
	id := r.PathValue("id")
	a, err := lookupAlloc(h.s.state(nil), nil, r, id)
	if err != nil {
		return nil, err
	}
	if err := allowObject(r, a.Namespace, acl.CapAllocLifecycle); err != nil {
		return nil, err
	}
	resp, err := h.b.StopAlloc(r.Context(), a.ID)
	if err != nil {
		return nil, fmt.Errorf("stop allocation %q: %w", id, err)
	}
	return resp, nil
}

// evalHandlers serve /v1/evaluations and /v1/evaluation/{id}
// (eval_delete.go: the delete).
type evalHandlers struct {
	s *HTTPServer
	b EvalsBackend
}

func (h *evalHandlers) list(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	ns, prefix := nsParam(r), r.URL.Query().Get("prefix")
	return h.s.blocking(w, r, func(st Store, ws memdb.WatchSet) (any, uint64, error) {
		idx := maxIndex(st, "evals")
		evals, err := st.Evals(ws, ns, prefix)
		if err != nil {
			return nil, 0, err
		}
		if evals == nil {
			evals = []*api.Evaluation{}
		}
		evals = visible(r, evals, func(e *api.Evaluation) string { return e.Namespace }, acl.CapReadJob)
		evals, err = listPage(w, r, evals, func(e *api.Evaluation) string { return e.ID })
		return evals, idx, err
	})
}

func lookupEval(st EvalState, ws memdb.WatchSet, r *nethttp.Request, id string) (*api.Evaluation, error) {
	e, err := st.EvalByID(ws, id)
	if err != nil {
		return nil, err
	}
	if e != nil {
		return e, checkObject(r, e.Namespace)
	}
	if len(id) < uuidLen && id != "" {
		ns := r.URL.Query().Get("namespace")
		if ns == "" {
			ns = allNamespaces
		}
		list, err := st.EvalsByIDPrefix(ws, ns, id)
		if err != nil {
			return nil, err
		}
		if len(list) == 1 {
			return list[0], checkObject(r, list[0].Namespace)
		}
		if len(list) > 1 {
			return nil, api.Errorf(api.ErrBadRequest, fmt.Sprintf("evaluation prefix %q is ambiguous (%d matches)", id, len(list)))
		}
	}
	return nil, notFound(api.ErrEvalNotFound, "evaluation", id)
}

func (h *evalHandlers) get(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	id := r.PathValue("id")
	return h.s.blocking(w, r, func(st Store, ws memdb.WatchSet) (any, uint64, error) {
		idx := maxIndex(st, "evals")
		e, err := lookupEval(st, ws, r, id)
		if err != nil {
			return nil, 0, err
		}
		return e, objIndex(e.ModifyIndex, idx), nil
	})
}

func (h *evalHandlers) allocs(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	id := r.PathValue("id")
	return h.s.blocking(w, r, func(st Store, ws memdb.WatchSet) (any, uint64, error) {
		idx := maxIndex(st, "evals", "allocs")
		e, err := lookupEval(st, ws, r, id)
		if err != nil {
			return nil, 0, err
		}
		allocs, err := st.AllocsByEval(ws, e.ID)
		if err != nil {
			return nil, 0, err
		}
		return stubs(allocs), idx, nil
	})
}

package http

import (
	"fmt"
	nethttp "net/http"
	"strings"

	memdb "github.com/hashicorp/go-memdb"

	"github.com/drover/drover/api"
	"github.com/drover/drover/server/acl"
)

func (s *HTTPServer) allocList(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	ns, prefix := nsParam(r), r.URL.Query().Get("prefix")
	return s.blocking(w, r, func(ws memdb.WatchSet) (any, uint64, error) {
		idx := s.maxIndex("allocs")
		allocs, err := s.cfg.State.Allocs(ws, ns, prefix)
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

func (s *HTTPServer) allocGet(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	id := r.PathValue("id")
	return s.blocking(w, r, func(ws memdb.WatchSet) (any, uint64, error) {
		idx := s.maxIndex("allocs")
		a, err := s.lookupAlloc(ws, r, id)
		if err != nil {
			return nil, 0, err
		}
		return a, objIndex(a.ModifyIndex, idx), nil
	})
}

// lookupAlloc finds an alloc by ID or unambiguous prefix (read-job in
// its namespace).
func (s *HTTPServer) lookupAlloc(ws memdb.WatchSet, r *nethttp.Request, id string) (*api.Allocation, error) {
	return s.lookupAllocFor(ws, r, id, acl.CapReadJob)
}

// lookupAllocFor is lookupAlloc for an action that needs capability c in
// the alloc's namespace (read-logs for its logs, ...).
func (s *HTTPServer) lookupAllocFor(ws memdb.WatchSet, r *nethttp.Request, id, c string) (*api.Allocation, error) {
	a, err := s.cfg.State.AllocByID(ws, id)
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
		list, err := s.cfg.State.AllocsByIDPrefix(ws, ns, id)
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

func (s *HTTPServer) allocStop(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	if err := s.needServer(); err != nil {
		return nil, err
	}
	id := r.PathValue("id")
	a, err := s.lookupAlloc(nil, r, id)
	if err != nil {
		return nil, err
	}
	if err := allowObject(r, a.Namespace, acl.CapAllocLifecycle); err != nil {
		return nil, err
	}
	resp, err := s.cfg.Server.StopAlloc(r.Context(), a.ID)
	if err != nil {
		return nil, fmt.Errorf("stop allocation %q: %w", id, err)
	}
	return resp, nil
}

func (s *HTTPServer) evalList(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	ns, prefix := nsParam(r), r.URL.Query().Get("prefix")
	return s.blocking(w, r, func(ws memdb.WatchSet) (any, uint64, error) {
		idx := s.maxIndex("evals")
		evals, err := s.cfg.State.Evals(ws, ns, prefix)
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

func (s *HTTPServer) lookupEval(ws memdb.WatchSet, r *nethttp.Request, id string) (*api.Evaluation, error) {
	e, err := s.cfg.State.EvalByID(ws, id)
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
		list, err := s.cfg.State.EvalsByIDPrefix(ws, ns, id)
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

func (s *HTTPServer) evalGet(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	id := r.PathValue("id")
	return s.blocking(w, r, func(ws memdb.WatchSet) (any, uint64, error) {
		idx := s.maxIndex("evals")
		e, err := s.lookupEval(ws, r, id)
		if err != nil {
			return nil, 0, err
		}
		return e, objIndex(e.ModifyIndex, idx), nil
	})
}

func (s *HTTPServer) evalAllocs(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	id := r.PathValue("id")
	return s.blocking(w, r, func(ws memdb.WatchSet) (any, uint64, error) {
		idx := s.maxIndex("evals", "allocs")
		e, err := s.lookupEval(ws, r, id)
		if err != nil {
			return nil, 0, err
		}
		allocs, err := s.cfg.State.AllocsByEval(ws, e.ID)
		if err != nil {
			return nil, 0, err
		}
		return stubs(allocs), idx, nil
	})
}
